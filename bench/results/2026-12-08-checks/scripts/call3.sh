#!/usr/bin/env bash
# Call 3 of 2026-12-08: the down gemv's v3 (a warp's x loaded before its first product) against v2 (the tree before it,
# .carry/base_gemv_src.tgz = 974147b) and against cuBLASLt (LATTE_MLA_DOWN_GEMV=0, this tree), and call 2's checks of the
# threaded test references. Most important first, each step only while time is left (LIMIT s, default 360):
#   1. build this tree (library, latte-bench, the CUDA test programs); then the base (library, latte-bench, gpu_gemv)
#      while gpu_gemv, gpu_gemm_sm90, gpu_q_absorb, gpu_wgmma run; then gpu_attention (its reference on every thread);
#   2. the layer at batches 1, 2, 4, 8 (512 / 2048 / 4096 / mixed): v2, v3, cuBLASLt, three interleaved rounds, and
#      between them the gemv alone, v2 and v3 (gpu_gemv's timing table after a read-only flush);
#   3. after round 2: the oracle at batch 8 (the gemv in the layer); at the end the oracle at batch 128 at a fresh seed
#      with its timing.
# Files back: summary lines on stdout; tests.tgz, gemv.tgz, logs.tgz.
set -u
t0=$(date +%s)
LIMIT=${LIMIT:-360}
left() { [ $(( $(date +%s) - t0 )) -lt $(( LIMIT - ${1:-0} )) ]; }
. bench/results/2026-12-07-down-gemv/scripts/lib.sh   # fmt
. bench/results/2026-12-07-short-exact/scripts/lib.sh # bld
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$gpu; host threads $(nproc)"
mkdir -p /tmp/base && tar xzf .carry/base_gemv_src.tgz -C /tmp/base
bld $PWD/build-gpu . 16 latte latte-bench gpu_attention gpu_gemv gpu_gemm_sm90 gpu_q_absorb gpu_wgmma || { tail -30 $OUT/build_build-gpu.log; exit 1; }
echo "new built $(( $(date +%s) - t0 )) s"
bld /tmp/base/build /tmp/base 12 latte latte-bench gpu_gemv & pb=$!
mkdir -p $OUT/tests $OUT/gemv
run_test() {  # run_test NAME [ENV...]: the program's wall time, FAIL lines and last line
  local t=$1 s=$(date +%s); shift
  (cd build-gpu/tests && env "$@" timeout 300 ./$t > $OUT/tests/$t.log 2>&1; echo "$t rc $? in $(( $(date +%s) - s )) s: $(grep -c '^FAIL' $OUT/tests/$t.log) FAIL lines; $(tail -1 $OUT/tests/$t.log | cut -c1-160)")
}
for t in gpu_gemv gpu_gemm_sm90 gpu_q_absorb gpu_wgmma; do run_test $t LATTE_REQUIRE_GPU=1; done
grep -E '^FAIL|FAILED' $OUT/tests/gpu_gemv.log | head -5
wait $pb || { tail -30 $OUT/build_build.log; echo "base build failed"; }
echo "base built $(( $(date +%s) - t0 )) s"
run_test gpu_attention LATTE_REQUIRE_GPU=1
grep -E '^FAIL' $OUT/tests/gpu_attention.log | head -5
alone() {  # the gemv alone, v2 and v3 (gpu_gemv's timing table after a read-only flush)
  for v in base new; do G=build-gpu/tests/gpu_gemv; [ $v = base ] && G=/tmp/base/build/tests/gpu_gemv
    LATTE_GEMM_TIMING=1 timeout 60 $G > $OUT/gemv/alone_r$1_$v.log 2>&1
    echo "gemv alone round $1 $v: $(grep "^timing" $OUT/gemv/alone_r$1_$v.log | sed -E "s/.*batch +([0-9]+): ([0-9.]+) us.*/b\1 \2/" | tr "\n" " ")"
  done
}
ab() {
  for v in v2 v3 lt; do
    B=build-gpu/bench/latte-bench; [ $v = v2 ] && B=/tmp/base/build/bench/latte-bench
    G=1; [ $v = lt ] && G=0
    LATTE_MLA_DOWN_GEMV=$G LATTE_BENCH_LENS=512,2048,4096 timeout 60 $B --only mla --quick --batch 1,2,4,8 \
      --json $OUT/gemv/ab_r$1_$v.json > $OUT/gemv/ab_r$1_$v.log 2>&1
    echo "round $1 $v rc $?: $(fmt $OUT/gemv/ab_r$1_$v.log)"
  done
}
left 70 && ab 1
left 70 && ab 2
left 40 && { LATTE_LIBRARY=$PWD/build-gpu/liblatte.so PYTHONPATH=$PWD/python timeout 60 python3 scripts/oracle_check.py \
  --out $OUT/oracle_b8 --batch 8 --sample 8 --lens 128,512,2048 --no-timing > $OUT/oracle_b8.log 2>&1
  echo "oracle batch 8 rc $?: $(grep -E 'FAILED|all checks' $OUT/oracle_b8.log | tr '\n' ' ' | cut -c1-300)"; }
left 30 && alone 1
left 70 && ab 3
left 30 && alone 2
python3 bench/results/2026-12-07-short-exact/scripts/summarize.py $OUT/gemv --json $OUT/gemv/ab_summary.json   # v3 - cuBLASLt
python3 bench/results/2026-12-07-short-exact/scripts/summarize.py $OUT/gemv --prefix v   # v3 - v2
left 60 && { LATTE_LIBRARY=$PWD/build-gpu/liblatte.so PYTHONPATH=$PWD/python timeout $(( LIMIT - $(date +%s) + t0 - 10 )) \
  python3 scripts/oracle_check.py --out $OUT/oracle --iters 20 > $OUT/oracle.log 2>&1
  echo "oracle rc $?: $(grep -E 'FAILED|all checks|^ +[0-9]+ +[0-9.]+ |ceilings' $OUT/oracle.log | tail -9 | tr '\n' ' ')"; }
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf tests.tgz tests && tar czf gemv.tgz gemv && tar czf logs.tgz *.log oracle_b8 oracle 2>/dev/null
rm -rf tests gemv oracle_b8 oracle *.log
ls $OUT
