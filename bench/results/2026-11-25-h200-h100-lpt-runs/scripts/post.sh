#!/usr/bin/env bash
# the tree after the constant clean-up (50f2821): build, gpu_attention, gpu_mla few long + quick, latte-bench mla
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target latte-bench gpu_mla gpu_attention >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
( cd build-gpu/tests && timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)" )
( cd build-gpu/tests && LATTE_TEST_FILTER="a few long" LATTE_TEST_NO_TUNE=1 timeout 100 ./gpu_mla > $OUT/gpu_mla_long.log 2>&1; echo "gpu_mla a few long rc $?: $(tail -1 $OUT/gpu_mla_long.log)" )
timeout 100 build-gpu/bench/latte-bench --only mla --quick --json $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc $?"
grep -E "^mla (len|lens)|ceilings" $OUT/bench.log | cut -c1-140
