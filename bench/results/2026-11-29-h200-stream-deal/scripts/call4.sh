#!/usr/bin/env bash
# Call 4 (H200): the attention alone (tests/gpu_attention, LATTE_ATTN_TIMING=3: read-only L2 flush before each of 15
# launches, medians) at batches 40-128 and lengths 2048 / 4096, the stream deal off and on, with the piece items each
# list dealt: does the deal engage, and does spreading a batch's tiles over every SM shorten the attention alone?
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"  # build
build $PWD/build-gpu . "latte gpu_attention" || { tail -20 $OUT/build_*.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && LATTE_TEST_FILTER=no-case LATTE_ATTN_TIMING=3 timeout 300 ./gpu_attention > $OUT/gpu_attention_timing.log 2>&1; echo "rc $?"; grep "time attention" $OUT/gpu_attention_timing.log )
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
