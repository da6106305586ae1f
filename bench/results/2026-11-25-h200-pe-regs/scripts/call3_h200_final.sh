#!/usr/bin/env bash
# the committed tree (8eeb11a, release kernel as 7ba81e5) on the H200: build, gpu_attention, gpu_mla quick, the oracle
# (reference check + PyTorch anchors timed beside latte), latte-bench's layer with JSON; SYNCCHECK_FILTER=NAME: then
# synccheck over gpu_mla's cases whose name holds NAME (../../2026-11-25-h200-sanitize ran it so on an H200 and an H100);
# TUNED_CASES=1: gpu_mla's tuned cases too, the tunes' w_uv lines printed (../../2026-11-25-uv-choice ran it so)
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target latte latte-bench gpu_mla gpu_attention >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)" )
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)" )
if [ "${TUNED_CASES:-0}" = 1 ]; then
  ( cd build-gpu/tests && LATTE_TEST_FILTER=tuned timeout 120 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep -E "^ *w_uv:" $OUT/gpu_mla_tuned.log | head -8 )
fi
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
mkdir -p $OUT/oracle
timeout 300 python3 scripts/oracle_check.py --out $OUT/oracle --flash > $OUT/oracle.log 2>&1
echo "oracle rc $?: $(tail -1 $OUT/oracle.log)"
timeout 150 build-gpu/bench/latte-bench --only mla --json $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc $?"
grep -E "^mla (len|lens)|^ceilings|^ *w_uv:" $OUT/bench.log | grep -v untuned | cut -c1-150
echo "total $(( $(date +%s) - t0 )) s"
if [ -n "${SYNCCHECK_FILTER:-}" ]; then
  ( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_FILTER="$SYNCCHECK_FILTER" timeout 200 compute-sanitizer --tool synccheck ./gpu_mla > $OUT/synccheck_gpu_mla_long.log 2>&1; echo "synccheck gpu_mla [$SYNCCHECK_FILTER] rc $?: $(grep SUMMARY $OUT/synccheck_gpu_mla_long.log) $(grep -E "passed" $OUT/synccheck_gpu_mla_long.log | tail -1)" )
fi
cd $OUT && cp oracle/*.json . 2> /dev/null; tar czf logs.tgz *.log oracle/ && rm -rf oracle gpu_mla_quick.log gpu_mla_tuned.log
