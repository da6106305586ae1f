#!/usr/bin/env bash
# The committed tree with the tune's W_UV rule at 25%: build, gpu_attention, gpu_mla quick (untuned cases) and its
# tuned cases (the forced W_UV case among them), the oracle (reference check + PyTorch anchors timed beside latte),
# latte-bench's layer with JSON. As ../../2026-11-25-h200-pe-regs/scripts/call3_h200_final.sh plus the tuned cases.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-gpu -j16 --target latte latte-bench gpu_mla gpu_attention >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)" )
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)" )
( cd build-gpu/tests && LATTE_TEST_FILTER=tuned timeout 120 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep -E "^ *w_uv:" $OUT/gpu_mla_tuned.log | head -8 )
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
mkdir -p $OUT/oracle
timeout 300 python3 scripts/oracle_check.py --out $OUT/oracle --flash > $OUT/oracle.log 2>&1
echo "oracle rc $?: $(tail -1 $OUT/oracle.log)"
timeout 150 build-gpu/bench/latte-bench --only mla --json $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc $?"
grep -E "^mla (len|lens)|^ceilings|^ *w_uv:" $OUT/bench.log | grep -v untuned | cut -c1-150
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && cp oracle/*.json . 2>/dev/null; tar czf logs.tgz *.log oracle/ && rm -rf oracle gpu_mla_quick.log gpu_mla_tuned.log gpu_attention.log build.log
