#!/usr/bin/env bash
# the attention's warm-up (LATTE_MLA_ATTN_WARM): build, gpu_mla, gpu_attention, layer A/B same binary (rounds alternating),
# then the in-layer timeline on/off (dev build)
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
( cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j8 --target gpu_attention >> $OUT/build_exp.log 2>&1 || tail -20 $OUT/build_exp.log ) &
bp=$!
echo "built $(( $(date +%s) - t0 )) s"
if [ -z "${SKIP_TESTS:-}" ]; then
LATTE_REQUIRE_GPU=1 timeout 200 build-gpu/tests/gpu_mla > $OUT/gpu_mla.log 2>&1; echo "gpu_mla rc $?: $(tail -1 $OUT/gpu_mla.log)"; grep FAIL $OUT/gpu_mla.log | head -5
timeout 150 build-gpu/tests/gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"
fi
run() {
  local n=$1; shift
  env "$@" timeout 100 build-gpu/bench/latte-bench --only mla --quick > $OUT/ab_${n}_$r.log 2>&1
  echo -n "$n r$r: "; grep -E '^mla (len|lens)' $OUT/ab_${n}_$r.log | grep -v untuned | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append [0-9.]+, up_absorb ([0-9.]+), attention ([0-9.]+).*/\2=\3(\4,\5)/' | tr '\n' ' ' | cut -c1-260; echo
}
for r in ${ROUNDS:-1 2 3}; do
  if [ $((r % 2)) = 1 ]; then run warm; run cold LATTE_MLA_ATTN_WARM=0; else run cold LATTE_MLA_ATTN_WARM=0; run warm; fi
done
wait $bp
for v in 1 0; do
  echo "== layer trace 512 warm $v"
  LATTE_MLA_ATTN_WARM=$v LATTE_MLA_WGMMA_EXPERIMENT=8 LATTE_ATTN_TRACE_LAYER=512 timeout 90 build-exp/tests/gpu_attention > $OUT/trace_warm$v.log 2>&1
  grep -E "layer at|item 0: (Q|pairs|tail \+)|item 1: (pairs|tail \+)|exit" $OUT/trace_warm$v.log
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
