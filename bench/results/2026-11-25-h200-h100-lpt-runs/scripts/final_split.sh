#!/usr/bin/env bash
# the writer's step clocks (dev build), then split.sh (tests, A/B against HEAD, the switch off, prep0)
set -u
( cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j8 --target gpu_attention >> $OUT/build_exp.log 2>&1 || tail -20 $OUT/build_exp.log ) &
bash .carry/split.sh
wait
( cd build-exp/tests && LATTE_TEST_FILTER="piece" timeout 100 ./gpu_attention 2>&1 | grep -E "^(ok|FAIL)|list writer|checks" | cut -c1-200 ) | tee $OUT/clocks.log
