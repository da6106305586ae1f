#!/usr/bin/env bash
# Call 5 (H200): the review's refactor (mla_schedule_equal_size for the exact walk and gpu_attention's check, one
# helper reading LATTE_MLA_FORCE_PIECES; only mla_schedule_split's PTX differs, same arithmetic) against the base
# (.carry/base: d3bfcb2's files). gpu_attention (all cases), gpu_mla quick and tuned; latte-bench --quick at batches
# 72 and 128, one round each. Prediction: every figure the same within the spread.
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
  local bin=build-new/bench/latte-bench; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  LATTE_BENCH_LENS=${4:-512,2048,4096} timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_$2.json > $OUT/bench_$1_$2.log 2>&1
  echo "$1 $2: $(fmt $OUT/bench_$1_$2.log)"
}
run new b72 72 1024,1536,4096; run base b72 72 1024,1536,4096; run new b128 128 512,2048,4096,6144; run base b128 128 512,2048,4096,6144
( cd build-new/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 60 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-new/tests && LATTE_TEST_FILTER=tuned timeout 60 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep FAIL $OUT/gpu_mla_tuned.log | head -5 )
( cd build-new/tests && timeout 220 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|busiest" $OUT/gpu_attention.log | cut -c1-250 | head -10 )
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
