#!/usr/bin/env bash
# the committed tree on an H100: the whole check (tests, oracle with the few-long cases, bench), then the skewed case
# with the split switched off, for the ratio
set -u
GPU_CHECK_QKNORM_VARIANTS=1 GPU_CHECK_ATTENTION_KERNELS=wgmma3 GPU_CHECK_STEPS=info,build,cpu-test,gpu-test,oracle,bench,pytest GPU_CHECK_BUDGET_S=400 scripts/gpu_check.sh $OUT/g > $OUT/gpu_check.out 2>&1
tail -25 $OUT/g/summary.txt
grep -E "few_long|unequal" $OUT/g/oracle.log | cut -c1-260
grep -E "^mla (len|lens)" $OUT/g/bench.log | cut -c1-250
for r in 1 2; do
  LATTE_MLA_SPLIT_LONG=0 timeout 100 build-gpu/bench/latte-bench --only mla --quick > $OUT/off_$r.log 2>&1
  echo "off r$r: $(grep -E '^mla lens' $OUT/off_$r.log | cut -c1-250)"
  timeout 100 build-gpu/bench/latte-bench --only mla --quick > $OUT/on_$r.log 2>&1
  echo "on r$r: $(grep -E '^mla lens' $OUT/on_$r.log | cut -c1-250)"
done
