#!/usr/bin/env bash
# the committed tree's oracle check (reference at the batch's shape, short cases informational), 3 seeds, --flash
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target latte >> $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
for seed in ${SEEDS:-534204909 11 22}; do
  mkdir -p $OUT/o$seed
  timeout 200 python3 scripts/oracle_check.py --out $OUT/o$seed --no-timing --flash --seed $seed > $OUT/oracle_$seed.log 2>&1
  echo "seed $seed rc $?: $(tail -1 $OUT/oracle_$seed.log)"; grep -E "reference_rows \(" $OUT/oracle_$seed.log | sed 's/.*batch: //'
  grep -E "^(unequal|few_long|short)[a-z_]*: " $OUT/oracle_$seed.log | grep -oE "^[a-z_]+:|y_misses=[0-9]+|y_rel_err=[0-9.e+-]+|torch_absorbed_misses=[0-9]+|torch_absorbed_rel_err=[0-9.e+-]+|torch_flash_misses=[0-9]+|short_rel_err=\[[^]]*\]" | paste -sd" " | sed 's/ \([a-z_]*:\)/\n\1/g'
done
cd $OUT && tar czf logs.tgz oracle_*.log o*/ build.log && rm -rf o*/ oracle_*.log
