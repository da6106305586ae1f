#!/usr/bin/env bash
# Call 7 (H200): the LPT rule's margin. Call 5-6: 1/16 took batch 64 with lengths uniform in [1, 8191] from 281 to 266
# µs (query phase 47 -> 34), but batch 128's attention phase with such lengths read +10 µs in all three samples (the
# layer within its noise). Builds: the margin 1/16 (default), 1/32 (-DLATTE_MLA_SNAKE_ENOUGH_DIV=32) and the base
# (406c30a's writer: LPT always tried); latte-bench --quick at batches 64 and 128, two interleaved rounds.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"  # base_copy, build
base_copy
build $PWD/build-gpu . "latte latte-bench" & p1=$!
build /tmp/base/build-base /tmp/base "latte latte-bench" & p2=$!
( cmake -S . -B build-d32 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_MLA_SNAKE_ENOUGH_DIV=32 > $OUT/build_d32.log 2>&1 && cmake --build build-d32 -j8 --target latte latte-bench >> $OUT/build_d32.log 2>&1 ) & p3=$!
for p in $p1 $p2 $p3; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
run() {  # run d16|d32|base ROUND BATCHES
  local bin=build-gpu/bench/latte-bench; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench; [ $1 = d32 ] && bin=build-d32/bench/latte-bench
  timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_b$3_r$2.json > $OUT/bench_$1_b$3_r$2.log 2>&1
  echo "$1 r$2: $(grep -E '^mla (b64 lens|lens 1)' $OUT/bench_$1_b$3_r$2.log | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+).*/\1=\2 [\3] (\4|\5)/' | sed -E 's/lens 1..8191 mixed/mixed/' | tr '\n' ' ')"
}
for r in 1 2; do for v in d16 d32 base; do run $v $r 64; run $v $r 128; done; done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
