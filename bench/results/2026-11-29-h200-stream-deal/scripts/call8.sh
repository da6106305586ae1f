#!/usr/bin/env bash
# Call 8 (H200): the final tree (the LPT rule at 1/32): gpu_attention (all cases), gpu_mla quick and tuned.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"  # build
build $PWD/build-gpu . "latte gpu_mla gpu_attention" || { tail -20 $OUT/build_*.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 60 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-gpu/tests && LATTE_TEST_FILTER=tuned timeout 60 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep FAIL $OUT/gpu_mla_tuned.log | head -5 )
( cd build-gpu/tests && timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|busiest" $OUT/gpu_attention.log | cut -c1-250 | head -10 )
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
