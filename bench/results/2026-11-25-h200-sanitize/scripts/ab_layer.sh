#!/usr/bin/env bash
# call 7: the layer with the piece combine's new exchanges against HEAD's (two release builds side by side: HEAD's
# tree carried in .carry/headtree), three interleaved rounds of latte-bench --only mla --quick (graph replay)
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
rm -rf /tmp/old && cp -r .carry/headtree /tmp/old
b() { cmake -S $1 -B $1/build-ab -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build_$2.log 2>&1 &&
      cmake --build $1/build-ab -j8 --target latte-bench >> $OUT/build_$2.log 2>&1 || { echo "build $2 failed"; tail -20 $OUT/build_$2.log; }; }
b /tmp/old old & b . new & wait
echo "built $(( $(date +%s) - t0 )) s"
run() {  # run old|new ROUND
  local bin=$([ $1 = old ] && echo /tmp/old/build-ab/bench/latte-bench || echo build-ab/bench/latte-bench)
  timeout 100 $bin --only mla --quick > $OUT/ab_$1_$2.log 2>&1
  echo -n "$1 r$2: "; grep -E '^mla (len|lens)' $OUT/ab_$1_$2.log | grep -v untuned | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append [0-9.]+, up_absorb ([0-9.]+), attention ([0-9.]+).*/\2=\3(\5)/' | tr '\n' ' ' | cut -c1-400; echo
}
for r in 1 2 3; do
  [ $(( $(date +%s) - t0 )) -gt 420 ] && break
  if [ $r = 2 ]; then run new $r; run old $r; else run old $r; run new $r; fi
done
echo "total $(( $(date +%s) - t0 )) s"
