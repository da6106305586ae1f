#!/usr/bin/env bash
# Call 2 (H200): the stream deal (MlaAttentionParams::stream_deal; one split, equal lengths, where its model beats whole
# items in rounds). gpu_attention (8 new cases: the list and pieces against the host's model), gpu_mla's two new cases
# and quick; then latte-bench --quick, one build: LATTE_MLA_STREAM_DEAL=1 (default) / 0 / 2 (unequal lengths too), two
# interleaved rounds at batches 33-120, then batch 128 (=1 / =0: its equal lengths must not change).
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"  # build
build $PWD/build-gpu . "latte latte-bench gpu_mla gpu_attention" || { tail -20 $OUT/build_*.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 200 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|stream|  " $OUT/gpu_attention.log | grep -v '^ *time' | cut -c1-250 | head -30 )
echo "at $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && LATTE_TEST_FILTER=stream timeout 120 ./gpu_mla > $OUT/gpu_mla_stream.log 2>&1; echo "gpu_mla stream rc $?: $(tail -1 $OUT/gpu_mla_stream.log)"; grep FAIL $OUT/gpu_mla_stream.log | head -5 )
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
echo "at $(( $(date +%s) - t0 )) s"
run() {  # run MODE ROUND BATCHES
  [ $(( $(date +%s) - t0 )) -gt 540 ] && return
  LATTE_MLA_STREAM_DEAL=$1 timeout 100 build-gpu/bench/latte-bench --only mla --quick --batch $3 --json $OUT/bench_s$1_b$3_r$2.json > $OUT/bench_s$1_b$3_r$2.log 2>&1
  echo "s$1 r$2: $(grep -E '^mla (b|len|lens)' $OUT/bench_s$1_b$3_r$2.log | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+).*/\1=\2 [\3] (\4|\5)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' ')"
}
B=33,40,48,64,80,96,100,120
run 1 1 $B; run 0 1 $B; run 2 1 $B
run 2 2 $B; run 0 2 $B; run 1 2 $B
run 1 1 128; run 0 1 128; run 0 2 128; run 1 2 128
echo "at $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && [ $(( $(date +%s) - t0 )) -lt 380 ] && LATTE_TEST_FILTER=tuned timeout 200 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log 2>/dev/null)" )
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
