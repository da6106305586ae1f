#!/usr/bin/env bash
set -u
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target gpu_mla gpu_attention >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
cd build-gpu/tests
LATTE_TEST_FILTER="a few long" LATTE_TEST_NO_TUNE=1 timeout 120 ./gpu_mla > $OUT/gpu_mla_long_env.log 2>&1; echo "gpu_mla (env checks + a few long) rc $?: $(tail -1 $OUT/gpu_mla_long_env.log)"
grep -E "FAIL" $OUT/gpu_mla_long_env.log | head
LATTE_TEST_SEED=0x5eed timeout 150 ./gpu_attention > $OUT/gpu_attention_seed.log 2>&1; echo "gpu_attention (other seed) rc $?: $(tail -1 $OUT/gpu_attention_seed.log)"
grep -E "^FAIL|piece item" $OUT/gpu_attention_seed.log | grep -E "FAIL| [1-9][0-9]* piece" | cut -c1-160
