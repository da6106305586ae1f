#!/usr/bin/env bash
# Call 6 (H200): what call 5's gpu_check budget cut off: pytest (the Python package over the C ABI, the oracle test).
GPU_CHECK_STEPS=build,pytest GPU_CHECK_BUDGET_S=200 bash scripts/gpu_check.sh $OUT > $OUT/gpu_check_stdout.log 2>&1
tail -6 $OUT/summary.txt
grep -E "passed|failed|error" $OUT/tests.log | tail -5
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
