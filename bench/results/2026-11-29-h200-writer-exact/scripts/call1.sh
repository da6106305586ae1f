#!/usr/bin/env bash
# Call 1 (H200): the writer's exact pricing of equal lengths (the patch of 2026-11-29-h200-stream-deal without its
# general bound for unequal lengths, which cost batch 128's skewed case 95 -> 137 µs of attention) against the base
# (.carry/base: 20b12a2's files). gpu_attention (all cases), gpu_mla quick and tuned; latte-bench --quick at batch
# 128 (two interleaved rounds) and 48, 72, 100; and a dev build's sweep of LATTE_MLA_FORCE_PIECES at batch 128 (the
# skewed case's pieces merged in-kernel: the attention against k).
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"
base_copy
build $PWD/build-new . "latte latte-bench gpu_mla gpu_attention" & p1=$!
build /tmp/base/build-base /tmp/base "latte latte-bench" & p2=$!
( cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_build-dev.log 2>&1 &&
  cmake --build build-dev -j8 --target latte-bench >> $OUT/build_build-dev.log 2>&1 ) & p3=$!
for p in $p1 $p2 $p3; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
( cd build-new/tests && timeout 220 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|busiest" $OUT/gpu_attention.log | cut -c1-250 | head -10 )
( cd build-new/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 60 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-new/tests && LATTE_TEST_FILTER=tuned timeout 60 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep FAIL $OUT/gpu_mla_tuned.log | head -5 )
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+).*/\1=\2 [\3] (\4|\5)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
run() {  # run new|base|dev TAG BATCHES [env]
  [ $(( $(date +%s) - t0 )) -gt 560 ] && return
  local bin=build-new/bench/latte-bench
  [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  [ $1 = dev ] && bin=build-dev/bench/latte-bench
  env ${4:-X=1} timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_$2.json > $OUT/bench_$1_$2.log 2>&1
  echo "$1 $2: $(fmt $OUT/bench_$1_$2.log)"
}
for r in 1 2; do run new b128_r$r 128; run base b128_r$r 128; done
run new b48-100 48,72,100; run base b48-100 48,72,100
for k in 0 3 4 5 6 8 10 16; do run dev b128_k$k 128 LATTE_MLA_FORCE_PIECES=$k; done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
