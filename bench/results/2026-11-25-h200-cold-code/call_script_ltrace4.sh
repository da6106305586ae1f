#!/usr/bin/env bash
# item 0's end in the layer, step by step, under the layer's switches
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_attention >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
B=build-exp/tests/gpu_attention
L=${L:-512}
for v in "default" "LATTE_MLA_ATTN_TWICE=2" "LATTE_MLA_DISCARD=0 LATTE_MLA_ATTN_TWICE=1" "default" "LATTE_MLA_ATTN_TWICE=2"; do
  echo "== layer $L $v"
  env $( [ "$v" = default ] || echo $v ) LATTE_MLA_WGMMA_EXPERIMENT=8 LATTE_ATTN_TRACE_LAYER=$L timeout 90 $B > $OUT/layer_${L}_$(echo $v | tr " =" "__").log 2>&1; echo "rc $?"
  grep -vE "^  WG|^pair|^trace at|^gpu_attention|entry \(" $OUT/layer_${L}_$(echo $v | tr " =" "__").log
done
echo "== alone $L flush read capacity 8192"
LATTE_ATTN_CAPACITY=8192 LATTE_ATTN_TRACE_AT=0,0 LATTE_MLA_WGMMA_EXPERIMENT=8 LATTE_ATTN_TRACE=$L timeout 60 $B > $OUT/alone_${L}.log 2>&1; echo "rc $?"
grep -vE "^  WG|^pair|^trace at|^gpu_attention|entry \(" $OUT/alone_${L}.log
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
