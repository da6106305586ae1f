#!/usr/bin/env bash
# pieces of long sequences: build, gpu_attention (all cases), gpu_mla (the new cases + quick), then layer A/B against
# HEAD (library overlay), 3 rounds interleaved, plus the switch off
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target latte-bench gpu_mla gpu_attention >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
( rm -rf /tmp/latte-head && mkdir -p /tmp/latte-head &&
  tar cf - --exclude='./build*' --exclude=./.git --exclude=./.carry . | tar xf - -C /tmp/latte-head &&
  cp -r .carry/${OVERLAY:-base_split}/. /tmp/latte-head/ &&
  cmake -S /tmp/latte-head -B /tmp/latte-head/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build_head.log 2>&1 &&
  cmake --build /tmp/latte-head/b -j16 --target latte-bench >> $OUT/build_head.log 2>&1 || tail -20 $OUT/build_head.log ) &
hp=$!
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)" )
grep -E "^(FAIL|ok  )" $OUT/gpu_attention.log | grep -E "piece|long|FAIL|equal" | cut -c1-230
grep -E "^  " $OUT/gpu_attention.log | head -20
( cd build-gpu/tests && LATTE_TEST_FILTER="a few long" LATTE_TEST_NO_TUNE=1 timeout 100 ./gpu_mla > $OUT/gpu_mla_long.log 2>&1; echo "gpu_mla a few long rc $?: $(tail -1 $OUT/gpu_mla_long.log)" )
wait $hp
echo "head built $(( $(date +%s) - t0 )) s"
run() {  # run NAME BIN ENV...
  local n=$1 b=$2; shift 2
  env "$@" timeout 100 $b --only mla --quick > $OUT/ab_${n}_$r.log 2>&1
  echo -n "$n r$r: "; grep -E '^mla (len|lens)' $OUT/ab_${n}_$r.log | grep -v untuned | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append [0-9.]+, up_absorb ([0-9.]+), attention ([0-9.]+).*/\2=\3(\4,\5)/' | tr '\n' ' ' | cut -c1-400; echo
}
for r in ${ROUNDS:-1 2 3}; do
  [ $r = 1 ] && run prep0 build-gpu/bench/latte-bench LATTE_MLA_ATTN_PREP=0
  if [ $((r % 2)) = 1 ]; then run head /tmp/latte-head/b/bench/latte-bench; run wt build-gpu/bench/latte-bench; run off build-gpu/bench/latte-bench LATTE_MLA_SPLIT_LONG=0
  else run off build-gpu/bench/latte-bench LATTE_MLA_SPLIT_LONG=0; run wt build-gpu/bench/latte-bench; run head /tmp/latte-head/b/bench/latte-bench; fi
done
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)" )
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f ab_*.log
