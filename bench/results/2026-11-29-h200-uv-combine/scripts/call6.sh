#!/usr/bin/env bash
# Call 6 (H200): the committed tree (8ff5bbe), two more interleaved rounds of latte-bench --quick, LATTE_MLA_UV_COMBINE=1
# / 0 in one release build: batches 1, 2, 4, 8, 16, 32 at 512, 2048, 4096 and mixed (rounds 3-4 of the A/B after call 4).
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"
build $PWD/build-new . "latte latte-bench gpu_mla" || { tail -30 $OUT/build_build-new.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
echo "checks done $(( $(date +%s) - t0 )) s"
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+), combine ([0-9.]+), wuv_output ([0-9.]+).*/\1=\2 (\5|\7)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
run() {  # run on|off TAG BATCHES [env]
  [ $(( $(date +%s) - t0 )) -gt 540 ] && return
  local v=1; [ $1 = off ] && v=0
  env LATTE_MLA_UV_COMBINE=$v ${4:-X=1} timeout 100 build-new/bench/latte-bench --only mla --quick --batch $3 --json $OUT/bench_$1_$2.json > $OUT/bench_$1_$2.log 2>&1
  echo "$1 $2: $(fmt $OUT/bench_$1_$2.log)"
}
for r in 3 4; do
  for v in on off; do
    run $v small_r$r 1,2,4,8,16,32 LATTE_BENCH_LENS=512,2048,4096
  done
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
