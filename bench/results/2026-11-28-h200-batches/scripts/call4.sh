#!/usr/bin/env bash
# Call 4 (H200): is the combine's programmatic dependent launch why batch 1 at 4096 lost 9 µs when the tune took the
# sm90 W_UV (its early launch: the attention triggers its dependents at its start)? Three builds in this call: the tree
# (combine v2, PDL), the tree with -DLATTE_COMBINE_NO_PDL, and the base (92c7e7f's mla_attention.cu, from .carry/base);
# then ROUNDS (2) rounds of latte-bench --only mla --quick --batch 1,4 under LATTE_MLA_UV_SM90=0 and =1 on each.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p /tmp/base && tar cf - --exclude='./build*' . | tar xf - -C /tmp/base && cp -r .carry/base/. /tmp/base/ ||
  { echo "base copy failed"; exit 1; }
build() {  # build DIR SRC [CUDA_FLAGS]
  cmake -S $2 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a ${3:+-DCMAKE_CUDA_FLAGS=$3} \
    > $OUT/build_$(basename $1).log 2>&1 && cmake --build $1 -j5 --target latte latte-bench >> $OUT/build_$(basename $1).log 2>&1
}
build $PWD/build-gpu . & p1=$!
build $PWD/build-nopdl . -DLATTE_COMBINE_NO_PDL & p2=$!
build /tmp/base/build-base /tmp/base & p3=$!
for p in $p1 $p2 $p3; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
run() {  # run pdl|nopdl|base UV ROUND
  [ $(( $(date +%s) - t0 )) -gt 520 ] && return
  local bin=build-gpu/bench/latte-bench
  [ $1 = nopdl ] && bin=build-nopdl/bench/latte-bench; [ $1 = base ] && bin=/tmp/base/build-base/bench/latte-bench
  LATTE_MLA_UV_SM90=$2 timeout 100 $bin --only mla --quick --batch 1,4 > $OUT/bench_$1_uv$2_r$3.log 2>&1
  echo "$1 uv$2 r$3: $(grep -E '^mla b' $OUT/bench_$1_uv$2_r$3.log | sed -E 's/^mla (b[0-9]+ [^:]*): ([0-9.]+) us.*graph: .*attention ([0-9.]+).*/\1=\2(\3)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' ')"
}
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in pdl nopdl base; do for uv in 0 1; do run $v $uv $r; done; done
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
