#!/usr/bin/env bash
# Call 2 of 2026-12-08. Call 1 ran on an H100 and gpu_attention was stopped by its 150 s limit after 12 of 43 checks
# (its single-thread float64 reference; 43 of 43 within the limit on 2026-12-07's H100). The CUDA tests' references now
# run on every host thread (cuda_test_util.cuh's for_each_host_thread) and gpu_attention prints a line at a time:
#   1. build this tree (library, the CUDA test programs), run each with its wall time (gpu_attention in full, limit 300 s);
#   2. on an H200 only: call1.sh (the checks and A/Bs that still have not run on an H200), in the time left.
# Files back: summary lines on stdout; tests.tgz; on an H200 also call1.sh's files.
set -u
t0=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$gpu; host threads $(nproc)"
. bench/results/2026-12-07-short-exact/scripts/lib.sh   # bld
bld $PWD/build-gpu . 16 latte gpu_attention gpu_gemv gpu_gemm_sm90 gpu_q_absorb gpu_wgmma || { tail -30 $OUT/build_build-gpu.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
mkdir -p $OUT/tests
for t in gpu_attention gpu_gemv gpu_gemm_sm90 gpu_q_absorb gpu_wgmma; do
  s=$(date +%s)
  (cd build-gpu/tests && LATTE_REQUIRE_GPU=1 timeout 300 ./$t > $OUT/tests/$t.log 2>&1; echo "$t rc $? in $(( $(date +%s) - s )) s: $(grep -c '^FAIL' $OUT/tests/$t.log) FAIL lines; $(tail -1 $OUT/tests/$t.log | cut -c1-160)")
done
grep -E '^FAIL' $OUT/tests/*.log | head -5
(cd $OUT && tar czf tests.tgz tests && rm -rf tests build_build-gpu.log)
case "$gpu" in
  *H200*) LIMIT=$(( 570 - $(date +%s) + t0 )) bash bench/results/2026-12-08-checks/scripts/call1.sh ;;
esac
echo "total $(( $(date +%s) - t0 )) s"
