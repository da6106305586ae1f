#!/usr/bin/env bash
# the list's header A/B with and without the W_UV early launch (exp 0 new start, 128 old start; LATTE_MLA_UV_EARLY)
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target latte-bench >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
run() {  # run NAME ENV...
  local n=$1; shift
  env "$@" timeout 100 build-exp/bench/latte-bench --only mla --quick > $OUT/ab_${n}_$r.log 2>&1
  echo -n "$n r$r: "; grep -E '^mla (len|lens)' $OUT/ab_${n}_$r.log | grep -v untuned | grep -E 'len (512|1024|2048):' | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append ([0-9.]+), up_absorb ([0-9.]+), attention ([0-9.]+).*/\2=\3(\6)/' | tr '\n' ' ' | cut -c1-300; echo
}
for r in 1 2 3 4; do
  run new LATTE_MLA_WGMMA_EXPERIMENT=256; run old LATTE_MLA_WGMMA_EXPERIMENT=128; run late LATTE_MLA_WGMMA_EXPERIMENT=768; run jitter LATTE_MLA_WGMMA_EXPERIMENT=1280
  [ $(( $(date +%s) - t0 )) -gt 480 ] && break
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
