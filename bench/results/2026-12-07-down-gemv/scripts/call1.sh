#!/usr/bin/env bash
# Call 1: the GEMM for a few rows (src/cuda/gemv_bf16.cu) as the layer's down projection at batches 1-16 (the default)
# and, switched on by LATTE_MLA_Q_GEMV=1, its up and W_UK projections (the query side unfused). Its unit test (every
# element against float64: the layer's three shapes, odd sizes, batched and strided operands, padding, PDL) and timing
# table, memcheck of it, gpu_mla in full (the layer with the gemv, and LATTE_MLA_DOWN_GEMV=0 / LATTE_MLA_Q_GEMV=1
# cases), then the layer A/B at batches 1, 2, 4, 8, 16 (and 32, which never takes it), 512 / 2048 / 4096 / mixed,
# variants interleaved: A = LATTE_MLA_DOWN_GEMV=0 (before), B = the default, C = B + LATTE_MLA_Q_GEMV=1.
set -u
t0=$(date +%s)
. "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
build $PWD/build-new . "latte latte-bench gpu_mla gpu_gemv" || { tail -30 $OUT/build_build-new.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
(cd build-new/tests && LATTE_REQUIRE_GPU=1 LATTE_GEMM_TIMING=1 timeout 150 ./gpu_gemv > $OUT/gpu_gemv.log 2>&1; echo "gpu_gemv rc $?: $(tail -1 $OUT/gpu_gemv.log)"; grep -E '^timing|FAIL' $OUT/gpu_gemv.log | head -24)
(cd build-new/tests && timeout 100 compute-sanitizer --tool memcheck ./gpu_gemv > $OUT/gpu_gemv_memcheck.log 2>&1; echo "memcheck rc $?: $(grep -E 'ERROR SUMMARY' $OUT/gpu_gemv_memcheck.log | tail -1)")
(cd build-new/tests && timeout 240 ./gpu_mla > $OUT/gpu_mla.log 2>&1; echo "gpu_mla rc $?: $(tail -1 $OUT/gpu_mla.log)"; grep -E 'FAIL' $OUT/gpu_mla.log | head -10)
echo "tests done $(( $(date +%s) - t0 )) s"
for round in 1 2 3; do
  for v in A B C; do
    [ $(( $(date +%s) - t0 )) -gt 540 ] && break 2
    case $v in A) env="LATTE_MLA_DOWN_GEMV=0";; B) env="LATTE_MLA_DOWN_GEMV=1";; C) env="LATTE_MLA_Q_GEMV=1";; esac
    env $env LATTE_BENCH_LENS=512,2048,4096 timeout 90 build-new/bench/latte-bench --only mla --quick --batch 1,2,4,8,16,32 --json $OUT/ab_r${round}_$v.json > $OUT/ab_r${round}_$v.log 2>&1
    echo "round $round $v rc $?: $(fmt $OUT/ab_r${round}_$v.log)"
    grep -E '^mla b(1|16) len 2048' $OUT/ab_r${round}_$v.log | sed -E 's/.*\| graph: /   graph: /'
  done
done
if [ $(( $(date +%s) - t0 )) -lt 550 ]; then  # batch 128 never takes the gemv: a record of this build there
  LATTE_BENCH_LENS=512,2048,6144 timeout 40 build-new/bench/latte-bench --only mla --quick --batch 128 --json $OUT/b128.json > $OUT/b128.log 2>&1
  echo "b128 rc $?: $(fmt $OUT/b128.log)"
fi
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log ab_*.json && rm -f ab_*.log ab_*.json gpu_mla.log build_*.log gpu_gemv_memcheck.log
