#!/usr/bin/env bash
# H100: the in-layer item timeline, cold vs one warm item right before (LATTE_MLA_ATTN_TWICE=2), at 512 and 2048
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_attention >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
for L in 512 2048; do for r in 1 2; do for v in "LATTE_MLA_ATTN_TWICE=0" "LATTE_MLA_ATTN_TWICE=2"; do
  echo "== $L r$r $v"
  env $v LATTE_MLA_WGMMA_EXPERIMENT=8 LATTE_ATTN_TRACE_LAYER=$L timeout 90 build-exp/tests/gpu_attention > $OUT/t_${L}_${r}_${v##*=}.log 2>&1
  grep -E "layer at|item 0: (Q|pairs|tail \+)|item 1: (pairs|tail \+)|exit|item 0: (tail folded|output written)" $OUT/t_${L}_${r}_${v##*=}.log | sed 's/  */ /g'
done; done; done
echo "== alone 512 (read flush, capacity 8192)"
LATTE_ATTN_CAPACITY=8192 LATTE_MLA_WGMMA_EXPERIMENT=8 LATTE_ATTN_TRACE=512 timeout 60 build-exp/tests/gpu_attention > $OUT/alone_512.log 2>&1
grep -E "item 0: (Q|pairs|tail \+)|item 1: (pairs|tail \+)|exit|item 0: (tail folded|output written)" $OUT/alone_512.log | sed 's/  */ /g'
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
