#!/usr/bin/env bash
# in-layer item timelines (new LATTE_ATTN_TRACE_LAYER) against the attention alone (read / write flush, capacity 8192)
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_attention >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
B=build-exp/tests/gpu_attention
for L in ${LENS:-512 2048}; do
  for r in 1 2; do
    echo "== layer $L round $r"
    LATTE_MLA_WGMMA_EXPERIMENT=8 LATTE_ATTN_TRACE_LAYER=$L timeout 90 $B > $OUT/layer_${L}_$r.log 2>&1; echo "rc $?"
    grep -vE "^  WG|^pair" $OUT/layer_${L}_$r.log | grep -v "^trace at"
  done
  for f in read write; do
    echo "== alone $L flush $f capacity 8192"
    LATTE_ATTN_FLUSH=$f LATTE_ATTN_CAPACITY=8192 LATTE_ATTN_TRACE_AT=0,0 LATTE_MLA_WGMMA_EXPERIMENT=8 LATTE_ATTN_TRACE=$L timeout 60 $B > $OUT/alone_${L}_$f.log 2>&1; echo "rc $?"
    grep -vE "^  WG|^pair" $OUT/alone_${L}_$f.log | grep -v "^trace at"
  done
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
