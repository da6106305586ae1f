#!/usr/bin/env bash
# Call 2 (H200): a piece's fp32 partial through the Q region and TMA stores (MlaAttentionParams::partial_by_tma) against
# the base (.carry/base: c09bfbf's files, the partial from the registers). gpu_attention (all cases), gpu_mla
# quick and tuned; latte-bench --quick, two interleaved rounds: batches 1, 8, 32 at 512, 2048, 4096 and mixed;
# 48, 72 and 100 at 1024, 1536, 4096 and mixed; 128.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"
base_copy
build $PWD/build-new . "latte latte-bench gpu_mla gpu_attention" & p1=$!
build /tmp/base/build-base /tmp/base "latte latte-bench" & p2=$!
for p in $p1 $p2; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
( cd build-new/tests && timeout 230 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL" $OUT/gpu_attention.log | cut -c1-250 | head -10; grep -A1 'discarded partials' $OUT/gpu_attention.log | cut -c1-200 )
( cd build-new/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 60 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-new/tests && LATTE_TEST_FILTER=tuned timeout 60 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep FAIL $OUT/gpu_mla_tuned.log | head -5 )
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+), combine ([0-9.]+), wuv_output ([0-9.]+).*/\1=\2 (\5|\7)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
run() {  # run new|base TAG BATCHES [env]
  [ $(( $(date +%s) - t0 )) -gt 560 ] && return
  local bin=build-new/bench/latte-bench
  [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  env ${4:-X=1} timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_$2.json > $OUT/bench_$1_$2.log 2>&1
  echo "$1 $2: $(fmt $OUT/bench_$1_$2.log)"
}
for r in 1 2; do
  for v in new base; do
    run $v small_r$r 1,8,32 LATTE_BENCH_LENS=512,2048,4096
    run $v mid_r$r 48,72,100 LATTE_BENCH_LENS=1024,1536,4096
    run $v b128_r$r 128
  done
done
# racecheck over two piece cases (the staged partial's halves): only if time is left
if [ $(( $(date +%s) - t0 )) -lt 430 ]; then
  ( cd build-new/tests && LATTE_TEST_FILTER="pieces, 48 heads" timeout 80 compute-sanitizer --tool racecheck ./gpu_attention > $OUT/racecheck_48.log 2>&1; echo "racecheck 48 heads rc $?: $(grep -E 'RACECHECK SUMMARY|hazard' $OUT/racecheck_48.log | tail -1)"; grep -E '^(ok|FAIL)' $OUT/racecheck_48.log | cut -c1-120 )
  ( cd build-new/tests && LATTE_TEST_FILTER="batch 32 mixed lengths: run-time pieces" timeout 80 compute-sanitizer --tool racecheck ./gpu_attention > $OUT/racecheck_b32.log 2>&1; echo "racecheck b32 rc $?: $(grep -E 'RACECHECK SUMMARY|hazard' $OUT/racecheck_b32.log | tail -1)"; grep -E '^(ok|FAIL)' $OUT/racecheck_b32.log | cut -c1-120 )
fi
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
