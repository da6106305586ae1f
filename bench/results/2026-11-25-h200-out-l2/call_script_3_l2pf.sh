#!/usr/bin/env bash
# W_UV asks L2 for the head of Wo (LATTE_MLA_OUT_L2_MB): checks, then the layer A/B in one binary, interleaved rounds
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target latte-bench gpu_mla gpu_q_absorb >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
cd build-gpu
python3 -c "import torch; p=torch.cuda.get_device_properties(0); print('L2 bytes', p.L2_cache_size)" 2>/dev/null
LATTE_MLA_Q_PREFETCH=8 LATTE_TEST_QUICK=1 LATTE_REQUIRE_GPU=1 timeout 150 tests/gpu_mla > $OUT/mla_l2.log 2>&1; echo "gpu_mla quick (Q_PREFETCH=8) rc=$? $(tail -1 $OUT/mla_l2.log)"; grep FAIL $OUT/mla_l2.log | head -5
LATTE_MLA_Q_PREFETCH=8 LATTE_REQUIRE_GPU=1 timeout 120 tests/gpu_q_absorb > $OUT/qa.log 2>&1; echo "gpu_q_absorb (Q_PREFETCH=8) rc=$? $(tail -1 $OUT/qa.log)"
run() {  # run NAME ENV...
  local n=$1; shift
  env "$@" timeout 100 bench/latte-bench --only mla --quick > $OUT/ab_${n}_$r.log 2>&1
  echo -n "$n r$r: "; grep -E '^mla (len|lens)' $OUT/ab_${n}_$r.log | grep -v untuned | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append ([0-9.]+), up_absorb ([0-9.]+), attention ([0-9.]+).*wuv_output ([0-9.]+).*/\2=\3(\4,\5,\6)/' | tr '\n' ' ' | cut -c1-330; echo
  [ $r = 1 ] && grep -m3 -E '^ *(out|w_uv): ' $OUT/ab_${n}_$r.log | sed 's/^ */    /'
}
for r in ${ROUNDS:-1 2 3}; do
  for v in ${VARIANTS:-0 4 8 12}; do
    case $v in *L) run mb$v LATTE_MLA_OUT_L2_MB=${v%L} LATTE_MLA_OUT_L2_LAST=1 ;; *) run pf$v LATTE_MLA_Q_PREFETCH=$v ;; esac
  done
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf ab.tgz *.log && rm -f *.log
