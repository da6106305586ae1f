#!/usr/bin/env bash
# Call 1 (H100, tree 8c08834): scripts/gpu_check.sh (build, every GPU test program, gpu_mla under the three attention
# kernels, the QK-norm variants, the oracle cross-check with the PyTorch peers, latte-bench at batch 128, pytest), then
# the serving batches on the same build: latte-bench --only mla --quick at batches 1, 4, 8, 16, 32, 64 (512 / 2048 /
# 4096 and the mixed lengths), with LATTE_MLA_UV_COMBINE=1 (the default) and 0 at batches 1-16.
set -u
t0=$(date +%s)
GPU_CHECK_STEPS=info,build,gpu-test,oracle,bench,pytest GPU_CHECK_BUDGET_S=430 scripts/gpu_check.sh $OUT/gpu_check > $OUT/gpu_check_stdout.log 2>&1
tail -12 $OUT/gpu_check/summary.txt
echo "gpu_check done at $(( $(date +%s) - t0 )) s"
B=build-gpu/bench/latte-bench
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+), combine ([0-9.]+), wuv_output ([0-9.]+).*/\1=\2 (\5|\7)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
for round in 1 2; do
  for v in 1 0; do
    [ $(( $(date +%s) - t0 )) -gt 540 ] && break 2
    bl="1,4,8,16"; [ $v = 1 ] && [ $round = 1 ] && bl="1,4,8,16,32,64"
    env LATTE_MLA_UV_COMBINE=$v LATTE_BENCH_LENS=512,2048,4096 timeout 90 $B --only mla --quick --batch $bl --json $OUT/serving_r${round}_$v.json > $OUT/serving_r${round}_$v.log 2>&1
    echo "round $round UV_COMBINE=$v rc $?: $(fmt $OUT/serving_r${round}_$v.log)"
  done
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf serving.tgz serving_* && rm -f serving_*
