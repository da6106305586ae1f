#!/usr/bin/env bash
# the committed tree: release gpu_attention + gpu_mla quick, the dev start timeline at 512
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target gpu_attention gpu_mla >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_attention >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
timeout 150 build-gpu/tests/gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"
LATTE_TEST_QUICK=1 timeout 150 build-gpu/tests/gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"
LATTE_MLA_WGMMA_EXPERIMENT=8 LATTE_ATTN_TRACE_LAYER=512 timeout 90 build-exp/tests/gpu_attention > $OUT/t_512_8.log 2>&1; echo "trace rc $?"
grep -E "layer at|start:|item 0: (Q|pairs|tail \+)|item 1: (Q|pairs|tail \+)|exit" $OUT/t_512_8.log | sed 's/  */ /g'
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
