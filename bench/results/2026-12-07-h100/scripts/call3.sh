#!/usr/bin/env bash
# Call 3 (H100): call 2 with the prefetch at the end of each Wo row (LATTE_MLA_WO_PREFETCH_KB=-N: the last N KB), in case
# cuBLASLt's output projection reads its k-columns from the end; N = 0 / 4 / -4 / -8, two rounds.
# gpu_mla's split cases with N = -4 (results must not change), then the layer at batches 1, 4, 8, 16 (512 / 2048 / 4096 /
# mixed).
set -u
t0=$(date +%s)
. "$(dirname "$0")/lib.sh"
build $PWD/build-new . "latte latte-bench gpu_mla" || { tail -30 $OUT/build_build-new.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
(cd build-new/tests && timeout 120 env LATTE_MLA_WO_PREFETCH_KB=-4 LATTE_TEST_QUICK=1 "LATTE_TEST_FILTER=split" ./gpu_mla > $OUT/gpu_mla_split.log 2>&1; echo "gpu_mla split (KB -4) rc $?: $(tail -1 $OUT/gpu_mla_split.log)")
for round in 1 2; do
  for n in 0 4 -4 -8; do
    [ $(( $(date +%s) - t0 )) -gt 500 ] && break 2
    env LATTE_MLA_WO_PREFETCH_KB=$n LATTE_BENCH_LENS=512,2048,4096 timeout 90 build-new/bench/latte-bench --only mla --quick --batch 1,4,8,16 --json $OUT/ab_r${round}_$n.json > $OUT/ab_r${round}_$n.log 2>&1
    echo "round $round KB=$n rc $?: $(fmt $OUT/ab_r${round}_$n.log)"
  done
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log ab_*.json && rm -f *.log ab_*.json
