#!/usr/bin/env bash
set -u
t0=$(date +%s)
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_attention >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
cd build-exp/tests && LATTE_TEST_FILTER="piece" timeout 100 ./gpu_attention 2>&1 | grep -E "^(ok|FAIL)|list writer|checks" | cut -c1-200
