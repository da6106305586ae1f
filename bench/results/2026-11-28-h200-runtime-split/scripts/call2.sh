#!/usr/bin/env bash
# Call 2 (H200): call 1 with the pieces merged by the combine kernel (MlaAttentionParams::seq_pieces) instead of the
# seesaw kernel's last piece (call 1: equal lengths at batch 8-32 +8 to +17 µs, the one-SM combine). Build the tree and the base (HEAD 5168871's attention and plan files over a copy, from .carry/base); gpu_attention (new cases),
# gpu_mla quick and its tuned cases (also the describe-line count fixed last session, not yet run on a GPU), the oracle's
# checks at batches 32 and 16, then latte-bench --quick at batches 8,16,32: the tree with LATTE_MLA_RUNTIME_SPLIT=1 / =0,
# two interleaved rounds; batch 128 tree / base, one round.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"  # base_copy, build
base_copy
build $PWD/build-gpu . "latte latte-bench gpu_mla gpu_attention" & p1=$!
build /tmp/base/build-base /tmp/base "latte latte-bench" & p2=$!
for p in $p1 $p2; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 200 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|run-time|static splits|  " $OUT/gpu_attention.log | grep -v '^ *time' | cut -c1-230 | head -40 )
echo "at $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-gpu/tests && LATTE_TEST_FILTER=tuned timeout 200 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep -E "FAIL" $OUT/gpu_mla_tuned.log | head -5; grep -E "attention at" $OUT/gpu_mla_tuned.log | sort | uniq -c )
( cd build-gpu/tests && LATTE_TEST_FILTER=tune_api_checks timeout 100 ./gpu_mla > $OUT/gpu_mla_tune_api.log 2>&1; echo "gpu_mla tune_api_checks rc $?: $(tail -1 $OUT/gpu_mla_tune_api.log)"; grep FAIL $OUT/gpu_mla_tune_api.log | head -5 )
echo "at $(( $(date +%s) - t0 )) s"
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
mkdir -p $OUT/o32
timeout 120 python3 scripts/oracle_check.py --out $OUT/o32 --batch 32 --lens 512,4096 --no-timing > $OUT/oracle_b32.log 2>&1; echo "oracle b32 rc $?: $(tail -1 $OUT/oracle_b32.log)"
mkdir -p $OUT/o16
timeout 120 python3 scripts/oracle_check.py --out $OUT/o16 --batch 16 --lens 512,2048 --no-timing > $OUT/oracle_b16.log 2>&1; echo "oracle b16 rc $?: $(tail -1 $OUT/oracle_b16.log)"
echo "at $(( $(date +%s) - t0 )) s"
run() {  # run new1|new0|base ROUND BATCHES
  [ $(( $(date +%s) - t0 )) -gt 540 ] && return
  local bin=build-gpu/bench/latte-bench env=1; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench; [ $1 = new0 ] && env=0
  LATTE_MLA_RUNTIME_SPLIT=$env timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_b$3_r$2.json > $OUT/bench_$1_b$3_r$2.log 2>&1
  echo "$1 r$2: $(grep -E '^mla (b|len|lens)' $OUT/bench_$1_b$3_r$2.log | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us.*graph: .*attention ([0-9.]+).*/\1=\2(\3)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' ')"
}
run new1 1 8,16,32; run new0 1 8,16,32; run new0 2 8,16,32; run new1 2 8,16,32
run new1 1 128; run base 1 128
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && cp o32/oracle_check.json oracle_check_b32.json 2>/dev/null; cp o16/oracle_check.json oracle_check_b16.json 2>/dev/null
tar czf logs.tgz *.log o32 o16 bench_*_r*.json && rm -rf *.log o32 o16 bench_*_r*.json
