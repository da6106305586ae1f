#!/usr/bin/env bash
# One device call (H200, 2026-11-28): the committed tree's final checks (build, gpu_attention, gpu_mla quick, the oracle's
# checks and graph-replay timing beside PyTorch at batch 128, latte-bench's layer with JSON), then the layer at serving
# batch sizes: latte-bench --batch 1,8,32,64 (each tuned for its batch) and the oracle at batch 8 (every check, and
# PyTorch's absorbed pipeline timed beside latte at 512 / 2048 / 4096). Run from the repository root with the oracle in
# .carry/oracle/ (the call's carry); logs under $OUT (at most 8 files come back: the logs go into logs.tgz).
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target latte latte-bench gpu_mla gpu_attention >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)" )
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)" )
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
mkdir -p $OUT/o128 $OUT/o8
timeout 200 python3 scripts/oracle_check.py --out $OUT/o128 --flash > $OUT/oracle.log 2>&1
echo "oracle b128 rc $?: $(tail -1 $OUT/oracle.log)"
timeout 150 build-gpu/bench/latte-bench --only mla --json $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench b128 rc $?"
grep -E "^mla (len|lens)|^ceilings" $OUT/bench.log | grep -v untuned | cut -c1-150
echo "at $(( $(date +%s) - t0 )) s"
timeout 150 build-gpu/bench/latte-bench --only mla --quick --batch 1,8,32,64 --json $OUT/bench_batches.json > $OUT/bench_batches.log 2>&1
echo "bench batches rc $?"
grep -E "^mla b|^ceilings" $OUT/bench_batches.log | cut -c1-230
timeout 120 python3 scripts/oracle_check.py --out $OUT/o8 --batch 8 --lens 512,4096 --timing-lens 512,2048,4096 > $OUT/oracle_b8.log 2>&1
echo "oracle b8 rc $?"; sed -n '/^rope tables/,$p' $OUT/oracle_b8.log | grep -v '^qknorm'
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && cp o128/oracle_anchors.json oracle_anchors.json; cp o128/oracle_check.json oracle_check.json
cp o8/oracle_anchors.json oracle_anchors_b8.json; cp o8/oracle_check.json oracle_check_b8.json
tar czf logs.tgz *.log o128 o8 && rm -rf o128 o8 build.log gpu_mla_quick.log gpu_attention.log oracle.log oracle_b8.log bench_batches.log
