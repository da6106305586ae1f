#!/usr/bin/env bash
# Call 4 (H200): equal lengths' exact pricing with an item's fixed cost fitted to calls 0-3 (kMlaEqualItemFixedQ = 20
# quarter tiles, a piece 22; was 12 / 14) against the base (.carry/base: the committed exact pricing's
# mla_attention_schedule.cuh). gpu_attention (all cases), gpu_mla quick and tuned; latte-bench --quick at batches 40,
# 48, 72, 79, 100 and lengths 1024, 1536, 2048, 4096, 6144 (LATTE_BENCH_LENS, new) plus mixed, two interleaved rounds.
# Predictions (attention phase, µs; the two-term fit t = 0.40 busiest + 0.14 average + 6): b40 / 1024 54 -> 46,
# 1536 70 -> 62; b48 / 4096 155 -> 144; b72 / 1024 100 -> 85, 1536 141 -> 115, 4096 242 -> 233; b79 / 1024 102 -> 86,
# 1536 144 -> 117, 4096 248 -> 237; b100 / 4096 296 -> 284; every other case unchanged.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"
base_copy
build $PWD/build-new . "latte latte-bench gpu_mla gpu_attention" & p1=$!
build /tmp/base/build-base /tmp/base "latte latte-bench" & p2=$!
for p in $p1 $p2; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+).*/\1=\2 [\3] (\4|\5)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
run() {  # run new|base TAG BATCHES
  [ $(( $(date +%s) - t0 )) -gt 500 ] && return
  local bin=build-new/bench/latte-bench; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  LATTE_BENCH_LENS=1024,1536,2048,4096,6144 timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_$2.json > $OUT/bench_$1_$2.log 2>&1
  echo "$1 $2: $(fmt $OUT/bench_$1_$2.log)"
}
for r in 1 2; do for v in new base; do run $v b40-100_r$r 40,48,72,79,100; done; done
echo "at $(( $(date +%s) - t0 )) s"
( cd build-new/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 60 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-new/tests && LATTE_TEST_FILTER=tuned timeout 60 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep FAIL $OUT/gpu_mla_tuned.log | head -5 )
( cd build-new/tests && timeout 220 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|busiest" $OUT/gpu_attention.log | cut -c1-250 | head -10 )
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
