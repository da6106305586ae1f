#!/usr/bin/env bash
# Call 5 (H200): the committed tree (the run-time pieces for static splits of 2-8). scripts/gpu_check.sh steps info,
# build, gpu-test, pytest (every GPU test program, gpu_mla under each attention kernel, the QK-norm variants, pytest),
# then compute-sanitizer memcheck and initcheck over gpu_attention's run-time pieces cases and memcheck over gpu_mla's
# (quick) new pieces case.
set -u
t0=$(date +%s)
GPU_CHECK_STEPS=info,build,gpu-test,pytest GPU_CHECK_BUDGET_S=300 bash scripts/gpu_check.sh $OUT > $OUT/gpu_check_stdout.log 2>&1
tail -14 $OUT/summary.txt
grep -E "^(FAIL|gpu_mla|gpu_attention|gpu_q|gpu_gemm|gpu_wgmma|gpu_rel)|passed|failed" $OUT/tests.log | grep -v '^ok' | tail -25
echo "at $(( $(date +%s) - t0 )) s"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
cd build-gpu/tests
for tool in memcheck initcheck; do
  [ $(( $(date +%s) - t0 )) -gt 480 ] && break
  LATTE_TEST_FILTER=run-time timeout 60 $SAN --tool $tool --error-exitcode 3 ./gpu_attention > $OUT/san_attn_$tool.log 2>&1
  echo "gpu_attention [run-time] $tool rc $?: $(grep -E 'ERROR SUMMARY' $OUT/san_attn_$tool.log) $(tail -1 $OUT/san_attn_$tool.log)"
done
if [ $(( $(date +%s) - t0 )) -lt 500 ]; then
  LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 LATTE_TEST_FILTER=pieces timeout 80 $SAN --tool memcheck --error-exitcode 3 ./gpu_mla > $OUT/san_mla_memcheck.log 2>&1
  echo "gpu_mla [pieces] memcheck rc $?: $(grep -E 'ERROR SUMMARY' $OUT/san_mla_memcheck.log) $(tail -1 $OUT/san_mla_memcheck.log)"
fi
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
