#!/usr/bin/env bash
# Call 2 (H100): the W_UV kernel that folds the combine in (batches <= 16, split attention) asks the first N KB of each
# row of Wo into L2 before it waits for the attention (LATTE_MLA_WO_PREFETCH_KB=N; 0 = before). gpu_mla's split cases
# with N = 4 (the prefetch is a hint: results must not change), then the layer at batches 1, 4, 8, 16 (512 / 2048 /
# 4096 / mixed), N = 0 / 2 / 4 / 6 interleaved, three rounds.
set -u
t0=$(date +%s)
. "$(dirname "$0")/lib.sh"
build $PWD/build-new . "latte latte-bench gpu_mla" || { tail -30 $OUT/build_build-new.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
(cd build-new/tests && timeout 120 env LATTE_MLA_WO_PREFETCH_KB=4 LATTE_TEST_QUICK=1 "LATTE_TEST_FILTER=split" ./gpu_mla > $OUT/gpu_mla_split.log 2>&1; echo "gpu_mla split (KB 4) rc $?: $(tail -1 $OUT/gpu_mla_split.log)")
for round in 1 2 3; do
  for n in 0 2 4 6; do
    [ $(( $(date +%s) - t0 )) -gt 500 ] && break 2
    env LATTE_MLA_WO_PREFETCH_KB=$n LATTE_BENCH_LENS=512,2048,4096 timeout 90 build-new/bench/latte-bench --only mla --quick --batch 1,4,8,16 --json $OUT/ab_r${round}_$n.json > $OUT/ab_r${round}_$n.log 2>&1
    echo "round $round KB=$n rc $?: $(fmt $OUT/ab_r${round}_$n.log)"
  done
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log ab_*.json && rm -f *.log ab_*.json
