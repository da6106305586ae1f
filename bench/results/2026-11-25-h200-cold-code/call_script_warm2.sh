#!/usr/bin/env bash
# where the warm-up runs and what its launch costs: in-layer timelines (dev build), warm / cold / empty warm-up
set -u
t0=$(date +%s)
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_attention >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
for L in ${LENS:-512}; do
for r in 1 2; do
for v in "LATTE_MLA_ATTN_WARM=1" "LATTE_MLA_ATTN_WARM=0" "LATTE_MLA_ATTN_WARM_EMPTY=1"; do
  echo "== $L r$r $v"
  env $v LATTE_MLA_WGMMA_EXPERIMENT=8 LATTE_ATTN_TRACE_LAYER=$L timeout 90 build-exp/tests/gpu_attention > $OUT/t_${L}_${r}_${v%%=*}.log 2>&1
  grep -E "layer at|item 0: (Q|pairs|tail \+)|exit|warm-up CTA" $OUT/t_${L}_${r}_${v%%=*}.log | sed 's/  */ /g'
done; done; done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
