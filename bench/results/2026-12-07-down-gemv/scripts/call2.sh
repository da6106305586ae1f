#!/usr/bin/env bash
# Ran as call 2 (H100, the evening session of 2026-12-07, branch down-gemv-v2 at b9398b3; README.md). For branch
# down-gemv-v2: gemv_bf16 v2 (per-warp cp.async rings; one x tile at batches 1-8, the layer's default; two tiles at
# 9-16 behind LATTE_MLA_DOWN_GEMV_ROWS=16) and src/cuda/launch.cuh (the PDL launch setup of four launchers).
# One call, most important first, each step only while time is left (LIMIT s, default 520):
#   1. scripts/gpu_check.sh: build (build-gpu, everything), every GPU test program (gpu_gemv and gpu_mla with the new
#      cases among them), the oracle at batch 128, latte-bench, pytest: the launchers' host code moved, so all of it;
#   2. gpu_gemv's timing table (the down projection alone at batches 1-16, after an L2 flush);
#   3. the layer A/B, latte-bench --quick at batches 1, 2, 4, 8, 12, 16 and 512 / 2048 / 4096 / mixed, variants
#      0 = LATTE_MLA_DOWN_GEMV=0 (cuBLASLt / sm90 as tuned), 1 = the default (the gemv at batches up to 8),
#      r16 = LATTE_MLA_DOWN_GEMV_ROWS=16 (the gemv up to 16), interleaved, up to three rounds (summarize.py: medians);
#   4. the oracle cross-check at batch 8 (the default gemv) and at batch 16 with LATTE_MLA_DOWN_GEMV_ROWS=16.
# Files back (the tool returns 8): summary.txt (gpu_check's table), gpu_gemv.log, ab_summary.txt, ab_summary.json,
# bench.json (gpu_check's latte-bench), check.tgz (gpu_check's logs), logs.tgz (the rest).
set -u
t0=$(date +%s)
LIMIT=${LIMIT:-520}
S=$(cd "$(dirname "$0")" && pwd)
left() { [ $(( $(date +%s) - t0 )) -lt $(( LIMIT - ${1:-0} )) ]; }  # left N: at least N s before LIMIT
. "$S/lib.sh"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader

GPU_CHECK_STEPS=info,build,gpu-test,oracle,bench,pytest GPU_CHECK_BUDGET_S=${CHECK_BUDGET:-300} \
  scripts/gpu_check.sh $OUT/check > $OUT/check_stdout.log 2>&1
echo "gpu_check rc $? at $(( $(date +%s) - t0 )) s"; cat $OUT/check/summary.txt
grep -E '^(gpu_gemv|gpu_mla)|FAIL' $OUT/check/tests.log | head -20
B=build-gpu/bench/latte-bench
[ -x $B ] || { echo "no latte-bench: the build failed"; exit 1; }

(cd build-gpu/tests && LATTE_REQUIRE_GPU=1 LATTE_GEMM_TIMING=1 timeout 40 ./gpu_gemv > $OUT/gpu_gemv.log 2>&1
 echo "gpu_gemv rc $?: $(tail -1 $OUT/gpu_gemv.log)"; grep -E '^timing|FAIL' $OUT/gpu_gemv.log)

ab() {  # one round: every variant in turn
  for v in 0 1 r16; do
    case $v in 0) e="LATTE_MLA_DOWN_GEMV=0";; 1) e="LATTE_MLA_DOWN_GEMV=1";; r16) e="LATTE_MLA_DOWN_GEMV_ROWS=16";; esac
    env $e LATTE_BENCH_LENS=512,2048,4096 timeout 60 $B --only mla --quick --batch 1,2,4,8,12,16 \
      --json $OUT/ab_r$1_$v.json > $OUT/ab_r$1_$v.log 2>&1
    echo "round $1 $e rc $?: $(fmt $OUT/ab_r$1_$v.log)"
  done
}
left 60 && ab 1
left 60 && { LATTE_LIBRARY=$PWD/build-gpu/liblatte.so PYTHONPATH=$PWD/python timeout 60 python3 scripts/oracle_check.py \
  --out $OUT/oracle_b8 --batch 8 --sample 8 --lens 128,512,2048 --no-timing > $OUT/oracle_b8.log 2>&1
  echo "oracle b8 rc $?: $(tail -3 $OUT/oracle_b8.log | tr '\n' ' ')"; }
left 60 && { LATTE_MLA_DOWN_GEMV_ROWS=16 LATTE_LIBRARY=$PWD/build-gpu/liblatte.so PYTHONPATH=$PWD/python timeout 60 \
  python3 scripts/oracle_check.py --out $OUT/oracle_b16 --batch 16 --sample 8 --lens 128,512,2048 --no-timing \
  > $OUT/oracle_b16.log 2>&1; echo "oracle b16 rows16 rc $?: $(tail -3 $OUT/oracle_b16.log | tr '\n' ' ')"; }
left 60 && ab 2
left 60 && ab 3
python3 "$S/summarize.py" $OUT --json $OUT/ab_summary.json | tee $OUT/ab_summary.txt
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && cp check/summary.txt check/bench.json . 2>/dev/null
tar czf check.tgz check check_stdout.log && rm -rf check check_stdout.log
tar czf logs.tgz *.log ab_*.json oracle_b8 oracle_b16 2>/dev/null
rm -rf ab_r*.log ab_r*.json oracle_b8 oracle_b16 oracle_b*.log
ls $OUT
