#!/usr/bin/env bash
# Call 4 (H200): version 3 of the fused kernel (E >= 4: 16-byte loads; at batches 1-2 the idle warps take parts of a
# slice's splits) against the combine kernel + the tuned W_UV, one release build, LATTE_MLA_UV_COMBINE=1 / 0. gpu_mla
# (quick, tuned, the unfolded cases), memcheck / racecheck / initcheck of a batch-1 and a batch-8 split case on latte's
# own kernels; latte-bench --quick, two interleaved rounds: batches 1, 2, 3, 4, 8, 16, 32 at 512, 2048, 4096 and mixed.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"
build $PWD/build-new . "latte latte-bench gpu_mla" || { tail -30 $OUT/build_build-new.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
cd build-new/tests
timeout 90 env LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | cut -c1-300 | head -8
timeout 90 env LATTE_TEST_FILTER=tuned ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep FAIL $OUT/gpu_mla_tuned.log | cut -c1-300 | head -8
grep -A12 'r1 b3 tuned, split attention: tuned' $OUT/gpu_mla_tuned.log | grep -E 'attention at|w_uv' | cut -c1-220
timeout 90 env LATTE_TEST_FILTER=unfolded ./gpu_mla > $OUT/gpu_mla_unfolded.log 2>&1; echo "gpu_mla unfolded rc $?: $(tail -1 $OUT/gpu_mla_unfolded.log)"; grep FAIL $OUT/gpu_mla_unfolded.log | cut -c1-300 | head -5
for tool in memcheck racecheck initcheck; do
  for f in "h16 b8 maxlen 4000 split" "h16 b1 x0.1"; do
    timeout 100 env LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 LATTE_MLA_GEMM=sm90 "LATTE_TEST_FILTER=$f" \
      compute-sanitizer --tool $tool --error-exitcode 9 ./gpu_mla > "$OUT/san_${tool}_${f// /_}.log" 2>&1
    echo "$tool $f rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}_${f// /_}.log" | tail -1) $(tail -1 "$OUT/san_${tool}_${f// /_}.log" | cut -c1-100)"
  done
done
cd ../..
echo "checks done $(( $(date +%s) - t0 )) s"
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+), combine ([0-9.]+), wuv_output ([0-9.]+).*/\1=\2 (\5|\7)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
run() {  # run on|off TAG BATCHES [env]
  [ $(( $(date +%s) - t0 )) -gt 540 ] && return
  local v=1; [ $1 = off ] && v=0
  env LATTE_MLA_UV_COMBINE=$v ${4:-X=1} timeout 100 build-new/bench/latte-bench --only mla --quick --batch $3 --json $OUT/bench_$1_$2.json > $OUT/bench_$1_$2.log 2>&1
  echo "$1 $2: $(fmt $OUT/bench_$1_$2.log)"
}
for r in 1 2; do
  for v in on off; do
    run $v small_r$r 1,2,3,4,8,16,32 LATTE_BENCH_LENS=512,2048,4096
  done
done
grep -h -A1 'attention at the tuned' $OUT/bench_on_small_r1.log | head -12 | cut -c1-200
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
