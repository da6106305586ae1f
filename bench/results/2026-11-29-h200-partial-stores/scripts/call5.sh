#!/usr/bin/env bash
# Call 5 (H200): a split's or piece's fp32 partial stored evict-last in L2 (dev experiment 256, st.global with an
# evict_last cache hint; the KV stream is evict-first), so that more of it is still in L2 when the combine reads and
# drops it, against experiment 0, in one dev build. latte-bench --quick, two interleaved rounds: batches 8, 32 at 2048,
# 4096 and mixed; 72, 100 at 1024, 4096 and mixed; 128.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
( cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_build-dev.log 2>&1 &&
  cmake --build build-dev -j16 --target latte-bench >> $OUT/build_build-dev.log 2>&1 ) || { tail -20 $OUT/build_*.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+), combine ([0-9.]+), wuv_output ([0-9.]+).*/\1=\2 (\5|\7)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
run() {  # run TAG BATCHES EXP [env]
  [ $(( $(date +%s) - t0 )) -gt 300 ] && return
  env LATTE_MLA_WGMMA_EXPERIMENT=$3 ${4:-X=1} timeout 100 build-dev/bench/latte-bench --only mla --quick --batch $2 --json $OUT/bench_e$3_$1.json > $OUT/bench_e$3_$1.log 2>&1
  echo "e$3 $1: $(fmt $OUT/bench_e$3_$1.log)"
}
for r in 1 2; do
  for e in 0 256; do
    run small_r$r 8,32 $e LATTE_BENCH_LENS=2048,4096
    run mid_r$r 72,100 $e LATTE_BENCH_LENS=1024,4096
    run b128_r$r 128 $e
  done
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
