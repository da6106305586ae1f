#!/usr/bin/env bash
# call 1: the down projection's shape (M 128, N 2112, K 7168) in our sm90 GEMM, every bn and mode with the timing
# experiments (no A / stores / fixup), and the plain weight stream of its bytes in down's geometry (tma_stream ring:
# 132 CTAs of 192 rows × 576 columns ≈ bn 192 × 12 k-splits), to know the room before building a new fixup
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_gemm_sm90 >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DLATTE_HAVE_SM90A=1 -Isrc bench/probes/tma_stream.cu src/cuda/tma.cu -o build-exp/tma_stream >> $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
LATTE_GEMM_TIMING=1 LATTE_GEMM_TIMING_ONLY=down LATTE_GEMM_TIMING_ALL=down timeout 200 build-exp/tests/gpu_gemm_sm90 > $OUT/gemm_down.log 2>&1
echo "gemm rc $?"; grep -E 'time|checks' $OUT/gemm_down.log
build-exp/tma_stream 29.2 ring 192 576 > $OUT/stream_ring.log 2>&1; echo "ring rc $?"; cat $OUT/stream_ring.log
build-exp/tma_stream 30.3 > $OUT/stream_plain.log 2>&1; echo "plain rc $?"; cat $OUT/stream_plain.log | head -30
echo "total $(( $(date +%s) - t0 )) s"
