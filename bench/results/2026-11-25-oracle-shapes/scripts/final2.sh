#!/usr/bin/env bash
# the committed tree (tail P rounded as the reference, oracle at the batch's shape): build, gpu_attention, gpu_mla quick,
# the oracle under 3 seeds (--flash), latte-bench's layer
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target latte latte-bench gpu_mla gpu_attention >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)" )
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)" )
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
for seed in ${SEEDS:-534204909 11 22}; do
  mkdir -p $OUT/o$seed
  timeout 200 python3 scripts/oracle_check.py --out $OUT/o$seed --no-timing --flash --seed $seed > $OUT/oracle_$seed.log 2>&1
  echo "seed $seed rc $?: $(tail -1 $OUT/oracle_$seed.log) | $(grep -E 'reference_rows \(' $OUT/oracle_$seed.log | sed 's/.*batch: //')"
  grep -E "^(unequal|few_long|short)[a-z_]*: " $OUT/oracle_$seed.log | sed -E 's/^([a-z_]+): .*y_misses=([0-9]+), y_rel_err=([0-9.e+-]+).*torch_absorbed_misses=([0-9]+), torch_absorbed_rel_err=([0-9.e+-]+).*/  \1 latte \2 miss \3, absorbed \4 miss \5/'
done
timeout 120 build-gpu/bench/latte-bench --only mla --quick --json $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc $?"
grep -E "^mla (len|lens)|^ceilings" $OUT/bench.log | grep -v untuned | cut -c1-120
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log o*/ && rm -rf o*/ oracle_*.log gpu_mla_quick.log
