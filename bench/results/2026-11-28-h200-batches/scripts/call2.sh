#!/usr/bin/env bash
# Call 2 (H200): the combine v2 (the tree) against the tree before it (a copy with .carry/base's files over it: 92c7e7f's
# src/cuda/mla_attention.cu; the device copy's git metadata is the session start's), both built in this call:
# gpu_attention and gpu_mla quick on HEAD, bitcmp.py on both (y and the appended rows bit for bit), then ROUNDS (2)
# interleaved rounds of latte-bench --only mla --quick --batch $BATCHES (default 1,4,16,32) on each build. Logs into
# logs.tgz. Call 2 ran it with the first v2 (one shape, <4, 16>; BATCHES 1,4,16), call 3 with the three shapes.
set -u
t0=$(date +%s)
B=${BATCHES:-1,4,16,32}
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p /tmp/base && tar cf - --exclude='./build*' . | tar xf - -C /tmp/base && cp -r .carry/base/. /tmp/base/ ||
  { echo "base copy failed"; exit 1; }
diff -q src/cuda/mla_attention.cu /tmp/base/src/cuda/mla_attention.cu
build() {  # build DIR SRC
  cmake -S $2 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build_$(basename $1).log 2>&1 &&
  cmake --build $1 -j8 --target latte latte-bench gpu_mla gpu_attention >> $OUT/build_$(basename $1).log 2>&1
}
build $PWD/build-gpu . & p1=$!
build /tmp/base/build-base /tmp/base & p2=$!
wait $p1 || { tail -30 $OUT/build_build-gpu.log; exit 1; }
wait $p2 || { tail -30 $OUT/build_build-base.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 200 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|batch 1" $OUT/gpu_attention.log | head )
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
S=bench/results/2026-11-28-h200-batches/scripts
LATTE_LIBRARY=$PWD/build-gpu/liblatte.so timeout 120 python3 $S/bitcmp.py > $OUT/bitcmp_new.txt 2>&1
LATTE_LIBRARY=/tmp/base/build-base/liblatte.so timeout 120 python3 $S/bitcmp.py > $OUT/bitcmp_base.txt 2>&1
if diff $OUT/bitcmp_new.txt $OUT/bitcmp_base.txt > /dev/null; then echo "bitcmp: identical ($(wc -l < $OUT/bitcmp_new.txt) cases)"; else echo "bitcmp: DIFFER"; paste $OUT/bitcmp_new.txt $OUT/bitcmp_base.txt; fi
cat $OUT/bitcmp_new.txt
run() {  # run new|base ROUND
  [ $(( $(date +%s) - t0 )) -gt 500 ] && return
  local bin=build-gpu/bench/latte-bench; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  timeout 120 $bin --only mla --quick --batch $B --json $OUT/bench_$1_r$2.json > $OUT/bench_$1_r$2.log 2>&1
  echo "$1 r$2: $(grep -E '^mla b' $OUT/bench_$1_r$2.log | sed -E 's/^mla (b[0-9]+ [^:]*): ([0-9.]+) us.*graph: .*attention ([0-9.]+).*/\1=\2(\3)/' | tr '\n' ' ')"
}
for r in $(seq 1 ${ROUNDS:-2}); do
  if [ $((r % 2)) = 1 ]; then run new $r; run base $r; else run base $r; run new $r; fi
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && cp bench_new_r1.json bench_batches_new.json 2>/dev/null; cp bench_base_r1.json bench_batches_base.json 2>/dev/null
tar czf logs.tgz *.log *.txt bench_*_r*.json && rm -f *.log bench_*_r*.json bitcmp_base.txt
