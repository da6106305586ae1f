#!/usr/bin/env bash
# Call 3 (H200): W_UV's weights brought into L2 by the fused query kernel's spare SMs (MlaQAbsorbArgs::l2_prefetch,
# LATTE_MLA_UV_PREFETCH) in one build, on (=1) and off (=0), and the base (.carry/base: c09bfbf's files).
# gpu_q_absorb (all cases), gpu_mla quick and tuned; latte-bench --quick, two interleaved rounds: batches 1, 8, 32 at
# 512, 2048, 4096 and mixed; 48, 72, 100 at 1024, 4096 and mixed; 128.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"
base_copy
build $PWD/build-new . "latte latte-bench gpu_mla gpu_q_absorb" & p1=$!
build /tmp/base/build-base /tmp/base "latte latte-bench" & p2=$!
for p in $p1 $p2; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
( cd build-new/tests && timeout 120 ./gpu_q_absorb > $OUT/gpu_q_absorb.log 2>&1; echo "gpu_q_absorb rc $?: $(tail -1 $OUT/gpu_q_absorb.log)"; grep -E "FAIL|prefetch" $OUT/gpu_q_absorb.log | cut -c1-200 | head -12 )
( cd build-new/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 60 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-new/tests && LATTE_TEST_FILTER=tuned timeout 60 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep FAIL $OUT/gpu_mla_tuned.log | head -5 )
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+), combine ([0-9.]+), wuv_output ([0-9.]+).*/\1=\2 (\4|\5|\7)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
run() {  # run on|off|base TAG BATCHES [env]
  [ $(( $(date +%s) - t0 )) -gt 560 ] && return
  local bin=build-new/bench/latte-bench pf=1
  [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  [ $1 = off ] && pf=0
  env LATTE_MLA_UV_PREFETCH=$pf ${4:-X=1} timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_$2.json > $OUT/bench_$1_$2.log 2>&1
  echo "$1 $2: $(fmt $OUT/bench_$1_$2.log)"
}
for r in 1 2; do
  for v in on off base; do
    run $v small_r$r 1,8,32 LATTE_BENCH_LENS=512,2048,4096
    run $v mid_r$r 48,72,100 LATTE_BENCH_LENS=1024,4096
    run $v b128_r$r 128
  done
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
