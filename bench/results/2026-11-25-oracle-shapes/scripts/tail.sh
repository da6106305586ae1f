#!/usr/bin/env bash
# the tail-only item's P rounded as the reference rounds it: build, gpu_attention, gpu_mla quick, the oracle (2 seeds,
# --flash), then the layer A/B against HEAD's seesaw file (overlay), rounds interleaved
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target latte latte-bench gpu_mla gpu_attention >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
( rm -rf /tmp/latte-head && mkdir -p /tmp/latte-head &&
  tar cf - --exclude='./build*' --exclude=./.git --exclude=./.carry . | tar xf - -C /tmp/latte-head &&
  cp -r .carry/base_tail/. /tmp/latte-head/ &&
  cmake -S /tmp/latte-head -B /tmp/latte-head/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build_head.log 2>&1 &&
  cmake --build /tmp/latte-head/b -j16 --target latte-bench >> $OUT/build_head.log 2>&1 || tail -20 $OUT/build_head.log ) &
hp=$!
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)" )
grep -E "^FAIL" $OUT/gpu_attention.log | cut -c1-230
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)" )
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
for seed in ${SEEDS:-534204909 22}; do
  mkdir -p $OUT/o$seed
  timeout 200 python3 scripts/oracle_check.py --out $OUT/o$seed --no-timing --flash --seed $seed > $OUT/oracle_$seed.log 2>&1
  echo "oracle seed $seed rc $?"; grep -E "reference_rows \(" $OUT/oracle_$seed.log | cut -c1-60; tail -20 $OUT/oracle_$seed.log | head -19
  grep -oE "^[a-z_0-9.]+: (FAILED|not met)|y_miss_where=\[[^]]*\]|short_rel_err=\[[^]]*\]" $OUT/oracle_$seed.log | paste -sd" " | cut -c1-1500
done
wait $hp
echo "head built $(( $(date +%s) - t0 )) s"
run() {  # run NAME BIN ENV...
  local n=$1 b=$2; shift 2
  env "$@" timeout 100 $b --only mla --quick > $OUT/ab_${n}_$r.log 2>&1
  echo -n "$n r$r: "; grep -E '^mla (len|lens)' $OUT/ab_${n}_$r.log | grep -v untuned | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append [0-9.]+, up_absorb ([0-9.]+), attention ([0-9.]+).*/\2=\3(\4,\5)/' | tr '\n' ' ' | cut -c1-400; echo
}
for r in ${ROUNDS:-1 2}; do
  if [ $((r % 2)) = 1 ]; then run head /tmp/latte-head/b/bench/latte-bench; run new build-gpu/bench/latte-bench
  else run new build-gpu/bench/latte-bench; run head /tmp/latte-head/b/bench/latte-bench; fi
done
grep -E "^ceilings" $OUT/ab_new_1.log
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log o*/ && rm -rf ab_*.log o*/ oracle_*.log gpu_mla_quick.log
