#!/usr/bin/env bash
# the list's header (first real round + its length + clear flag): checks, start timeline (exp 8 vs 136 = no header),
# layer A/B in one dev binary (exp 0 vs 128)
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target gpu_attention gpu_mla gpu_q_absorb >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_attention latte-bench >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
timeout 150 build-gpu/tests/gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"
LATTE_TEST_QUICK=1 timeout 150 build-gpu/tests/gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"


echo "checks $(( $(date +%s) - t0 )) s"
for L in 512; do for r in 1; do for e in 8 136 264; do
  echo "== trace $L r$r exp $e"
  LATTE_MLA_WGMMA_EXPERIMENT=$e LATTE_ATTN_TRACE_LAYER=$L timeout 90 build-exp/tests/gpu_attention > $OUT/t_${L}_${r}_$e.log 2>&1
  grep -E "layer at|start:|item 0: (Q|pairs|tail \+)|item 1: (Q|pairs|tail \+)|exit" $OUT/t_${L}_${r}_$e.log | sed 's/  */ /g'
done; done; done
echo "traces $(( $(date +%s) - t0 )) s"
run() {  # run NAME ENV...
  local n=$1; shift
  env "$@" timeout 100 build-exp/bench/latte-bench --only mla --quick > $OUT/ab_${n}_$r.log 2>&1
  echo -n "$n r$r: "; grep -E '^mla (len|lens)' $OUT/ab_${n}_$r.log | grep -v untuned | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append ([0-9.]+), up_absorb ([0-9.]+), attention ([0-9.]+).*/\2=\3(\4,\5,\6)/' | tr '\n' ' ' | cut -c1-300; echo
}
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then run new LATTE_MLA_WGMMA_EXPERIMENT=0; run old LATTE_MLA_WGMMA_EXPERIMENT=128; run nopf LATTE_MLA_WGMMA_EXPERIMENT=256
  else run nopf LATTE_MLA_WGMMA_EXPERIMENT=256; run old LATTE_MLA_WGMMA_EXPERIMENT=128; run new LATTE_MLA_WGMMA_EXPERIMENT=0; fi
  [ $(( $(date +%s) - t0 )) -gt 480 ] && break
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
