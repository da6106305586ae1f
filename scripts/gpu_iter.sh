#!/usr/bin/env bash
# gpu_iter.sh OUTDIR: one device call for kernel iteration (a subset of gpu_check.sh, quicker): build for sm_90a, the
# Hopper GEMM's unit test and then its timing table alone on the GPU, gpu_mla, latte-bench --only mla (tuned layer,
# phases). Each step has a timeout, logs go under OUTDIR, a short summary is printed last.
# ITER_STEPS (default "build,gemm,mla,bench") picks steps; ITER_BENCH_ARGS adds latte-bench arguments.
set -u
out=$(mkdir -p "${1:?usage: gpu_iter.sh OUTDIR}" && cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2
steps=${ITER_STEPS:-build,gemm,mla,bench}
want() { case ",$steps," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
summary=""
note() { summary="$summary$1"$'\n'; echo "[gpu_iter] $1"; }
nvidia-smi -L | tee "$out/info.log"
if want build; then
  t0=$(date +%s)
  if cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a >"$out/build.log" 2>&1 &&
     cmake --build build-gpu -j"$(nproc)" >>"$out/build.log" 2>&1; then
    note "build pass $(( $(date +%s) - t0 ))s"
  else
    tail -30 "$out/build.log"; note "build FAIL"; echo "$summary"; exit 1
  fi
fi
cd build-gpu || exit 1
if want gemm; then
  LATTE_REQUIRE_GPU=1 timeout 180 tests/gpu_gemm_sm90 >"$out/gemm.log" 2>&1; rc=$?
  note "gpu_gemm_sm90 rc=$rc: $(tail -1 "$out/gemm.log")"
  grep FAIL "$out/gemm.log" | head -8
  LATTE_GEMM_TIMING=1 LATTE_REQUIRE_GPU=1 timeout 120 tests/gpu_gemm_sm90 >"$out/gemm_timing.log" 2>&1
  grep -E "^  time" "$out/gemm_timing.log"
fi
if want mla; then
  LATTE_REQUIRE_GPU=1 timeout 300 tests/gpu_mla >"$out/mla.log" 2>&1; rc=$?
  note "gpu_mla rc=$rc: $(tail -1 "$out/mla.log")"
  grep -E "FAIL" "$out/mla.log" | head -8
fi
if want bench; then
  timeout 240 bench/latte-bench --only mla --json "$out/bench.json" ${ITER_BENCH_ARGS:-} >"$out/bench.log" 2>&1
  note "latte-bench rc=$?"
  sed -n '/^MLA decode layer/,$p' "$out/bench.log" | head -40
fi
echo "==== gpu_iter summary"; printf '%s' "$summary"
