#!/usr/bin/env bash
# Call 6 (H200): the tune's record of the attention's splits fixed (copied into the plan's shape); gpu_mla's tuned
# cases and describe; batch 128 again, two more interleaved rounds tree / base (call 5 had one round each, 4096 and
# 6144 within their known spread).
set -u
t0=$(date +%s)
. "$(dirname "$0")/lib.sh"  # base_copy, build (the calls ran these lines inline)
base_copy
build $PWD/build-gpu . "latte latte-bench gpu_mla" & p1=$!
build /tmp/base/build-base /tmp/base "latte latte-bench" & p2=$!
for p in $p1 $p2; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && LATTE_TEST_FILTER=tuned timeout 200 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep -E "FAIL" $OUT/gpu_mla_tuned.log | head -5; grep -E "^attention at|tuned in" $OUT/gpu_mla_tuned.log | head -20 )
run() {  # run new|base ROUND
  [ $(( $(date +%s) - t0 )) -gt 450 ] && return
  local bin=build-gpu/bench/latte-bench; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  timeout 100 $bin --only mla --quick --json $OUT/bench_$1_r$2.json > $OUT/bench_$1_r$2.log 2>&1
  echo "$1 r$2: $(grep -E '^mla (len|lens)' $OUT/bench_$1_r$2.log | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us.*graph: .*attention ([0-9.]+).*/\1=\2(\3)/' | sed -E 's/lens 1..8191 mixed/mixed/' | tr '\n' ' ')"
}
run base 2; run new 2; run new 3; run base 3
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*_r*.json && rm -rf *.log bench_*_r*.json
