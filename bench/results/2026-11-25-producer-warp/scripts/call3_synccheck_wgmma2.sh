#!/usr/bin/env bash
# gpu_mla (LATTE_TEST_QUICK) under synccheck with the default attention kernel and with wgmma2 (v2.1), both with
# --force-blocking-launches from the start (two synccheck processes at once ran the sanitizer out of GPU memory at
# cuBLASLt's launches; bench/results/2026-11-25-uv-choice/, calls 8-10), one call's whole budget.
set -u
cd "$(dirname "$0")/../../../.."
wrap=$(mktemp)
printf '#!/bin/sh\nexec /usr/local/cuda/bin/compute-sanitizer --force-blocking-launches "$@"\n' > "$wrap"
chmod +x "$wrap"
GPU_SANITIZE_SAN="$wrap" GPU_SANITIZE_BUDGET_S=575 GPU_SANITIZE_JOBS=2 GPU_SANITIZE_TOOLS=synccheck \
  GPU_SANITIZE_PROGRAMS=gpu_mla GPU_SANITIZE_FUZZ_S=0 GPU_SANITIZE_INFO= \
  bash scripts/gpu_sanitize.sh "$OUT/san" 2>&1 | tee "$OUT/san_stdout.log"
