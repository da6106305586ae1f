#!/usr/bin/env bash
# The committed tree with the tune's W_UV rule at 25% (calls 4-5): build, gpu_attention, gpu_mla quick (untuned cases)
# and its tuned cases (the forced W_UV case among them), the oracle (reference check + PyTorch anchors timed beside
# latte), latte-bench's layer with JSON: the pe-regs final script with its TUNED_CASES knob (the calls ran a copy of
# it with those lines added; the knob is the same lines)
exec env TUNED_CASES=1 bash "$(dirname "$0")/../../2026-11-25-h200-pe-regs/scripts/call3_h200_final.sh"
