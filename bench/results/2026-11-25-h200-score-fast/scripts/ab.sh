#!/usr/bin/env bash
# HEAD's attention files (.carry/base_src) against the working tree's: correctness of the new build, then the attention
# alone (gpu_attention's timing table, LATTE_ATTN_TIMING=2) and the layer, rounds interleaved
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target latte latte-bench gpu_attention gpu_mla >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
rm -rf /tmp/latte-head && mkdir -p /tmp/latte-head &&
  tar cf - --exclude='./build*' --exclude=./.git --exclude=./.carry . | tar xf - -C /tmp/latte-head &&
  cp -r .carry/base_src/. /tmp/latte-head/ &&
  cmake -S /tmp/latte-head -B /tmp/latte-head/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build_head.log 2>&1 &&
  cmake --build /tmp/latte-head/b -j16 --target latte-bench gpu_attention >> $OUT/build_head.log 2>&1 || tail -20 $OUT/build_head.log
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)" )
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)" )
att() {  # att NAME DIR
  ( cd $2/tests && LATTE_ATTN_TIMING=2 timeout 120 ./gpu_attention > $OUT/att_$1_$r.log 2>&1 )
  echo -n "$1 r$r attention: "; grep -E "time attention len" $OUT/att_$1_$r.log | grep -v 'index order' | sed -E 's/.*len +([0-9]+( stored)?):? +([0-9.]+) us.*/\1=\3/' | tr '\n' ' '; echo
}
run() {  # run NAME BIN
  timeout 100 $2 --only mla --quick > $OUT/ab_$1_$r.log 2>&1
  echo -n "$1 r$r layer: "; grep -E '^mla (len|lens)' $OUT/ab_$1_$r.log | grep -v untuned | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append [0-9.]+, up_absorb ([0-9.]+), attention ([0-9.]+).*/\2=\3(\5)/' | tr '\n' ' ' | cut -c1-300; echo
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then att head /tmp/latte-head/b; att new build-gpu; else att new build-gpu; att head /tmp/latte-head/b; fi
done
for r in ${LAYER_ROUNDS:-4 5}; do
  if [ $((r % 2)) = 1 ]; then run head /tmp/latte-head/b/bench/latte-bench; run new build-gpu/bench/latte-bench
  else run new build-gpu/bench/latte-bench; run head /tmp/latte-head/b/bench/latte-bench; fi
done
cp build-gpu/bench/latte-bench /tmp/ 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f att_*.log ab_*.log
