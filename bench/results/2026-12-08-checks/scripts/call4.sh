#!/usr/bin/env bash
# Call 4 of 2026-12-08, the session's last ~180 s of device time (calls 2-3 never started): one build of this tree, whose
# gemv has v3 (a warp's x loaded before its first product) and v2's loop behind LATTE_GEMV_X_AHEAD=0.
#   1. build (library, latte-bench, gpu_gemv, gpu_attention); gpu_gemv (v3); gpu_attention (its reference on every
#      host thread, line-buffered: call 1's stopped at its 150 s limit);
#   2. the layer at batches 1, 2, 4, 8 (512 / 2048 and mixed), v2's loop against v3, interleaved rounds while time is
#      left (LIMIT s, default 175); then gpu_gemv under v2's loop and the oracle at batch 8 if time is left.
set -u
t0=$(date +%s)
LIMIT=${LIMIT:-175}
left() { [ $(( $(date +%s) - t0 )) -lt $(( LIMIT - ${1:-0} )) ]; }
. bench/results/2026-12-07-down-gemv/scripts/lib.sh   # fmt
. bench/results/2026-12-07-short-exact/scripts/lib.sh # bld
echo "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); host threads $(nproc)"
bld $PWD/build-gpu . 16 latte latte-bench gpu_gemv gpu_attention || { tail -30 $OUT/build_build-gpu.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
mkdir -p $OUT/tests $OUT/gemv
run_test() {  # run_test NAME LOG [ENV...]: the program's wall time, FAIL lines and last line
  local t=$1 log=$2 s=$(date +%s); shift 2
  (cd build-gpu/tests && env "$@" timeout 150 ./$t > $OUT/tests/$log.log 2>&1; echo "$log rc $? in $(( $(date +%s) - s )) s: $(grep -c '^FAIL' $OUT/tests/$log.log) FAIL lines; $(tail -1 $OUT/tests/$log.log | cut -c1-160)")
}
run_test gpu_gemv gpu_gemv LATTE_REQUIRE_GPU=1
grep -E '^FAIL|FAILED' $OUT/tests/gpu_gemv.log | head -5
run_test gpu_attention gpu_attention LATTE_REQUIRE_GPU=1
grep -E '^FAIL' $OUT/tests/gpu_attention.log | head -5
ab() {
  for v in 0 1; do
    LATTE_GEMV_X_AHEAD=$v LATTE_BENCH_LENS=512,2048 timeout 40 build-gpu/bench/latte-bench --only mla --quick \
      --batch 1,2,4,8 --json $OUT/gemv/ab_r$1_xahead$v.json > $OUT/gemv/ab_r$1_xahead$v.log 2>&1
    echo "round $1 LATTE_GEMV_X_AHEAD=$v rc $? at $(( $(date +%s) - t0 )) s: $(fmt $OUT/gemv/ab_r$1_xahead$v.log)"
  done
}
for r in 1 2 3 4; do left 45 && ab $r; done
python3 bench/results/2026-12-07-short-exact/scripts/summarize.py $OUT/gemv --json $OUT/gemv/ab_summary.json
left 15 && run_test gpu_gemv gpu_gemv_xahead0 LATTE_REQUIRE_GPU=1 LATTE_GEMV_X_AHEAD=0
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf tests.tgz tests && tar czf gemv.tgz gemv && tar czf logs.tgz *.log 2>/dev/null
rm -rf tests gemv *.log
