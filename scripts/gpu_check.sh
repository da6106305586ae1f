#!/usr/bin/env bash
# gpu_check.sh OUTDIR: the whole GPU check in one command (build, tests, oracle, bench, sanitizers).
#
# Run from anywhere on a machine with a GPU, nvcc, CMake (Ninja if present) and python3 (torch for the
# oracle). Every step logs into OUTDIR, a failed step does not stop the next, and a pass/fail table is
# printed LAST (also OUTDIR/summary.txt). Exit status: 0 when no step failed.
#
# Steps (GPU_CHECK_STEPS="build,gpu-test,bench" runs a subset; default all, in this order):
#   info       nvidia-smi -L, nvcc --version                                   -> build.log
#   build      cmake + build in build-gpu, CUDA arch 90a (GPU_CHECK_ARCH)      -> build.log
#   cpu-test   ctest -L cpu                                                     -> tests.log
#   gpu-test   LATTE_REQUIRE_GPU=1 ctest -L gpu, then gpu_mla (quick) under each attention kernel
#              (LATTE_MLA_ATTENTION=wgmma3 wgmma2 mma) and gpu_qknorm under each variant -> tests.log
#   oracle     python3 scripts/oracle_check.py --out OUTDIR (skipped if missing) -> oracle.log (+ its own files)
#   bench      the sm90 GEMM's timing table (LATTE_GEMM_TIMING=1 tests/gpu_gemm_sm90), then
#              build-gpu/bench/latte-bench --json OUTDIR/bench.json [--peers OUTDIR/oracle_anchors.json]
#                                                                               -> bench.log, bench.json
#   pytest     python3 -m pytest python/tests -q -ra (skipped if missing), LATTE_ORACLE=.carry/oracle/mla_oracle.py
#              when that file is there (the oracle test; its outcome is in the summary) -> tests.log
#   pybench    python3 -m latte.bench --quick: latte and its PyTorch peers in one process, latte-bench's
#              tables (~30-60 s; GPU_CHECK_PYBENCH_ARGS adds arguments)       -> appended to bench.log
#   sanitize   scripts/gpu_sanitize.sh: memcheck/racecheck/initcheck/synccheck over every GPU test program
#              (LATTE_TEST_QUICK=1) and the CUDA fuzzer (skipped when GPU_CHECK_SANITIZE=0) -> sanitizer.log, .json
# The oracle and the bench run before the sanitizers (the slowest, least predictable step) so that the
# figures always come back. Time budget: GPU_CHECK_BUDGET_S (default 500 s); a step that would start with
# less than 20 s left is skipped, and every step's timeout is cut to what is left.
#
# Files in OUTDIR (few on purpose, the GPU tool returns at most 8): build.log tests.log oracle.log bench.log
# bench.json sanitizer.log sanitizer.json summary.txt, plus what oracle_check.py writes (oracle_anchors.json).
set -u

if [ $# -lt 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
BUILD=${GPU_CHECK_BUILD:-build-gpu}
case "$BUILD" in /*) ;; *) BUILD="$PWD/$BUILD" ;; esac
ARCH=${GPU_CHECK_ARCH:-90a}
JOBS=${GPU_CHECK_JOBS:-$(nproc 2>/dev/null || echo 16)}
STEPS=${GPU_CHECK_STEPS:-info,build,cpu-test,gpu-test,oracle,bench,pytest,pybench,sanitize}
BUDGET=${GPU_CHECK_BUDGET_S:-500}
PY=${PYTHON:-python3}
T0=$(date +%s)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

export LATTE_GIT_REV=${LATTE_GIT_REV:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(
  [ -n "$(git status --porcelain 2>/dev/null | head -1)" ] && echo "+dirty")}

rm -f "$OUT"/build.log "$OUT"/tests.log "$OUT"/oracle.log "$OUT"/bench.log "$OUT"/bench.json \
      "$OUT"/sanitizer.log "$OUT"/sanitizer.json "$OUT"/summary.txt
SUMMARY="$TMP/summary"
: > "$SUMMARY"
FAILED=0

elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET - $(elapsed) )); }
# the smaller of a step's own cap and the time left (minus a reserve for the summary)
cap() { local l; l=$(( $(left) - 10 )); [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }
want() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
section() { printf '\n==== %s (%s, t=%ss) ====\n' "$2" "$(date -u +%H:%M:%S)" "$(elapsed)" >> "$1"; }
# record NAME RESULT(pass|FAIL|WARN|skip) SECONDS NOTE (only FAIL makes the exit status 1)
record() {
  printf '%-9s %-5s %5ss  %s\n' "$1" "$2" "$3" "$4" >> "$SUMMARY"
  [ "$2" = FAIL ] && FAILED=1
  printf '[gpu_check] %-9s %-5s %5ss  %s\n' "$1" "$2" "$3" "$4"
}
# run_step NAME: decides whether the step runs; prints nothing. Returns 1 (and records a skip) if not.
run_step() {
  want "$1" || return 1
  if [ "$(left)" -lt 20 ]; then
    record "$1" skip 0 "time budget (${BUDGET}s) spent"
    return 1
  fi
  STEP_T0=$(date +%s)
  return 0
}
took() { echo $(( $(date +%s) - STEP_T0 )); }

# ---- info -------------------------------------------------------------------------------------
if run_step info; then
  section "$OUT/build.log" "info"
  { nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    nvcc --version; cmake --version | head -1; $PY --version; echo "LATTE_GIT_REV=$LATTE_GIT_REV"; } >> "$OUT/build.log" 2>&1
  gpu=$(nvidia-smi -L 2>/dev/null | head -1 | sed 's/ (UUID.*//')
  if [ -n "$gpu" ]; then record info pass "$(took)" "$gpu"; else record info FAIL "$(took)" "nvidia-smi found no GPU"; fi
fi

# ---- build ------------------------------------------------------------------------------------
BUILD_OK=1
if run_step build; then
  section "$OUT/build.log" "configure + build ($BUILD, CUDA arch $ARCH, -j$JOBS)"
  gen=""
  command -v ninja > /dev/null && [ ! -f "$BUILD/CMakeCache.txt" ] && gen="-G Ninja"
  if timeout "$(cap 400)" cmake -S . -B "$BUILD" $gen -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
       >> "$OUT/build.log" 2>&1 &&
     timeout "$(cap 400)" cmake --build "$BUILD" -j "$JOBS" >> "$OUT/build.log" 2>&1; then
    nw=$(grep -ci 'warning' "$OUT/build.log")
    record build pass "$(took)" "$nw line(s) mentioning a warning"
  else
    BUILD_OK=0
    record build FAIL "$(took)" "see build.log: $(grep -m1 -iE 'error|FAILED' "$OUT/build.log" | cut -c1-80)"
  fi
fi
[ -f "$BUILD/liblatte.so" ] || BUILD_OK=0

# ---- ctest ------------------------------------------------------------------------------------
ctest_step() { # NAME LABEL EXTRA_ENV
  local name=$1 label=$2 cap_s=$3
  if [ "$BUILD_OK" != 1 ]; then record "$name" skip 0 "no build"; return; fi
  section "$OUT/tests.log" "$name: ctest -L $label"
  (cd "$BUILD" && env ${4:-} timeout "$(cap "$cap_s")" ctest -L "$label" --output-on-failure -j "$5" --timeout "$(cap 300)") \
    >> "$OUT/tests.log" 2>&1
  local rc=$? line
  line=$(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1)
  if [ $rc -eq 0 ]; then record "$name" pass "$(took)" "$line"
  elif [ $rc -eq 124 ]; then record "$name" FAIL "$(took)" "timed out; $line"
  else record "$name" FAIL "$(took)" "$line $(grep -E '\*\*\*Failed|Timeout|Not Run' "$OUT/tests.log" | tail -3 | awk '{print $4}' | tr '\n' ' ')"
  fi
}
run_step cpu-test && ctest_step cpu-test cpu 240 "" "$JOBS"
run_step gpu-test && ctest_step gpu-test gpu 240 "LATTE_REQUIRE_GPU=1" 2
# gpu_mla once more under each attention kernel the default does not take (v3 required, v2.1, mma.sync), quick cases
want gpu-test && [ "$BUILD_OK" = 1 ] && { STEP_T0=$(date +%s); av=${GPU_CHECK_ATTENTION_KERNELS:-wgmma3 wgmma2 mma}; bad=""; for v in $av; do [ "$(left)" -gt 40 ] || { bad="$bad $v(no time)"; continue; }; section "$OUT/tests.log" "gpu_mla, LATTE_MLA_ATTENTION=$v (quick)"; (cd "$BUILD/tests" && LATTE_MLA_ATTENTION=$v LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 LATTE_REQUIRE_GPU=1 timeout "$(cap 120)" ./gpu_mla) >> "$OUT/tests.log" 2>&1 || bad="$bad $v"; done; if [ -z "$bad" ]; then record attn-vars pass "$(took)" "gpu_mla under LATTE_MLA_ATTENTION= $av"; else record attn-vars FAIL "$(took)" "gpu_mla failed under$bad"; fi; }
want gpu-test && [ "$BUILD_OK" = 1 ] && { STEP_T0=$(date +%s); qv=${GPU_CHECK_QKNORM_VARIANTS:-1 2 3 4 5}; bad=""; for v in $qv; do [ "$(left)" -gt 40 ] || { bad="$bad $v(no time)"; continue; }; section "$OUT/tests.log" "gpu_qknorm, LATTE_QKNORM_VARIANT=$v"; (cd "$BUILD/tests" && LATTE_QKNORM_VARIANT=$v LATTE_REQUIRE_GPU=1 timeout "$(cap 120)" ./gpu_qknorm) >> "$OUT/tests.log" 2>&1 || bad="$bad $v"; done; if [ -z "$bad" ]; then record qk-vars pass "$(took)" "gpu_qknorm under LATTE_QKNORM_VARIANT= $qv"; else record qk-vars FAIL "$(took)" "gpu_qknorm failed under variant(s)$bad"; fi; }

# ---- oracle -----------------------------------------------------------------------------------
if run_step oracle; then
  if [ ! -f scripts/oracle_check.py ]; then record oracle skip 0 "scripts/oracle_check.py missing"
  elif [ "$BUILD_OK" != 1 ]; then record oracle skip 0 "no build"
  else
    section "$OUT/oracle.log" "python3 scripts/oracle_check.py --out $OUT"
    LATTE_LIBRARY="$BUILD/liblatte.so" PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
      timeout "$(cap 200)" "$PY" scripts/oracle_check.py --out "$OUT" >> "$OUT/oracle.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then record oracle pass "$(took)" "$(tail -1 "$OUT/oracle.log" | cut -c1-90)"
    else record oracle FAIL "$(took)" "rc $rc: $(tail -1 "$OUT/oracle.log" | cut -c1-80)"; fi
  fi
fi

# ---- bench ------------------------------------------------------------------------------------
if run_step bench; then
  if [ ! -x "$BUILD/bench/latte-bench" ]; then record bench skip 0 "no latte-bench (build failed?)"
  else
    # the Hopper projection GEMM alone, every configuration the tuner times (a table; skipped off Hopper)
    if [ -x "$BUILD/tests/gpu_gemm_sm90" ]; then
      section "$OUT/bench.log" "sm90 GEMM timing (LATTE_GEMM_TIMING=1 tests/gpu_gemm_sm90)"
      (cd "$BUILD/tests" && LATTE_GEMM_TIMING=1 timeout "$(cap 120)" ./gpu_gemm_sm90) >> "$OUT/bench.log" 2>&1
    fi
    section "$OUT/bench.log" "latte-bench"
    peers=""
    [ -f "$OUT/oracle_anchors.json" ] && peers="--peers $OUT/oracle_anchors.json"
    timeout "$(cap 240)" "$BUILD/bench/latte-bench" --json "$OUT/bench.json" $peers ${GPU_CHECK_BENCH_ARGS:-} \
      >> "$OUT/bench.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then record bench pass "$(took)" "bench.json written${peers:+, with oracle peers}"
    else record bench FAIL "$(took)" "rc $rc (see bench.log)"; fi
  fi
fi

# ---- pytest -----------------------------------------------------------------------------------
if run_step pytest; then
  if [ ! -d python/tests ]; then record pytest skip 0 "python/tests missing"
  elif ! "$PY" -c "import pytest" 2> /dev/null; then record pytest skip 0 "pytest not importable"
  elif [ "$BUILD_OK" != 1 ]; then record pytest skip 0 "no build"
  else
    # the oracle test (test_torch.py::test_gpu_mla_against_oracle) runs when LATTE_ORACLE names the oracle; a
    # missing file is reported here (the run tool must carry .carry/oracle), not left to a bare skip
    oracle=${LATTE_ORACLE:-$PWD/.carry/oracle/mla_oracle.py}
    oracle_note=""
    if [ ! -f "$oracle" ]; then oracle_note="no ${LATTE_ORACLE:-.carry/oracle/mla_oracle.py} (carry .carry/oracle)"; oracle=""; fi
    section "$OUT/tests.log" "pytest python/tests (LATTE_ORACLE=${oracle:-unset: $oracle_note})"
    rm -f "$TMP/pytest.xml"
    LATTE_LIBRARY="$BUILD/liblatte.so" PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" LATTE_ORACLE="$oracle" \
      timeout "$(cap 180)" "$PY" -m pytest python/tests -q -ra --junitxml="$TMP/pytest.xml" -o junit_logging=system-out \
      >> "$OUT/tests.log" 2>&1
    rc=$?
    line=$(grep -E '(passed|failed|skipped|error)' "$OUT/tests.log" | tail -1 | cut -c1-90)
    # the oracle test's outcome (and its printed misses), from the JUnit XML, into tests.log and the summary
    otest=$("$PY" - "$TMP/pytest.xml" << 'PYEOF' 2> /dev/null
import sys, xml.etree.ElementTree as ET
try:
    cases = [c for c in ET.parse(sys.argv[1]).iter("testcase") if c.get("name", "").startswith("test_gpu_mla_against_oracle")]
except Exception as e:
    print(f"no JUnit XML ({type(e).__name__})"); sys.exit()
out, detail = {}, []
for c in cases:
    kind = next((k for k in ("failure", "error", "skipped") if c.find(k) is not None), "passed")
    out[kind] = out.get(kind, 0) + 1
    el = c.find(kind) if kind != "passed" else None
    msg = (el.get("message") or "").strip().splitlines()[0][:120] if el is not None and el.get("message") else ""
    so = c.find("system-out")
    got = [l for l in (so.text or "").splitlines() if l.startswith("oracle:")] if so is not None else []
    detail.append(f"  {c.get('name')}: {kind}{': ' + msg if msg else ''}{' | ' + got[-1] if got else ''}")
print(", ".join(f"{v} {k}" for k, v in out.items()) if cases else "not collected")
print("\n".join(detail))
PYEOF
)
    { echo "oracle test (test_gpu_mla_against_oracle): $(echo "$otest" | head -1)${oracle_note:+ ($oracle_note)}"
      echo "$otest" | tail -n +2; } >> "$OUT/tests.log"
    onote="oracle test: $(echo "$otest" | head -1)${oracle_note:+, $oracle_note}"
    # pytest: 0 passed, 5 nothing collected
    if [ $rc -eq 0 ] || [ $rc -eq 5 ]; then
      case "$otest" in "2 passed"*) record pytest pass "$(took)" "$line; $onote" ;;
                       *) record pytest WARN "$(took)" "$line; $onote" ;; esac
    else record pytest FAIL "$(took)" "rc $rc: $line; $onote"; fi
  fi
fi

# ---- pybench: python -m latte.bench ---------------------------------------------------------------
if run_step pybench; then
  if [ "$BUILD_OK" != 1 ]; then record pybench skip 0 "no build"
  elif ! "$PY" -c "import torch" 2> /dev/null; then record pybench skip 0 "torch not importable"
  else
    t=$(cap 150)
    # cases that would start after max_s are skipped (and say so); the margin covers one torch.compile
    max_s=$(( t > 45 ? t - 25 : 20 ))
    section "$OUT/bench.log" "pybench: python3 -m latte.bench --quick --max-seconds $max_s ${GPU_CHECK_PYBENCH_ARGS:-}(timeout ${t}s)"
    LATTE_LIBRARY="$BUILD/liblatte.so" PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
      timeout "$t" "$PY" -m latte.bench --quick --max-seconds "$max_s" ${GPU_CHECK_PYBENCH_ARGS:-} >> "$OUT/bench.log" 2>&1
    rc=$?
    pb=$(sed -n '/^==== pybench/,$p' "$OUT/bench.log")
    secs=$(echo "$pb" | sed -n 's/^latte\.bench: \([0-9.]*\) s$/\1/p' | tail -1)
    skipped=$(echo "$pb" | grep -m1 'case(s) skipped (time budget' | cut -c14-70)
    if [ $rc -eq 0 ] && [ -z "$skipped" ]; then record pybench pass "$(took)" "table in bench.log (${secs:-?} s in python)"
    elif [ $rc -eq 0 ]; then record pybench WARN "$(took)" "$skipped; table in bench.log"
    elif [ $rc -eq 3 ]; then record pybench WARN "$(took)" "latte ok, a peer failed: $(echo "$pb" | grep -m1 'FAILED' | cut -c1-70)"
    elif [ $rc -eq 124 ]; then record pybench FAIL "$(took)" "timed out after ${t}s (see bench.log)"
    else
      msg=$(echo "$pb" | grep -E 'FAILED|Error|error' | tail -1)
      [ -n "$msg" ] || msg=$(echo "$pb" | tail -1)
      record pybench FAIL "$(took)" "rc $rc: $(echo "$msg" | cut -c1-80)"
    fi
  fi
fi

# ---- sanitizers -------------------------------------------------------------------------------
# scripts/gpu_sanitize.sh: the four tools over every GPU test program (quick mode) and the CUDA fuzzer, NVIDIA's
# library kernels excluded from racecheck/initcheck by name (see there). It needs most of a 10-minute call on its
# own: run it as its own call (GPU_CHECK_STEPS without sanitize here), or it gets what is left of this budget.
if run_step sanitize; then
  if [ "${GPU_CHECK_SANITIZE:-1}" = 0 ]; then record sanitize skip 0 "GPU_CHECK_SANITIZE=0"
  elif [ "$BUILD_OK" != 1 ]; then record sanitize skip 0 "no build"
  else
    GPU_CHECK_BUILD="$BUILD" GPU_SANITIZE_BUDGET_S=$(cap 540) bash "$ROOT/scripts/gpu_sanitize.sh" "$OUT" > "$TMP/san.out" 2>&1
    rc=$?
    last=$(tail -1 "$TMP/san.out" | cut -c1-90)
    if [ $rc -eq 0 ]; then record sanitize pass "$(took)" "$last"
    elif [ $rc -eq 77 ]; then record sanitize skip "$(took)" "no GPU"
    else record sanitize FAIL "$(took)" "rc $rc: $last (sanitizer.log)"; fi
  fi
fi

# ---- summary (printed last) -------------------------------------------------------------------
{
  echo
  echo "==== gpu_check summary: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(elapsed)s, git $LATTE_GIT_REV ===="
  nvidia-smi -L 2> /dev/null | head -1 | sed 's/ (UUID.*//'
  printf '%-9s %-5s %6s  %s\n' step result time note
  cat "$SUMMARY"
  if [ -f "$OUT/bench.log" ] && grep -q '^==== latte-bench' "$OUT/bench.log"; then
    echo
    echo "---- bench (latte-bench's table, bench.log) ----"
    if grep -q '^==== latte-bench:' "$OUT/bench.log"; then
      awk '/^==== latte-bench:/ { p = 1 } /^==== pybench/ { p = 0 } p' "$OUT/bench.log" | tail -40
    else
      awk '/^==== pybench/ { exit } { print }' "$OUT/bench.log" | tail -8
    fi
  fi
  if [ -f "$OUT/bench.log" ]; then
    # python -m latte.bench's table (the same cases, PyTorch peers timed in the same process), last
    if grep -q '^==== pybench' "$OUT/bench.log"; then
      echo
      echo "---- pybench (python -m latte.bench's table, bench.log) ----"
      if grep -q '^==== latte\.bench' "$OUT/bench.log"; then
        sed -n '/^==== latte\.bench/,$p' "$OUT/bench.log" | grep -v '^latte\.bench: wrote' | tail -34
      else
        sed -n '/^==== pybench/,$p' "$OUT/bench.log" | tail -8
      fi
    fi
  fi
  echo
  [ $FAILED = 0 ] && echo "gpu_check: all steps that ran passed" || echo "gpu_check: FAILED (see the logs in $OUT)"
} | tee "$OUT/summary.txt"
exit $FAILED
