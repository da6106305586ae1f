#!/usr/bin/env bash
# the oracle's few-long and unequal cases under several seeds, with PyTorch's absorbed pipeline beside (misses: where)
set -u
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target latte >> $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
for seed in ${SEEDS:-11 22 33 44}; do
  mkdir -p $OUT/s$seed
  timeout 150 python3 scripts/oracle_check.py --out $OUT/s$seed --no-timing --seed $seed --cases few_long,unequal > $OUT/s$seed.log 2>&1
  echo "seed $seed rc $?"; grep -E "^(few_long|unequal)" $OUT/s$seed.log | sed -E 's/seed=[0-9]+, scale=1.00e\+00, //; s/bad_lengths=0, y_nonfinite=0, //; s/sampled_append_misses=0, append_misses=0, other_rows_changed=0, //' | cut -c1-330
done
