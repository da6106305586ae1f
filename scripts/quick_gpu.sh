#!/usr/bin/env bash
# Quick GPU iteration (lead's bisect helper): build for sm_90a, run the GPU tests; if the MLA layer test fails,
# rerun it with the simple attention and with the simple GEMM to localize the fault. Logs under $1.
out=${1:-/tmp/out}; mkdir -p "$out"
nvidia-smi -L; nvcc --version | tail -1
cmake -S . -B build-gpu -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90a -DLATTE_BUILD_BENCH=${BENCH:-OFF} >"$out/build.log" 2>&1 &&
  cmake --build build-gpu -j16 >>"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
cd build-gpu
for t in tests/gpu_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  echo "=== $name"
  LATTE_REQUIRE_GPU=1 timeout ${TEST_TIMEOUT:-240} "$t" >"$out/$name.log" 2>&1; rc=$?
  echo "rc=$rc"; grep -E "passed|FAIL" "$out/$name.log" | head -${SHOW:-12}
  if [ $rc -ne 0 ] && [ "$name" = gpu_mla ]; then
    echo "=== gpu_mla with LATTE_MLA_SIMPLE_ATTENTION=1"
    LATTE_MLA_SIMPLE_ATTENTION=1 LATTE_REQUIRE_GPU=1 timeout 240 "$t" >"$out/gpu_mla_simple_attn.log" 2>&1; echo "rc=$?"
    grep -E "passed|FAIL" "$out/gpu_mla_simple_attn.log" | head -8
    echo "=== gpu_mla with LATTE_MLA_SIMPLE_GEMM=1"
    LATTE_MLA_SIMPLE_GEMM=1 LATTE_REQUIRE_GPU=1 timeout 240 "$t" >"$out/gpu_mla_simple_gemm.log" 2>&1; echo "rc=$?"
    grep -E "passed|FAIL" "$out/gpu_mla_simple_gemm.log" | head -8
  fi
done
