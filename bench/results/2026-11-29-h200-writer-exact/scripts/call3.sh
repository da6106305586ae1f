#!/usr/bin/env bash
# Call 3 (H200): the committed tree against the base (.carry/base: 20b12a2's files) at the batches calls 0-1 did not
# measure (40, 56, 80, 96, 112, 120; latte-bench --quick, two interleaved rounds): the exact pricing changes the cut
# wherever the static schedule splits 2-8 ways; the host model says never worse, batch 72 / 2048 measured +2 µs.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"
base_copy
build $PWD/build-new . "latte latte-bench" & p1=$!
build /tmp/base/build-base /tmp/base "latte latte-bench" & p2=$!
for p in $p1 $p2; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+).*/\1=\2 [\3] (\4|\5)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
run() {  # run new|base TAG BATCHES
  [ $(( $(date +%s) - t0 )) -gt 540 ] && return
  local bin=build-new/bench/latte-bench; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_$2.json > $OUT/bench_$1_$2.log 2>&1
  echo "$1 $2: $(fmt $OUT/bench_$1_$2.log)"
}
for r in 1 2; do for v in new base; do run $v b40-120_r$r 40,56,80,96,112,120; done; done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
