#!/usr/bin/env bash
# Call 1 (2026-12-07, late session): whole sequences of 5-8 tokens through the seesaw kernel's tail (P rounded as the
# reference rounds it), against main before it (023bbb3, .carry/base_src.tgz: `git archive 023bbb3 -- CMakeLists.txt
# cmake include src tests bench/CMakeLists.txt bench/latte_bench.cu bench/probes python scripts examples Makefile |
# gzip`). Most important first, each step only while time is left (LIMIT s, default 540):
#   1. build this tree (library, latte-bench, gpu_attention, gpu_mla) and the base (library, latte-bench) side by side;
#   2. gpu_attention in full (the new exact check: whole short sequences bit for bit against P rounded as the
#      reference rounds it, and the flash rounding's match beside);
#   3. the oracle at seed 1553349338 with both libraries (the base missed one element of a 6-token sequence there);
#   4. the layer at batch 128, base and new interleaved, three rounds (latte-bench --only mla --quick): the kernel's
#      code moved, so its speed is checked where no sequence is short;
#   5. gpu_mla (quick), pytest, the oracle at a fresh seed with its timing, the seesaw kernel's SASS of both builds.
set -u
t0=$(date +%s)
LIMIT=${LIMIT:-540}
left() { [ $(( $(date +%s) - t0 )) -lt $(( LIMIT - ${1:-0} )) ]; }
. bench/results/2026-12-07-down-gemv/scripts/lib.sh   # fmt
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
mkdir -p /tmp/base && tar xzf .carry/base_src.tgz -C /tmp/base
bld() {  # bld DIR SRC JOBS TARGETS...
  local d=$1 s=$2 j=$3; shift 3
  cmake -S $s -B $d -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build_$(basename $d).log 2>&1 &&
  cmake --build $d -j$j --target "$@" >> $OUT/build_$(basename $d).log 2>&1
}
bld /tmp/base/build /tmp/base 6 latte latte-bench & pb=$!
bld $PWD/build-gpu . 12 latte latte-bench gpu_attention gpu_mla || { tail -30 $OUT/build_build-gpu.log; exit 1; }
echo "new built $(( $(date +%s) - t0 )) s"
(cd build-gpu/tests && LATTE_REQUIRE_GPU=1 timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)")
grep -E 'whole sequences|^FAIL|short sequences' $OUT/gpu_attention.log | cut -c1-260
wait $pb || { tail -30 $OUT/build_build.log; echo "base build failed"; }
echo "base built $(( $(date +%s) - t0 )) s"
for lib in base new; do
  L=$PWD/build-gpu/liblatte.so; [ $lib = base ] && L=/tmp/base/build/liblatte.so
  LATTE_LIBRARY=$L PYTHONPATH=$PWD/python timeout 90 python3 scripts/oracle_check.py --out $OUT/oracle_seed_$lib \
    --seed 1553349338 --no-timing > $OUT/oracle_seed_$lib.log 2>&1
  echo "oracle seed 1553349338 $lib rc $?: $(grep -E 'FAILED|all checks' $OUT/oracle_seed_$lib.log | cut -c1-300 | tr '\n' ' ')"
  grep -E '^short_lens|^few_long_random' $OUT/oracle_seed_$lib.log | sed -E 's/(y_misses=[0-9]+).*(y_miss_where=\[[^]]*\]).*(torch_absorbed_misses=[0-9]+).*/\1 \2 \3/' | cut -c1-330
done
ab() {
  for v in base new; do
    B=build-gpu/bench/latte-bench; [ $v = base ] && B=/tmp/base/build/bench/latte-bench
    timeout 60 $B --only mla --quick --json $OUT/ab_r$1_$v.json > $OUT/ab_r$1_$v.log 2>&1
    echo "round $1 $v rc $?: $(fmt $OUT/ab_r$1_$v.log)"
  done
}
left 60 && ab 1
left 60 && ab 2
left 60 && ab 3
left 80 && (cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_REQUIRE_GPU=1 timeout 120 ./gpu_mla > $OUT/gpu_mla.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla.log)")
left 40 && { LATTE_LIBRARY=$PWD/build-gpu/liblatte.so PYTHONPATH=$PWD/python LATTE_ORACLE=$PWD/.carry/oracle/mla_oracle.py \
  timeout 60 python3 -m pytest python/tests -q -ra > $OUT/pytest.log 2>&1; echo "pytest rc $?: $(tail -1 $OUT/pytest.log)"; }
left 60 && { LATTE_LIBRARY=$PWD/build-gpu/liblatte.so PYTHONPATH=$PWD/python timeout $(( LIMIT - $(date +%s) + t0 - 15 )) \
  python3 scripts/oracle_check.py --out $OUT/oracle --iters 20 > $OUT/oracle.log 2>&1
  echo "oracle rc $?: $(grep -E 'FAILED|all checks|^len|ceilings' $OUT/oracle.log | tail -8 | tr '\n' ' ')"; }
if command -v cuobjdump > /dev/null; then
  for v in base new; do
    L=$PWD/build-gpu/liblatte.so; [ $v = base ] && L=/tmp/base/build/liblatte.so
    cuobjdump -sass $L 2>/dev/null | awk '/Function : /{on = /seesaw_kernelILi0E/} on' |
      grep -E '^\s+/\*[0-9a-f]{4}\*/' | sed -E 's@^\s+/\*[0-9a-f]+\*/\s+@@; s@\s*/\*.*@@; s@;.*@@; s@\(\.L_x_[0-9]+\)@L@g; s@0x[0-9a-f]+@X@g' > $OUT/sass_$v.txt
  done
  echo "seesaw SASS lines base $(wc -l < $OUT/sass_base.txt) new $(wc -l < $OUT/sass_new.txt), diff lines $(diff $OUT/sass_base.txt $OUT/sass_new.txt | grep -c '^[<>]')"
fi
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log ab_*.json oracle_seed_* oracle sass_*.txt 2>/dev/null; rm -rf oracle_seed_* oracle build_*.log ab_r*.json sass_*.txt
ls $OUT
