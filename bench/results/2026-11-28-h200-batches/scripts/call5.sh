#!/usr/bin/env bash
# Call 5 (H200), the final tree: the combine v2 (three shapes, a plain launch) and the tune's W_UV rule (the early-launch
# preference only behind an unsplit attention). Build the tree and the base (92c7e7f's mla_attention.cu and mla_plan.cu
# over a copy, from .carry/base); gpu_attention, gpu_mla quick and its tuned cases, the oracle's checks at batch 128
# (no timing: call 1 timed the peers) and at batch 8 (with timing), then latte-bench --quick at batches 1,4,16,32
# (two rounds) and 128 (one), interleaved tree / base.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"  # base_copy, build (the calls ran these lines inline)
base_copy
build $PWD/build-gpu . "latte latte-bench gpu_mla gpu_attention" & p1=$!
build /tmp/base/build-base /tmp/base "latte latte-bench" & p2=$!
for p in $p1 $p2; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|combine" $OUT/gpu_attention.log | cut -c1-160 )
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-gpu/tests && LATTE_TEST_FILTER=tuned timeout 200 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep -E "FAIL" $OUT/gpu_mla_tuned.log | head -5; grep -A8 "split attention: tuned" $OUT/gpu_mla_tuned.log | grep -E "w_uv|attention at" )
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
mkdir -p $OUT/o128 $OUT/o8
timeout 150 python3 scripts/oracle_check.py --out $OUT/o128 --no-timing > $OUT/oracle.log 2>&1; echo "oracle b128 rc $?: $(tail -1 $OUT/oracle.log)"
timeout 100 python3 scripts/oracle_check.py --out $OUT/o8 --batch 8 --lens 512,4096 --timing-lens 512,2048,4096 > $OUT/oracle_b8.log 2>&1
echo "oracle b8 rc $?: $(tail -1 $OUT/oracle_b8.log)"; sed -n '/^timing/,/^ *4096/p' $OUT/oracle_b8.log
echo "at $(( $(date +%s) - t0 )) s"
run() {  # run new|base ROUND BATCHES
  [ $(( $(date +%s) - t0 )) -gt 530 ] && return
  local bin=build-gpu/bench/latte-bench; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_b$3_r$2.json > $OUT/bench_$1_b$3_r$2.log 2>&1
  echo "$1 r$2: $(grep -E '^mla (b|len|lens)' $OUT/bench_$1_b$3_r$2.log | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us.*graph: .*attention ([0-9.]+).*/\1=\2(\3)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' ')"
}
run new 1 1,4,16,32; run base 1 1,4,16,32; run base 2 1,4,16,32; run new 2 1,4,16,32
run new 1 128; run base 1 128
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && cp o8/oracle_anchors.json oracle_anchors_b8.json; cp o128/oracle_check.json oracle_check.json
cp o8/oracle_check.json oracle_check_b8.json; cp bench_new_b1,4,16,32_r1.json bench_batches.json 2>/dev/null
tar czf logs.tgz *.log o128 o8 bench_*_r*.json && rm -rf *.log o128 o8 bench_*_r*.json
