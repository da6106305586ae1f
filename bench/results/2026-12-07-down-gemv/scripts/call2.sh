#!/usr/bin/env bash
# NEVER STARTED: every start after call 1 was refused or failed (README.md). Written for branch down-gemv-v2.
# Call 2: gemv_bf16 v2 (a per-warp cp.async ring, batches 1-8; the query-side gemv of call 1 removed). The device budget
# left (failed starts) allowed no full scripts/gpu_check.sh, so the steps run most important first, each only while
# time is left: a release build of the library, latte-bench and the two test programs this change touches; gpu_gemv
# (every element, PDL cases) with its timing table; gpu_mla in full (the layer against the CPU backend: the gemv at batches 1-8,
# LATTE_MLA_DOWN_GEMV=0 cases, describe naming it exactly where it runs); the layer A/B, LATTE_MLA_DOWN_GEMV=0 (the tuned
# cuBLASLt / sm90 down projection) against 1 (the default) at batches 1, 2, 4, 8 (and 16, which never takes the gemv),
# 512 / 2048 / 4096 / mixed, one round; the oracle cross-check at batch 8 (the gemv's path: every sequence against the
# oracle's un-absorbed reference); two more A/B rounds. LIMIT (s, default 140): no step starts after it.
set -u
t0=$(date +%s)
LIMIT=${LIMIT:-140}
left() { [ $(( $(date +%s) - t0 )) -lt $LIMIT ]; }
. "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
build $PWD/build-new . "latte latte-bench gpu_mla gpu_gemv" || { tail -30 $OUT/build_build-new.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
(cd build-new/tests && LATTE_REQUIRE_GPU=1 LATTE_GEMM_TIMING=1 timeout 40 ./gpu_gemv > $OUT/gpu_gemv.log 2>&1; echo "gpu_gemv rc $?: $(tail -1 $OUT/gpu_gemv.log)"; grep -E '^timing|FAIL' $OUT/gpu_gemv.log)
B=build-new/bench/latte-bench
ab() {  # one round
  for v in 0 1; do
    env LATTE_MLA_DOWN_GEMV=$v LATTE_BENCH_LENS=512,2048,4096 timeout 40 $B --only mla --quick --batch 1,2,4,8,16 --json $OUT/ab_r$1_$v.json > $OUT/ab_r$1_$v.log 2>&1
    echo "round $1 DOWN_GEMV=$v rc $?: $(fmt $OUT/ab_r$1_$v.log)"
    grep -E '^mla b(1|8) len 2048' $OUT/ab_r$1_$v.log | sed -E 's/.*\| graph: /   graph: /'
  done
}
left && (cd build-new/tests && timeout 90 ./gpu_mla > $OUT/gpu_mla.log 2>&1; echo "gpu_mla rc $?: $(tail -1 $OUT/gpu_mla.log)"; grep -E 'FAIL' $OUT/gpu_mla.log | head -10)
left && ab 1
left && { LATTE_LIBRARY=$PWD/build-new/liblatte.so PYTHONPATH=$PWD/python timeout 60 python3 scripts/oracle_check.py --out $OUT/oracle_b8 --batch 8 --sample 8 --lens 128,512,2048 --no-timing > $OUT/oracle_b8.log 2>&1; echo "oracle b8 rc $?: $(tail -3 $OUT/oracle_b8.log | tr '\n' ' ')"; }
left && ab 2
left && ab 3
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log ab_*.json && rm -f ab_*.log ab_*.json gpu_mla.log build_*.log
