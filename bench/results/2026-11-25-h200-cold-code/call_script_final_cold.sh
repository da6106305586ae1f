#!/usr/bin/env bash
# final tree: release build + gpu_attention (release), dev build: in-layer timelines, cold vs code warmed by one item
# right before (LATTE_MLA_ATTN_TWICE=2) at 512 / 2048 / 4096
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target gpu_attention gpu_mla >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_attention >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
timeout 150 build-gpu/tests/gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention (release) rc $?: $(tail -1 $OUT/gpu_attention.log)"
LATTE_TEST_QUICK=1 timeout 150 build-gpu/tests/gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"
for L in 512 2048 4096; do for r in 1 2; do for v in "LATTE_MLA_ATTN_TWICE=0" "LATTE_MLA_ATTN_TWICE=2"; do
  echo "== $L r$r $v"
  env $v LATTE_MLA_WGMMA_EXPERIMENT=8 LATTE_ATTN_TRACE_LAYER=$L timeout 90 build-exp/tests/gpu_attention > $OUT/t_${L}_${r}_${v##*=}.log 2>&1
  grep -E "layer at|item 0: (Q|pairs|tail \+)|item 1: (pairs|tail \+)|exit" $OUT/t_${L}_${r}_${v##*=}.log | sed 's/  */ /g'
done; done; done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
