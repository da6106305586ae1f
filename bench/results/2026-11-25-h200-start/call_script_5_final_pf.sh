#!/usr/bin/env bash
# the committed tree: start timeline (exp 8 vs 264 = no tensor-map prefetch) at 512 and 2048, layer A/B in one dev
# binary (exp 0 / exp 256 + LATTE_NO_MAP_PREFETCH=1), 5 rounds
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_attention latte-bench >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
for L in 512 2048; do for e in 8 264; do
  echo "== trace $L exp $e"
  LATTE_MLA_WGMMA_EXPERIMENT=$e LATTE_ATTN_TRACE_LAYER=$L timeout 90 build-exp/tests/gpu_attention > $OUT/t_${L}_$e.log 2>&1
  grep -E "layer at|start:|item 0: (Q|pairs|tail \+)|item 1: (Q|pairs|tail \+)|exit" $OUT/t_${L}_$e.log | sed 's/  */ /g'
done; done
run() {  # run NAME ENV...
  local n=$1; shift
  env "$@" timeout 100 build-exp/bench/latte-bench --only mla --quick > $OUT/ab_${n}_$r.log 2>&1
  echo -n "$n r$r: "; grep -E '^mla (len|lens)' $OUT/ab_${n}_$r.log | grep -v untuned | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append ([0-9.]+), up_absorb ([0-9.]+), attention ([0-9.]+).*/\2=\3(\4,\5,\6)/' | tr '\n' ' ' | cut -c1-300; echo
}
for r in 1 2 3 4 5 6; do
  run pf LATTE_MLA_WGMMA_EXPERIMENT=0
  run nopf LATTE_MLA_WGMMA_EXPERIMENT=256 LATTE_NO_MAP_PREFETCH=1
  [ $(( $(date +%s) - t0 )) -gt 420 ] && break
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
