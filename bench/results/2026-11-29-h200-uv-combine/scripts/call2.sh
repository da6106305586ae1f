#!/usr/bin/env bash
# Call 2 (H200): the merge's loads in fewer round trips (v2: the LSEs kept in registers, the first chunk's rows issued
# with them, 64 floats a lane in flight), and where the fused kernel's time goes. One dev build
# (-DLATTE_DEV_EXPERIMENTS): gpu_mla quick and the unfolded cases; latte-bench --quick at batches 1, 8, 32 (512, 4096),
# two interleaved rounds of: off (LATTE_MLA_UV_COMBINE=0), on, on without the early launch (LATTE_MLA_UV_EARLY=0),
# and on with LATTE_MLA_UVC_EXPERIMENT 1 (no merge), 2 (no W_UV loads), 4 (no product), 7 (none of the three).
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
(cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_dev.log 2>&1 &&
 cmake --build build-dev -j16 --target latte latte-bench gpu_mla >> $OUT/build_dev.log 2>&1) || { tail -30 $OUT/build_dev.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
cd build-dev/tests
timeout 90 env LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | cut -c1-300 | head -8
timeout 90 env "LATTE_TEST_FILTER=split attention" ./gpu_mla > $OUT/gpu_mla_split.log 2>&1; echo "gpu_mla split attention rc $?: $(tail -1 $OUT/gpu_mla_split.log)"; grep FAIL $OUT/gpu_mla_split.log | cut -c1-300 | head -5
cd ../..
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+), combine ([0-9.]+), wuv_output ([0-9.]+).*/\1=\2 (\5|\7)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
run() {  # run TAG ENV...
  [ $(( $(date +%s) - t0 )) -gt 560 ] && return
  local tag=$1; shift
  env LATTE_BENCH_LENS=512,4096 "$@" timeout 60 build-dev/bench/latte-bench --only mla --quick --batch 1,8,32 --json $OUT/bench_$tag.json > $OUT/bench_$tag.log 2>&1
  echo "$tag: $(fmt $OUT/bench_$tag.log)"
}
for r in 1 2; do
  run off_r$r LATTE_MLA_UV_COMBINE=0
  run on_r$r LATTE_MLA_UV_COMBINE=1
  run late_r$r LATTE_MLA_UV_EARLY=0
  run x1_r$r LATTE_MLA_UVC_EXPERIMENT=1
  run x2_r$r LATTE_MLA_UVC_EXPERIMENT=2
  run x4_r$r LATTE_MLA_UVC_EXPERIMENT=4
  run x7_r$r LATTE_MLA_UVC_EXPERIMENT=7
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
