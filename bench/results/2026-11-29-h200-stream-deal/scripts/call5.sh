#!/usr/bin/env bash
# Call 5 (H200): LPT skipped where the snake's busiest CTA is within 1/16 of the lower bound (mla_schedule_snake_enough;
# call 2: lengths uniform in [1, 8191] at batch 64 had a query phase of 47-49 µs against 33, the writer's LPT chain
# outlasting the query kernel). The tree and the base (HEAD 406c30a's mla_attention_schedule.cuh over a copy, from
# .carry/base); gpu_attention (the list's busiest against the host's snake / LPT, with the new rule), gpu_mla quick and
# tuned; latte-bench --quick at batches 48, 64, 80, 96 and 128 (mixed and skewed lengths), tree / base, two interleaved
# rounds.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"  # base_copy, build
base_copy
build $PWD/build-gpu . "latte latte-bench gpu_mla gpu_attention" & p1=$!
build /tmp/base/build-base /tmp/base "latte latte-bench" & p2=$!
for p in $p1 $p2; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
run() {  # run new|base ROUND BATCHES
  [ $(( $(date +%s) - t0 )) -gt 540 ] && return
  local bin=build-gpu/bench/latte-bench; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_b$3_r$2.json > $OUT/bench_$1_b$3_r$2.log 2>&1
  echo "$1 r$2: $(grep -E '^mla (b|len|lens)' $OUT/bench_$1_b$3_r$2.log | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+).*/\1=\2 [\3] (\4|\5)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' ')"
}
B=48,64,80,96
run new 1 $B; run base 1 $B; run base 2 $B; run new 2 $B
run new 1 128; run base 1 128; run base 2 128; run new 2 128
echo "at $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 100 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-gpu/tests && LATTE_TEST_FILTER=tuned timeout 100 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep FAIL $OUT/gpu_mla_tuned.log | head -5 )
( cd build-gpu/tests && timeout 260 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|busiest|^  " $OUT/gpu_attention.log | cut -c1-250 | head -20 )
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
