#!/usr/bin/env bash
# NEVER STARTED (its starts failed, then the device time ran out: README.md).
# Call 4: call 3 cut to what the session's device time left (call 3 never started: three failed starts). Most
# important first, each step only while time is left (LIMIT s, default 200):
#   1. the branch's library and main's (c572b1a, .carry/main_src.tgz, made by `git archive c572b1a -- CMakeLists.txt
#      cmake include src tests bench/CMakeLists.txt bench/latte_bench.cu bench/probes python scripts examples Makefile |
#      gzip > .carry/main_src.tgz`), built side by side (on main now, "the branch" is main itself);
#   2. call 2's one oracle miss (few_long_random_short_keys_stored_rotated, seed 1553349338, batch 128, where the gemv
#      never runs) with both libraries: the same miss with main's means it is not this branch's;
#   3. pytest (python/tests) on the branch's library, the oracle test included;
#   4. the oracle cross-check, fresh seed, with its timing (batch 128);
#   5. the gemv's stream with parts left out (a dev build, LATTE_GEMV_DIAG).
set -u
t0=$(date +%s)
LIMIT=${LIMIT:-200}
S=$(cd "$(dirname "$0")" && pwd)
left() { [ $(( $(date +%s) - t0 )) -lt $(( LIMIT - ${1:-0} )) ]; }
. "$S/lib.sh"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
mkdir -p /tmp/mainsrc && tar xzf .carry/main_src.tgz -C /tmp/mainsrc
build() {  # lib.sh's, with 8 jobs: two at once
  cmake -S $2 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a ${4:-} > $OUT/build_$(basename $1).log 2>&1 &&
  cmake --build $1 -j8 --target $3 >> $OUT/build_$(basename $1).log 2>&1
}
build $PWD/build-gpu . "latte" & p1=$!
build /tmp/mainsrc/build /tmp/mainsrc "latte" & p2=$!
wait $p1 || { tail -20 $OUT/build_build-gpu.log; exit 1; }
wait $p2 || { tail -20 $OUT/build_build.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
for lib in branch main; do
  L=$PWD/build-gpu/liblatte.so; [ $lib = main ] && L=/tmp/mainsrc/build/liblatte.so
  LATTE_LIBRARY=$L PYTHONPATH=$PWD/python timeout 60 python3 scripts/oracle_check.py --out $OUT/oracle_seed_$lib \
    --seed 1553349338 --no-timing > $OUT/oracle_seed_$lib.log 2>&1
  echo "oracle seed 1553349338 $lib rc $?: $(grep -E 'FAILED|all checks' $OUT/oracle_seed_$lib.log | cut -c1-400 | tr '\n' ' ')"
done
left 30 && { LATTE_LIBRARY=$PWD/build-gpu/liblatte.so PYTHONPATH=$PWD/python LATTE_ORACLE=$PWD/.carry/oracle/mla_oracle.py \
  timeout 60 python3 -m pytest python/tests -q -ra > $OUT/pytest.log 2>&1; echo "pytest rc $?: $(tail -1 $OUT/pytest.log)"; }
left 50 && { LATTE_LIBRARY=$PWD/build-gpu/liblatte.so PYTHONPATH=$PWD/python timeout $(( LIMIT - $(date +%s) + t0 - 5 )) \
  python3 scripts/oracle_check.py --out $OUT/oracle --iters 20 > $OUT/oracle.log 2>&1
  echo "oracle rc $?: $(grep -E 'FAILED|all checks|^len|ceilings' $OUT/oracle.log | tail -8 | tr '\n' ' ')"; }
left 70 && { build /tmp/bdev . "gpu_gemv" "-DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS" || tail -20 $OUT/build_bdev.log
  for d in 0 2 4 6 8 14; do left 5 && (cd /tmp/bdev/tests && LATTE_GEMV_DIAG=$d LATTE_GEMM_TIMING=1 timeout 20 ./gpu_gemv 2>&1 |
    grep -E '^timing' | grep -E 'batch +(1|8|16):'); done | tee $OUT/gemv_diag.log; }
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log oracle_seed_* oracle 2>/dev/null; rm -rf oracle_seed_* build_*.log; ls $OUT
