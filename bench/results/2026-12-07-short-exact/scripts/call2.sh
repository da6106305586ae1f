#!/usr/bin/env bash
# Call 2 (same warm H100 as call 1): every GPU test program on this tree (gpu_check's build + gpu-test steps, build-gpu
# kept from call 1), then the down gemv's stream with parts left out (bench/results/2026-12-07-down-gemv/dev/
# gemv_diag_not_run.patch on a copy of the tree, a dev build of gpu_gemv, LATTE_GEMV_DIAG).
set -u
t0=$(date +%s)
LIMIT=${LIMIT:-420}
left() { [ $(( $(date +%s) - t0 )) -lt $(( LIMIT - ${1:-0} )) ]; }
rm -rf /tmp/diag && mkdir -p /tmp/diag && cp -r CMakeLists.txt cmake include src tests bench python scripts examples Makefile /tmp/diag/ &&
  (cd /tmp/diag && patch -p1 -s < bench/results/2026-12-07-down-gemv/dev/gemv_diag_not_run.patch) || echo "diag patch failed"
(cmake -S /tmp/diag -B /tmp/diag/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
   -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_diag.log 2>&1 && cmake --build /tmp/diag/b -j6 --target gpu_gemv >> $OUT/build_diag.log 2>&1) & pd=$!
GPU_CHECK_STEPS=info,build,gpu-test GPU_CHECK_BUILD=build-gpu GPU_CHECK_BUDGET_S=${CHECK_BUDGET:-330} \
  scripts/gpu_check.sh $OUT/check > $OUT/check_stdout.log 2>&1
echo "gpu_check rc $? at $(( $(date +%s) - t0 )) s"; cat $OUT/check/summary.txt
grep -E '^(gpu_[a-z0-9_]+:|FAIL)' $OUT/check/tests.log | cut -c1-200 | head -30
wait $pd && echo "diag built" || tail -20 $OUT/build_diag.log
left 30 && for d in 0 2 4 6 8 14; do left 10 && (cd /tmp/diag/b/tests && LATTE_GEMV_DIAG=$d LATTE_GEMM_TIMING=1 timeout 30 ./gpu_gemv 2>&1 |
    grep -E '^timing' | grep -E 'batch +(1|4|8|16)[: ]' | sed "s/^/diag $d: /"); done | tee $OUT/gemv_diag.log
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && cp check/summary.txt . && tar czf check.tgz check check_stdout.log build_diag.log && rm -rf check check_stdout.log build_diag.log
ls $OUT
