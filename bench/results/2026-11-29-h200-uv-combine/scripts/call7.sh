#!/usr/bin/env bash
# Call 7 (H200): the fused path limited to batches <= 16 (kMlaUvCombineMaxBatch; batch 32 had been neutral to +1.2 µs
# in calls 4 and 6), with a batch-13 case (E = 16). gpu_mla in full and under the other attention kernels (quick),
# memcheck of the split cases; latte-bench --quick, one round, LATTE_MLA_UV_COMBINE=1 / 0, batches 13, 16, 24 (the
# last now unfolded either way).
set -u
t0=$(date +%s)
. "$(dirname "$0")/lib.sh"
build $PWD/build-new . "latte latte-bench gpu_mla" || { tail -30 $OUT/build_build-new.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
cd build-new/tests
timeout 150 ./gpu_mla > $OUT/gpu_mla_full.log 2>&1; echo "gpu_mla full rc $?: $(tail -1 $OUT/gpu_mla_full.log)"; grep FAIL $OUT/gpu_mla_full.log | cut -c1-300 | head -8
grep -E '^h32 b13|^h64 b2 |^h16 b1 len8300' $OUT/gpu_mla_full.log | grep sampled | cut -c1-160
for a in wgmma2 mma; do
  timeout 60 env LATTE_MLA_ATTENTION=$a LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 ./gpu_mla > $OUT/gpu_mla_$a.log 2>&1; echo "gpu_mla $a quick rc $?: $(tail -1 $OUT/gpu_mla_$a.log)"
done
timeout 60 env LATTE_TEST_NO_TUNE=1 LATTE_MLA_GEMM=sm90 "LATTE_TEST_FILTER=split" compute-sanitizer --tool memcheck --error-exitcode 3 ./gpu_mla > $OUT/san_memcheck.log 2>&1
echo "memcheck [split] rc $?: $(grep -E 'ERROR SUMMARY' $OUT/san_memcheck.log) $(tail -1 $OUT/san_memcheck.log)"
cd ../..
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+), combine ([0-9.]+), wuv_output ([0-9.]+).*/\1=\2 (\5|\7)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
for v in 1 0; do
  [ $(( $(date +%s) - t0 )) -gt 500 ] && break
  env LATTE_MLA_UV_COMBINE=$v LATTE_BENCH_LENS=512,2048,4096 timeout 100 build-new/bench/latte-bench --only mla --quick --batch 13,16,24 --json $OUT/bench_$v.json > $OUT/bench_$v.log 2>&1
  echo "UV_COMBINE=$v: $(fmt $OUT/bench_$v.log)"
done
grep -h 'attention at the tuned' $OUT/bench_1.log | cut -c1-200
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
