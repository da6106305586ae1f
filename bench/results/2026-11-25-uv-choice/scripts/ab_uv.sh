#!/usr/bin/env bash
# The tune's W_UV engine, A/B in one release build: LATTE_MLA_UV_SM90=0 (the fastest in isolation, mostly cuBLASLt),
# =1 (the sm90 one-tile W_UV, launched early by the attention), unset (the default rule: sm90 within 15% at 6593224, 25% after, retimed);
# interleaved rounds of latte-bench --only mla --quick (graph replay), each tune's w_uv line kept; then gpu_mla's tuned
# cases (the new forced case among them). ROUNDS (default 2).
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-ab -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
cmake --build build-ab -j16 --target latte latte-bench gpu_mla >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-ab/tests && LATTE_TEST_FILTER=tuned timeout 120 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep -A7 "uv sm90: tuned" $OUT/gpu_mla_tuned.log | grep -E "w_uv|tuned in" )
run() {  # run 0|1|d ROUND (skipped past 480 s)
  [ $(( $(date +%s) - t0 )) -gt 480 ] && return
  local log=$OUT/ab_uv$1_$2.log
  if [ $1 = d ]; then timeout 100 build-ab/bench/latte-bench --only mla --quick > $log 2>&1
  else LATTE_MLA_UV_SM90=$1 timeout 100 build-ab/bench/latte-bench --only mla --quick > $log 2>&1; fi
  echo -n "uv=$1 r$2: "; grep -E '^mla (len|lens)' $log | grep -v untuned | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*/\2=\3/' | tr '\n' ' ' | cut -c1-300; echo
  echo "   $(grep -E '^ *w_uv:' $log | sed -E 's/ *w_uv: //; s/ \(heuristic.*//' | tr '\n' '|')"
}
for r in $(seq 1 ${ROUNDS:-2}); do
  if [ $((r % 2)) = 1 ]; then run 0 $r; run 1 $r; run d $r; else run d $r; run 1 $r; run 0 $r; fi
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f ab_uv*.log build.log
