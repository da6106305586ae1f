#!/usr/bin/env bash
# start order / tensor-map prefetch, separated: one dev binary, exp 0 (new order + prefetch), 128 (old order +
# prefetch), 256 (new order, no prefetch), 384 (old order, no prefetch = HEAD's kernel), and HEAD's release binary;
# traces of 8 / 392 at 512
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_attention latte-bench >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target latte-bench >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
( rm -rf /tmp/latte-head && mkdir -p /tmp/latte-head &&
  tar cf - --exclude='./build*' --exclude=./.git --exclude=./.carry . | tar xf - -C /tmp/latte-head &&
  cp -r .carry/haa2/. /tmp/latte-head/ &&
  cmake -S /tmp/latte-head -B /tmp/latte-head/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build_head.log 2>&1 &&
  cmake --build /tmp/latte-head/b -j16 --target latte-bench >> $OUT/build_head.log 2>&1 || tail -20 $OUT/build_head.log )
echo "built $(( $(date +%s) - t0 )) s"
for r in 1 2; do for e in 8 392; do
  echo "== trace 512 r$r exp $e"
  LATTE_MLA_WGMMA_EXPERIMENT=$e LATTE_ATTN_TRACE_LAYER=512 timeout 90 build-exp/tests/gpu_attention > $OUT/t_512_${r}_$e.log 2>&1
  grep -E "layer at|start:|item 0: (Q|pairs|tail \+)|item 1: (Q|pairs|tail \+)|exit" $OUT/t_512_${r}_$e.log | sed 's/  */ /g'
done; done
run() {  # run NAME BIN ENV...
  local n=$1 b=$2; shift 2
  env "$@" timeout 100 $b --only mla --quick > $OUT/ab_${n}_$r.log 2>&1
  echo -n "$n r$r: "; grep -E '^mla (len|lens)' $OUT/ab_${n}_$r.log | grep -v untuned | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append ([0-9.]+), up_absorb ([0-9.]+), attention ([0-9.]+).*/\2=\3(\4,\5,\6)/' | tr '\n' ' ' | cut -c1-260; echo
}
for r in 1 2 3 4; do
  run e0 build-exp/bench/latte-bench LATTE_MLA_WGMMA_EXPERIMENT=0
  run e128 build-exp/bench/latte-bench LATTE_MLA_WGMMA_EXPERIMENT=128
  run e256 build-exp/bench/latte-bench LATTE_MLA_WGMMA_EXPERIMENT=256
  run e384 build-exp/bench/latte-bench LATTE_MLA_WGMMA_EXPERIMENT=384 LATTE_NO_MAP_PREFETCH=1
  run rel build-gpu/bench/latte-bench
  run head /tmp/latte-head/b/bench/latte-bench
  [ $(( $(date +%s) - t0 )) -gt 500 ] && break
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
