#!/usr/bin/env bash
# The next device call (written 2026-12-08, in a session that had no device): everything that waits for a Hopper, in one
# call of at most LIMIT s (default 540), each part behind a time guard. Run from the repository root with carry [".carry"]
# (.carry/oracle/mla_oracle.py, copied from ../shared/oracle/):
#   1. build this tree (library, latte-bench, the GPU test programs) for sm_90a;
#   2. the GPU test programs one at a time, each with its wall time: gpu_attention (its float64 reference on every host
#      thread since 2026-12-08, never run on a GPU; it stopped at 150 s after 12 of 43 checks single-threaded),
#      gpu_mla and gpu_qknorm (their random fills and comparisons on every host thread since this session: the same
#      values as before for a given seed; their wall times were 24-63 s and 15-24 s), gpu_gemv, gpu_q_absorb;
#   3. scripts/oracle_check.py (its miss mask shared since 1e05aed, never run on a GPU);
#   4. the gemv v3 (bench/results/2026-12-08-checks/dev/gemv_x_ahead_not_run.patch) applied to a copy of the tree: its
#      gpu_gemv, then the layer at batches 1, 2, 4, 8 (lengths 512 / 2048 and mixed), v2's loop (LATTE_GEMV_X_AHEAD=0)
#      against v3 in the same build, interleaved rounds while time is left; then gpu_gemv under v2's loop.
# Files back (at most 8): next_call.log-like summary lines on stdout; tests.tgz; oracle.tgz; gemv.tgz; builds.tgz.
set -u
t0=$(date +%s)
LIMIT=${LIMIT:-540}
left() { [ $(( $(date +%s) - t0 )) -lt $(( LIMIT - ${1:-0} )) ]; }
. bench/results/2026-12-07-down-gemv/scripts/lib.sh   # fmt
. bench/results/2026-12-07-short-exact/scripts/lib.sh # bld
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$gpu; host threads $(nproc)"
mkdir -p $OUT/tests $OUT/oracle $OUT/gemv

# 1. this tree
bld $PWD/build-gpu . 16 latte latte-bench gpu_attention gpu_mla gpu_qknorm gpu_gemv gpu_q_absorb ||
  { tail -30 $OUT/build_build-gpu.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"

# 2. the GPU test programs, one at a time (wall time, FAIL lines, last line)
run_test() {  # run_test BUILD NAME LOG LIMIT_S [ENV...]
  local b=$1 t=$2 log=$3 lim=$4 s=$(date +%s); shift 4
  (cd $b/tests && env LATTE_REQUIRE_GPU=1 "$@" timeout $lim ./$t > $OUT/tests/$log.log 2>&1
   echo "$log rc $? in $(( $(date +%s) - s )) s: $(grep -c '^FAIL' $OUT/tests/$log.log) FAIL lines; $(tail -1 $OUT/tests/$log.log | cut -c1-160)")
}
left 420 && run_test build-gpu gpu_attention gpu_attention 200
left 300 && run_test build-gpu gpu_mla gpu_mla 120
left 260 && run_test build-gpu gpu_qknorm gpu_qknorm 60
left 240 && run_test build-gpu gpu_gemv gpu_gemv 60
left 230 && run_test build-gpu gpu_q_absorb gpu_q_absorb 60
grep -hE '^FAIL' $OUT/tests/*.log | head -8
# gpu_mla's per-case relative Frobenius error against the CPU backend (new, printed only): its spread, for a median check
grep -o 'rel Frobenius [0-9.e+-]*' $OUT/tests/gpu_mla.log 2>/dev/null | awk '{print $3}' | sort -g |
  awk '{a[NR]=$1} END{if (NR) print "gpu_mla rel Frobenius vs CPU: n", NR, "min", a[1], "median", a[int((NR+1)/2)], "max", a[NR]}' 

# 3. the oracle cross-check (LATTE_LIBRARY: this build)
if left 200 && [ -f .carry/oracle/mla_oracle.py ]; then
  s=$(date +%s)
  LATTE_LIBRARY=$PWD/build-gpu/liblatte.so timeout 150 python3 scripts/oracle_check.py --out $OUT/oracle > $OUT/oracle/oracle.log 2>&1
  echo "oracle rc $? in $(( $(date +%s) - s )) s: $(tail -1 $OUT/oracle/oracle.log | cut -c1-160)"
fi

# 4. the gemv v3 on a copy of the tree
P=bench/results/2026-12-08-checks/dev/gemv_x_ahead_not_run.patch
if left 150; then
  rm -rf /tmp/v3 && mkdir -p /tmp/v3 && tar cf - --exclude='./build*' --exclude=./.git . | tar xf - -C /tmp/v3
  if (cd /tmp/v3 && patch -p1 -s < $P) && bld /tmp/v3/build-v3 /tmp/v3 16 latte latte-bench gpu_gemv; then
    echo "v3 built $(( $(date +%s) - t0 )) s"
    run_test /tmp/v3/build-v3 gpu_gemv gpu_gemv_v3 60
    grep -E '^FAIL|FAILED' $OUT/tests/gpu_gemv_v3.log | head -5
    ab() {
      for v in 0 1; do
        LATTE_GEMV_X_AHEAD=$v LATTE_BENCH_LENS=512,2048 timeout 40 /tmp/v3/build-v3/bench/latte-bench --only mla --quick \
          --batch 1,2,4,8 --json $OUT/gemv/ab_r$1_xahead$v.json > $OUT/gemv/ab_r$1_xahead$v.log 2>&1
        echo "round $1 LATTE_GEMV_X_AHEAD=$v rc $? at $(( $(date +%s) - t0 )) s: $(fmt $OUT/gemv/ab_r$1_xahead$v.log)"
      done
    }
    for r in 1 2 3 4; do left 60 && ab $r; done
    python3 bench/results/2026-12-07-short-exact/scripts/summarize.py $OUT/gemv --json $OUT/gemv/ab_summary.json
    left 25 && run_test /tmp/v3/build-v3 gpu_gemv gpu_gemv_v3_xahead0 60 LATTE_GEMV_X_AHEAD=0
  else
    echo "v3: the patch did not apply or the build failed"; tail -20 $OUT/build_build-v3.log 2>/dev/null
  fi
fi
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf tests.tgz tests && tar czf oracle.tgz oracle && tar czf gemv.tgz gemv && tar czf builds.tgz build_*.log
rm -rf tests oracle gemv build_*.log
