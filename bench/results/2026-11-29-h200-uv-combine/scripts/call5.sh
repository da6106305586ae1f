#!/usr/bin/env bash
# Call 5 (H200): the committed tree (8ff5bbe: W_UV with the split attention's combine folded in). scripts/gpu_check.sh
# steps info, build, gpu-test, oracle, bench (every GPU test program, gpu_mla under each attention kernel, the QK-norm
# variants, the oracle's cross-check and PyTorch timings, latte-bench's full table at batch 128); then the new gpu_mla
# cases (batch 2, 130 splits) under compute-sanitizer memcheck and initcheck.
set -u
t0=$(date +%s)
GPU_CHECK_STEPS=info,build,gpu-test,oracle,bench GPU_CHECK_BUDGET_S=480 bash scripts/gpu_check.sh $OUT > $OUT/gpu_check_stdout.log 2>&1
tail -10 $OUT/summary.txt
grep -E "^(FAIL|gpu_mla|gpu_attention|gpu_q|gpu_gemm|gpu_wgmma|gpu_rel)|passed|failed" $OUT/tests.log | grep -v '^ok' | tail -20
grep -E "split: batch|b2 lens" $OUT/tests.log | head -6 | cut -c1-200
grep -E "^  (len|lens|b[0-9])" $OUT/bench.log | head -12
echo "at $(( $(date +%s) - t0 )) s"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck initcheck; do
  [ $(( $(date +%s) - t0 )) -gt 540 ] && break
  ( cd build-gpu/tests && LATTE_TEST_NO_TUNE=1 LATTE_MLA_GEMM=sm90 LATTE_TEST_FILTER=" split" timeout 40 $SAN --tool $tool --error-exitcode 3 ./gpu_mla > $OUT/san_mla_$tool.log 2>&1
    echo "gpu_mla [split] $tool rc $?: $(grep -E 'ERROR SUMMARY' $OUT/san_mla_$tool.log) $(tail -1 $OUT/san_mla_$tool.log)" )
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log *.json *.txt 2>/dev/null; rm -f *.log
