#!/usr/bin/env bash
# the softmax's rounding: latte against PyTorch's absorbed pipeline with the reference's rounding and with a flash kernel's
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target latte >> $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
for seed in ${SEEDS:-534204909 11 22}; do
  mkdir -p $OUT/s$seed
  timeout 280 python3 scripts/oracle_check.py --out $OUT/s$seed --no-timing --flash --sample ${SAMPLE:-32} --seed $seed ${CASES:+--cases $CASES} > $OUT/s$seed.log 2>&1
  echo "seed $seed rc $?"; grep -E "reference_rows|FAILED|short_rel_err" $OUT/s$seed.log | grep -oE "^[a-z_0-9.]+:|reference_rows.*|y_misses=[0-9]+|torch_absorbed_misses=[0-9]+|torch_flash_misses=[0-9]+|short_rel_err=\[[^]]*\]" | paste -sd" " ; tail -22 $OUT/s$seed.log
done
cd $OUT && tar czf logs.tgz s* build.log && rm -rf s*/ 
