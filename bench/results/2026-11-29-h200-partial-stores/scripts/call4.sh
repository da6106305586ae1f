#!/usr/bin/env bash
# Call 4 (H200): the committed tree (c09bfbf's library: the combine drops the partials it read). scripts/gpu_check.sh
# steps info, build, gpu-test, oracle, bench (every GPU test program, gpu_mla under each attention kernel, the QK-norm
# variants, the oracle's cross-check and PyTorch timings, latte-bench's full table); then compute-sanitizer memcheck
# over gpu_attention's discarded-partials cases (the combine's discards name only the partials' lines).
set -u
t0=$(date +%s)
GPU_CHECK_STEPS=info,build,gpu-test,oracle,bench GPU_CHECK_BUDGET_S=500 bash scripts/gpu_check.sh $OUT > $OUT/gpu_check_stdout.log 2>&1
tail -10 $OUT/summary.txt
grep -E "^(FAIL|gpu_mla|gpu_attention|gpu_q|gpu_gemm|gpu_wgmma|gpu_rel)|passed|failed" $OUT/tests.log | grep -v '^ok' | tail -20
grep -E "^  (len|lens|b[0-9])" $OUT/bench.log | head -12
echo "at $(( $(date +%s) - t0 )) s"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ $(( $(date +%s) - t0 )) -lt 520 ]; then
  ( cd build-gpu/tests && LATTE_TEST_FILTER="discarded partials" timeout 60 $SAN --tool memcheck --error-exitcode 3 ./gpu_attention > $OUT/san_attn_memcheck.log 2>&1
    echo "gpu_attention [discarded partials] memcheck rc $?: $(grep -E 'ERROR SUMMARY' $OUT/san_attn_memcheck.log) $(tail -1 $OUT/san_attn_memcheck.log)" )
fi
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log *.json *.txt 2>/dev/null; rm -f *.log
