#!/usr/bin/env bash
# Call 3 (H200): why the merge costs ~12 µs at batch 1 and 4096 (call 2: no merge, LATTE_MLA_UVC_EXPERIMENT=1, took the
# layer from ~149 to ~134 µs). Same dev build; latte-bench --quick at batches 1, 2, 8 (512, 4096), two interleaved
# rounds: off, on, on without the fused kernel's discards (8), E = 4 at batches <= 4 (16), E = 2 at batches <= 2 (32),
# and off / on with LATTE_MLA_DISCARD=0 (every discard of the layer off).
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
(cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_dev.log 2>&1 &&
 cmake --build build-dev -j16 --target latte latte-bench gpu_mla >> $OUT/build_dev.log 2>&1) || { tail -30 $OUT/build_dev.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+), combine ([0-9.]+), wuv_output ([0-9.]+).*/\1=\2 (\5|\7)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
run() {  # run TAG ENV...
  [ $(( $(date +%s) - t0 )) -gt 560 ] && return
  local tag=$1; shift
  env LATTE_BENCH_LENS=512,4096 "$@" timeout 60 build-dev/bench/latte-bench --only mla --quick --batch 1,2,8 --json $OUT/bench_$tag.json > $OUT/bench_$tag.log 2>&1
  echo "$tag: $(fmt $OUT/bench_$tag.log)"
}
for r in 1 2; do
  run off_r$r LATTE_MLA_UV_COMBINE=0
  run on_r$r LATTE_MLA_UV_COMBINE=1
  run x8_r$r LATTE_MLA_UVC_EXPERIMENT=8
  run x16_r$r LATTE_MLA_UVC_EXPERIMENT=16
  run x32_r$r LATTE_MLA_UVC_EXPERIMENT=32
  run offnd_r$r LATTE_MLA_UV_COMBINE=0 LATTE_MLA_DISCARD=0
  run onnd_r$r LATTE_MLA_DISCARD=0
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
