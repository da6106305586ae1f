#!/usr/bin/env bash
# Call 3 (H200): call 2 showed no attention gain from the stream deal at batches 40-120, and the writer's walk (thread 0,
# lambdas kept in local memory) outlasting the query kernel (+13-23 µs of query phase, also at batch 128). Here: the
# walk without lambdas and skipped where the average cannot pay; gpu_attention's and gpu_mla's stream cases; then is
# the attention's throughput at batches 40-100 bounded by the bench cache's batch stride (8192 rows × 1152 B = 9 MiB,
# every sequence's tile t at the same low address bits)? latte-bench at capacity 8192 and 8200 (LATTE_BENCH_CAPACITY),
# stream deal 1 / 0, two interleaved rounds.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"  # build
build $PWD/build-gpu . "latte latte-bench gpu_mla gpu_attention" || { tail -20 $OUT/build_*.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && LATTE_TEST_FILTER=stream timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention stream rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|^  " $OUT/gpu_attention.log | cut -c1-250 | head -20 )
( cd build-gpu/tests && LATTE_TEST_FILTER=stream timeout 120 ./gpu_mla > $OUT/gpu_mla_stream.log 2>&1; echo "gpu_mla stream rc $?: $(tail -1 $OUT/gpu_mla_stream.log)"; grep FAIL $OUT/gpu_mla_stream.log | head -5 )
echo "at $(( $(date +%s) - t0 )) s"
run() {  # run MODE CAPACITY ROUND BATCHES
  [ $(( $(date +%s) - t0 )) -gt 520 ] && return
  LATTE_MLA_STREAM_DEAL=$1 LATTE_BENCH_CAPACITY=$2 timeout 100 build-gpu/bench/latte-bench --only mla --quick --batch $4 --json $OUT/bench_s$1_c$2_b$4_r$3.json > $OUT/bench_s$1_c$2_b$4_r$3.log 2>&1
  echo "s$1 c$2 r$3: $(grep -E '^mla (b|len|lens)' $OUT/bench_s$1_c$2_b$4_r$3.log | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+).*/\1=\2 [\3] (\4|\5)/' | sed -E 's/ len / /; s/lens 1..[0-9]+ mixed/mixed/' | tr '\n' ' ')"
}
B=40,48,64,100
run 1 8192 1 $B; run 0 8192 1 $B; run 1 8200 1 $B; run 0 8200 1 $B
run 0 8200 2 $B; run 1 8200 2 $B; run 0 8192 2 $B; run 1 8192 2 $B
run 1 8192 1 128; run 0 8192 1 128; run 1 8200 1 128; run 0 8200 1 128
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
