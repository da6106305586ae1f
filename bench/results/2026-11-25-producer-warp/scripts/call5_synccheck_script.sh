#!/usr/bin/env bash
# scripts/gpu_sanitize.sh as committed (synccheck now with --force-blocking-launches from the start): gpu_mla and
# gpu_mla:wgmma2 under synccheck, two at once
set -u
cd "$(dirname "$0")/../../../.."
GPU_SANITIZE_BUDGET_S=560 GPU_SANITIZE_JOBS=2 GPU_SANITIZE_TOOLS=synccheck GPU_SANITIZE_PROGRAMS=gpu_mla \
  GPU_SANITIZE_FUZZ_S=0 GPU_SANITIZE_INFO= bash scripts/gpu_sanitize.sh "$OUT/san" 2>&1 | tee "$OUT/san_stdout.log"
