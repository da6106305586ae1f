#!/usr/bin/env bash
# Call 6 (H200): call 5's LPT rule with the barrier it had removed (thread 0's LPT busiest read by every thread: call 5's
# gpu_attention caught threads disagreeing on snake / LPT, 7 items lost in one case). gpu_attention (all cases), the
# list writer's cases under racecheck, gpu_mla quick and tuned; latte-bench at batches 64 and 128 (tree / base, one round).
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"  # base_copy, build
base_copy
build $PWD/build-gpu . "latte latte-bench gpu_mla gpu_attention" & p1=$!
build /tmp/base/build-base /tmp/base "latte latte-bench" & p2=$!
for p in $p1 $p2; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 200 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|busiest|^  " $OUT/gpu_attention.log | cut -c1-250 | head -10 )
echo "at $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 100 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-gpu/tests && LATTE_TEST_FILTER=tuned timeout 100 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep FAIL $OUT/gpu_mla_tuned.log | head -5 )
run() {  # run new|base ROUND BATCHES
  local bin=build-gpu/bench/latte-bench; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_b$3_r$2.json > $OUT/bench_$1_b$3_r$2.log 2>&1
  echo "$1 r$2: $(grep -E '^mla (b|len|lens)' $OUT/bench_$1_b$3_r$2.log | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+).*/\1=\2 [\3] (\4|\5)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' ')"
}
run new 1 64; run base 1 64; run new 1 128; run base 1 128
echo "at $(( $(date +%s) - t0 )) s"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
( cd build-gpu/tests && [ $(( $(date +%s) - t0 )) -lt 420 ] && LATTE_TEST_FILTER="a few long among short: pieces" timeout 150 $SAN --tool racecheck --racecheck-report hazard ./gpu_attention > $OUT/racecheck_attention.log 2>&1; echo "racecheck rc $?: $(grep -E 'RACECHECK SUMMARY|checks' $OUT/racecheck_attention.log | tr '\n' ' ')" )
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
