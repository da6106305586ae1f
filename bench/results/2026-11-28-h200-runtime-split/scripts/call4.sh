#!/usr/bin/env bash
# Call 4 (H200): call 3's tree, the list's writer without LPT where static splits run as one split with run-time pieces
# (the snake only: call 3 had the query phase +3 / +6 / +9 µs at batches 8 / 16 / 32 with mixed lengths, the writer
# outlasting the query kernel). gpu_attention, gpu_mla quick and tuned, the oracle at batch 32, then latte-bench --quick
# at batches 8,16,32 (LATTE_MLA_RUNTIME_SPLIT=1 / =0, two interleaved rounds). No base build (batch 128 has no piece
# slots beyond its batch: this change cannot reach it).
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"  # base_copy, build
build $PWD/build-gpu . "latte latte-bench gpu_mla gpu_attention" || { tail -20 $OUT/build_*.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 200 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|run-time|static splits|  " $OUT/gpu_attention.log | grep -v '^ *time' | cut -c1-230 | head -40 )
echo "at $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-gpu/tests && LATTE_TEST_FILTER=tuned timeout 200 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep -E "FAIL" $OUT/gpu_mla_tuned.log | head -5; grep -E "attention at" $OUT/gpu_mla_tuned.log | sort | uniq -c )
echo "at $(( $(date +%s) - t0 )) s"
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
mkdir -p $OUT/o32
timeout 120 python3 scripts/oracle_check.py --out $OUT/o32 --batch 32 --lens 512,4096 --no-timing > $OUT/oracle_b32.log 2>&1; echo "oracle b32 rc $?: $(tail -1 $OUT/oracle_b32.log)"
echo "at $(( $(date +%s) - t0 )) s"
run() {  # run new1|new0|base ROUND BATCHES
  [ $(( $(date +%s) - t0 )) -gt 540 ] && return
  local bin=build-gpu/bench/latte-bench env=1; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench; [ $1 = new0 ] && env=0
  LATTE_MLA_RUNTIME_SPLIT=$env timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_b$3_r$2.json > $OUT/bench_$1_b$3_r$2.log 2>&1
  echo "$1 r$2: $(grep -E '^mla (b|len|lens)' $OUT/bench_$1_b$3_r$2.log | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us.*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+).*/\1=\2(\3|\4)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' ')"
}
run new1 1 8,16,32; run new0 1 8,16,32; run new0 2 8,16,32; run new1 2 8,16,32
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && cp o32/oracle_check.json oracle_check_b32.json 2>/dev/null
tar czf logs.tgz *.log o32 bench_*_r*.json && rm -rf *.log o32 bench_*_r*.json
