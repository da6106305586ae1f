#!/usr/bin/env bash
# Call 8 (H200): the tree after the smem opt-in refactor (smem_optin.cuh: host code of every kernel's launcher).
# scripts/gpu_check.sh steps build and gpu-test (every GPU test program, gpu_mla under each attention kernel, the
# QK-norm variants).
set -u
GPU_CHECK_STEPS=info,build,gpu-test GPU_CHECK_BUDGET_S=400 bash scripts/gpu_check.sh $OUT > $OUT/gpu_check_stdout.log 2>&1
tail -8 $OUT/summary.txt
grep -E "Test +#|passed, [0-9]+ failed" $OUT/tests.log | sort | uniq -c | head -20
cd $OUT && tar czf logs.tgz *.log *.txt 2>/dev/null; rm -f *.log
