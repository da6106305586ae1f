#!/usr/bin/env bash
# gpu_sanitize.sh OUTDIR: the whole GPU test suite under compute-sanitizer's four tools, and the API fuzzer's
# generator on the CUDA backend under memcheck, within one deadline (GPU_SANITIZE_BUDGET_S, default 540 s from
# the start, build included: the script fits one 10-minute device call).
#
# What runs (LATTE_TEST_QUICK=1: the tests' small cases):
#   - every (tool, program) pair of memcheck (with leak check), racecheck, initcheck, synccheck x every GPU test
#     program BUILD/tests/gpu_* (gpu_mla, gpu_qknorm, gpu_reliability, ...), each pair its own process, up to
#     GPU_SANITIZE_JOBS (5) at a time, the slowest (gpu_mla) first, each under a timeout cut to the deadline;
#   - gpu_mla once more under every tool for each attention kernel the default does not take
#     (GPU_SANITIZE_ATTENTION_KERNELS, LATTE_MLA_ATTENTION values: wgmma2, the v2.1 kernel), as gpu_mla:KERNEL;
#   - fuzz_api_cuda (tests/fuzz/fuzz_api.c over cudaMalloc'd buffers, built here) under memcheck for
#     GPU_SANITIZE_FUZZ_S (75) seconds; the number of inputs it ran goes into sanitizer.json;
#   - gpu_reliability checks that plan cycles leak no device memory with cudaMemGetInfo, a device-wide number that
#     the other processes move: a run whose only failure is that check runs again alone after the others;
#   - a run that failed because the GPU's memory ran out (cudaErrorMemoryAllocation in its output: the other
#     processes and the tools' own allocations), or whose sanitizer could not track launches for want of GPU memory
#     ("Internal Sanitizer Error ... Unable to allocate enough memory"), runs again alone after the others too (the
#     latter with --force-blocking-launches, which synccheck now takes from the start: gpu_mla:wgmma2 passed so in
#     87-195 s on an H200, gpu_mla in 85 s once and past ~500 s twice, in its first tuned case: docs/RELIABILITY.md);
#   - a whole run of every program no longer fits one 10-minute device call on an H200 (gpu_mla alone: racecheck
#     ~220 s, memcheck ~130 s, synccheck ~65-95 s alone but > 480 s with four others beside it): split it over calls with
#     GPU_SANITIZE_PROGRAMS / GPU_SANITIZE_TOOLS (bench/results/2026-11-25-h200-sanitize/ ran it so);
#   - informational (never fails the step): racecheck over one gpu_mla case with cuBLASLt's kernels checked too
#     (GPU_SANITIZE_INFO=racecheck, "" to skip; the first GPU_SANITIZE_INFO_LAUNCHES launches), so the log keeps
#     what NVIDIA's own kernels report.
# Policy: latte's own kernels must be clean under every tool. NVIDIA's closed cuBLAS/cuBLASLt kernels are excluded
# by name from racecheck and initcheck (--kernel-name-exclude kns=SUBSTRING for each of GPU_SANITIZE_NV_KERNELS:
# racecheck reports hazards inside nvjet_sm90_* and initcheck reads of split-K workspace inside
# cublasLt::splitKreduce_kernel, neither of which we can fix or see into); memcheck and synccheck check every
# kernel. The exclusion is written into sanitizer.log and sanitizer.json, and the step fails if a pattern would
# also match one of latte's kernels (the __global__ declarations in src/cuda and tests/gpu_*).
#
# Status of a pair: pass | FINDINGS (errors, or racecheck hazards of either severity) | FAILED (the program failed
# or died, the tool printed no summary, or it lost launches) | TIMEOUT | NO GPU (the program found no device) |
# SKIPPED (it exited 77 for another reason) | NOT RUN (no time left) | INTERRUPTED. Only pass passes. For every
# other pair the log keeps the kernels of the reports, the sanitizer's first reports and the last lines of the
# program's own output (stdout line-buffered, so a killed program still shows where it was).
# Files: OUTDIR/sanitizer.log (table, exclusions, details), OUTDIR/sanitizer.json. Nothing else is written there.
# Exit status: 0 every pair passed; 77 no GPU (no pair could run); 1 anything else (finding, failure, timeout,
# pair not run).
# Environment: GPU_CHECK_BUILD (build-gpu), GPU_CHECK_ARCH (90a), GPU_SANITIZE_BUILD (1: configure if needed
# and build; 0: use BUILD as it is), GPU_SANITIZE_BUDGET_S, GPU_SANITIZE_JOBS, GPU_SANITIZE_FUZZ_S (0: no fuzz),
# GPU_SANITIZE_TOOLS, GPU_SANITIZE_PROGRAMS (default: every BUILD/tests/gpu_*), GPU_SANITIZE_NV_KERNELS,
# GPU_SANITIZE_EXCLUDE_TOOLS, GPU_SANITIZE_ATTENTION_KERNELS (wgmma2; "" none), GPU_SANITIZE_INFO,
# GPU_SANITIZE_INFO_FILTER, GPU_SANITIZE_INFO_LAUNCHES,
# GPU_SANITIZE_OMP_THREADS (2 per process), GPU_SANITIZE_SAN (the compute-sanitizer executable).
# shellcheck disable=SC2317  # cleanup and interrupted are called from traps
set -u

if [ $# -lt 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd) || exit 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
T0=$(date +%s)
BUDGET=${GPU_SANITIZE_BUDGET_S:-540}
DEADLINE=$((T0 + BUDGET))
RESERVE=15      # seconds kept after the last run for the report
KILL_GRACE=15   # timeout -k: SIGKILL this long after SIGTERM
MIN_START=30    # a run is not started with a shorter timeout than this
BUILD=${GPU_CHECK_BUILD:-build-gpu}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
ARCH=${GPU_CHECK_ARCH:-90a}
PAR=${GPU_SANITIZE_JOBS:-5}
FUZZ_S=${GPU_SANITIZE_FUZZ_S:-75}
TOOLS=${GPU_SANITIZE_TOOLS:-racecheck initcheck memcheck synccheck}
NV_KERNELS=${GPU_SANITIZE_NV_KERNELS:-nvjet cublas xmma cutlass gemmSN gemmk1 gemv2}
EXCL_TOOLS=${GPU_SANITIZE_EXCLUDE_TOOLS:-racecheck initcheck}
INFO=${GPU_SANITIZE_INFO-racecheck}
ATTN_KERNELS=${GPU_SANITIZE_ATTENTION_KERNELS-wgmma2}
INFO_FILTER=${GPU_SANITIZE_INFO_FILTER:-h16 b1 x0.1 cublaslt}
INFO_LAUNCHES=${GPU_SANITIZE_INFO_LAUNCHES:-150}  # the case's own ~60 launches, then the start of gpu_mla's tuning
OMP=${GPU_SANITIZE_OMP_THREADS:-2}
LOG="$OUT/sanitizer.log"
JSON="$OUT/sanitizer.json"
rm -f "$LOG" "$JSON"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_sanitize.XXXXXX") || exit 2
MON_PID=""
N_REQUIRED=0 OURS_HIT="" EXCL_OPT="" EXCL_ARGS="" SAN="" SAN_VERSION="" GPU="" GIT_REV="" FUZZ_SEED=0 RESULT="" EXIT=1

now() { date +%s; }
left() { echo $((DEADLINE - $(now))); }
say() { echo "[gpu_sanitize $(($(now) - T0))s] $*"; }
# a JSON string body: control characters dropped, backslash and quote escaped
jstr() {
  local s
  s=$(printf '%s' "$1" | tr -d '\000-\037')
  s=${s//\\/\\\\}
  printf '%s' "${s//\"/\\\"}"
}

# ---- jobs: parallel arrays, one index per (tool, program) pair -------------------------------------------
J_TOOL=() J_PROG=() J_CMD=() J_OPTS=() J_FILTER=() J_KIND=() J_CAP=() J_NOTE=() J_ENV=()
J_PID=() J_T=() J_STATUS=() J_RC=() J_ERR=() J_WARN=() J_SECS=() J_TESTS=() J_KERN=() J_DETAIL=() J_FIRST=()
add_job() {  # tool program command opts filter kind(required|info) cap_s note [env: NAME=VALUE words]
  local i=${#J_TOOL[@]}
  J_TOOL[i]=$1 J_PROG[i]=$2 J_CMD[i]=$3 J_OPTS[i]=$4 J_FILTER[i]=$5 J_KIND[i]=$6 J_CAP[i]=$7 J_NOTE[i]=$8
  J_ENV[i]=${9:-}
  J_PID[i]="" J_T[i]=0 J_STATUS[i]="NOT RUN" J_RC[i]="" J_ERR[i]="" J_WARN[i]="" J_SECS[i]=0 J_TESTS[i]=""
  J_KERN[i]="" J_DETAIL[i]="" J_FIRST[i]=""
}

running_pids() {
  local i
  for i in "${!J_TOOL[@]}"; do
    [ -n "${J_PID[i]}" ] && [ ! -f "$WORK/j$i/rc" ] && [ -f "$WORK/j$i/pid" ] && cat "$WORK/j$i/pid"
  done
}
cleanup() {
  local p
  # our own runs only, by their process ids (timeout passes SIGTERM on to compute-sanitizer and the program)
  for p in $(running_pids 2> /dev/null); do kill -TERM "$p" 2> /dev/null; done
  [ -n "$MON_PID" ] && kill "$MON_PID" 2> /dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
interrupted() {  # SIGTERM/SIGINT/SIGHUP: stop our runs, report what finished (as a failure)
  local i p
  trap - INT TERM HUP
  say "interrupted: stopping the runs, writing what finished"
  INTERRUPTED=1
  local stopped=""
  for i in "${!J_TOOL[@]}"; do
    case "${J_PID[i]}" in "" | skip | finished) continue ;; esac
    [ -f "$WORK/j$i/rc" ] || stopped="$stopped $i"
  done
  for p in $(running_pids 2> /dev/null); do kill -TERM "$p" 2> /dev/null; done
  sleep 1
  for i in "${!J_TOOL[@]}"; do
    case "${J_PID[i]}" in "" | skip | finished) continue ;; esac
    finish_job "$i"
    case " $stopped " in *" $i "*) J_STATUS[i]=INTERRUPTED ;; esac  # what it printed is kept
  done
  if declare -F write_report > /dev/null; then
    write_report
    sed -i 's/^gpu_sanitize: \(pass\|FAIL\|NO GPU\)$/gpu_sanitize: FAIL (interrupted)/' "$LOG"
  else
    echo "gpu_sanitize: interrupted after $(($(now) - T0))s, before any run" > "$LOG"
    echo '{"result": "FAIL", "reason": "interrupted before any run"}' > "$JSON"
  fi
  exit 1
}
trap interrupted INT TERM HUP

# Starts job i in the background with timeout t (seconds). The job's files: WORK/ji/{san.txt (the tool's
# report), out.txt (the program's own output), pid (timeout's), rc, secs}; it runs in WORK/ji so that nothing
# (a fuzz crash input) lands in the tree.
start_job() {
  local i=$1 t=$2 d="$WORK/j$1" pre=""
  rm -rf "$d"
  mkdir -p "$d"
  J_T[i]=$t
  # line-buffered stdout: a program killed by a signal still leaves its last lines
  command -v stdbuf > /dev/null && pre="stdbuf -oL"
  (
    cd "$d" || exit 1
    s0=$(date +%s)
    export LATTE_TEST_QUICK=1 OMP_NUM_THREADS="$OMP"
    # racecheck and initcheck (the required runs): every GEMM is latte's own (LATTE_MLA_GEMM=latte, the forced-cuBLASLt
    # cases skipped), so each kernel they check is ours. Seen on an H100 (2026-11-22): with cuBLASLt's GEMMs in the
    # program, racecheck "failed to handle a hardware exception" and the run died with an illegal address even with
    # its kernels excluded by name, and initcheck flags latte kernels reading what excluded GEMMs wrote. The
    # informational run (kind info) keeps cuBLASLt. Their device-wide leak check is off: the tools allocate device memory
    # themselves as the program runs (memcheck --leak-check full checks leaks).
    case "${J_TOOL[i]}" in
      racecheck|initcheck)
        if [ "${J_KIND[i]}" = required ]; then export LATTE_MLA_GEMM=latte LATTE_TEST_NO_CUBLASLT=1; fi
        export LATTE_TEST_DEVICE_LEAK_CHECK=0
        # racecheck: no tuning (it times every candidate GEMM several times: the untuned quick suite did not finish in
        # 470 s on an H100 with it; one filtered case passed in 1.4 s and then sat in the tuning checks)
        [ "${J_TOOL[i]}" = racecheck ] && export LATTE_TEST_NO_TUNE=1 ;;
    esac
    # shellcheck disable=SC2030  # the filter is the job's own, set in its subshell
    if [ -n "${J_FILTER[i]}" ]; then export LATTE_TEST_FILTER="${J_FILTER[i]}"; else unset LATTE_TEST_FILTER; fi
    # shellcheck disable=SC2086  # NAME=VALUE words, no spaces inside one
    if [ -n "${J_ENV[i]}" ]; then export ${J_ENV[i]}; fi
    # shellcheck disable=SC2086  # options and command are word lists by construction (no spaces inside a word)
    timeout -k "$KILL_GRACE" "$t" $pre "$SAN" --tool "${J_TOOL[i]}" ${J_OPTS[i]} --print-limit 30 \
      --log-file "$d/san.txt" ${J_CMD[i]} < /dev/null > "$d/out.txt" 2>&1 &
    echo $! > "$d/pid"
    wait $!
    rc=$?
    echo $(($(date +%s) - s0)) > "$d/secs"
    echo "$rc" > "$d/rc"
  ) &
  J_PID[i]=$!
  say "start ${J_TOOL[i]} ${J_PROG[i]}${J_FILTER[i]:+ [${J_FILTER[i]}]} (timeout ${t}s)"
}

# Kernel names of the reports the tool printed, with counts ("count<TAB>name" lines), from san.txt.
kernels_of() {
  awk '
    function emit(f) {
      gsub(/\(anonymous namespace\)/, "{anon}", f); sub(/^void /, "", f); sub(/\(.*/, "", f); sub(/<.*/, "", f)
      gsub(/^ +| +$/, "", f); if (f == "") f = "?"; n[f]++
    }
    /Race reported between/ { f = $0; sub(/.* access at /, "", f); sub(/\+0x[0-9a-fA-F]+.*/, "", f); r = f; emit(f); next }
    /^=+ +and (Read|Write) access at / {  # the other end of the race: counted when it is another kernel
      f = $0; sub(/.* access at /, "", f); sub(/\+0x[0-9a-fA-F]+.*/, "", f); if (f != r) emit(f); next }
    /^=+ +(Invalid|Uninitialized|Barrier error|Warpgroup MMA|Misaligned|Out-of-range|Potential invalid|Malloc\/Free)/ {
      want = 1; next }
    /^=+ +Program hit / { n["(CUDA API error)"]++; next }
    /^=+ +Leaked [0-9]+ bytes/ { n["(device memory leak)"]++; next }
    want && /^=+ +at / { f = $0; sub(/^=+ +at /, "", f); sub(/\+0x[0-9a-fA-F]+.*/, "", f); emit(f); want = 0 }
    END { for (k in n) print n[k] "\t" k }' "$1" 2> /dev/null | sort -rn | head -8
}
is_nv_kernel() {  # name: matches one of the NVIDIA patterns (case-insensitive)?
  local k lc
  lc=$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]')
  for k in $NV_KERNELS; do
    case "$lc" in *"$(printf '%s' "$k" | tr '[:upper:]' '[:lower:]')"*) return 0 ;; esac
  done
  return 1
}

# Reads job i's files into J_STATUS, J_RC, J_ERR, J_WARN, J_SECS, J_TESTS, J_KERN, J_DETAIL.
finish_job() {
  local i=$1 d="$WORK/j$1" rc san out sum errs="" warns="" st note="" k
  rc=$(cat "$d/rc" 2> /dev/null || echo "?")
  san="$d/san.txt"
  out="$d/out.txt"
  J_RC[i]=$rc
  J_SECS[i]=$(cat "$d/secs" 2> /dev/null || echo 0)
  if [ "${J_TOOL[i]}" = racecheck ]; then
    # "RACECHECK SUMMARY: 8 hazards displayed (10 errors, 0 warnings)"
    sum=$(grep -E "RACECHECK SUMMARY:" "$san" 2> /dev/null | tail -1)
    if [ -n "$sum" ]; then
      errs=$(printf '%s' "$sum" | sed -nE 's/.*\(([0-9]+) error.*/\1/p')
      warns=$(printf '%s' "$sum" | sed -nE 's/.*, ([0-9]+) warning.*/\1/p')
    fi
  else
    sum=$(grep -E "ERROR SUMMARY:" "$san" 2> /dev/null | tail -1)
    [ -n "$sum" ] && errs=$(printf '%s' "$sum" | sed -nE 's/.*ERROR SUMMARY: ([0-9]+) error.*/\1/p')
  fi
  J_ERR[i]=$errs
  J_WARN[i]=$warns
  if [ "${J_PROG[i]}" = fuzz_api_cuda ]; then
    J_TESTS[i]=$(grep -oE "fuzz_api: [0-9]+ executions" "$out" 2> /dev/null | tail -1 | grep -oE "[0-9]+")
  else
    J_TESTS[i]=$(grep -E "[0-9]+ passed, [0-9]+ failed" "$out" 2> /dev/null | tail -1 | cut -c1-80)
  fi
  J_KERN[i]=$(kernels_of "$san")
  local found=$((${errs:-0} + ${warns:-0}))
  if [ "$rc" = 124 ] || { [ "$rc" = 137 ] && [ "${J_SECS[i]}" -ge "${J_T[i]}" ]; }; then
    st=TIMEOUT
    note="no result within ${J_T[i]}s"
  elif grep -qE "skipped, no CUDA device|no CUDA device is usable|no CUDA device, nothing to do" "$out" 2> /dev/null; then
    st="NO GPU"
  elif [ "$rc" = 77 ]; then
    st=SKIPPED
    note="the program skipped itself (exit 77) on this machine: $(grep -i -m1 skip "$out" | cut -c1-120)"
  elif [ -n "$errs" ] && [ "$found" -gt 0 ]; then
    st=FINDINGS
  elif [ "$rc" != 0 ]; then
    st=FAILED
    if grep -q "^FAIL " "$out" 2> /dev/null; then
      note="the program's checks failed: $(grep -c '^FAIL ' "$out") FAIL line(s)"
    elif [ "$rc" -ge 129 ] 2> /dev/null && [ "$rc" -le 192 ]; then
      k=$(kill -l $((rc - 128)) 2> /dev/null)
      note="the process died of SIG${k:-$((rc - 128))} (rc $rc) before any check failed"
      [ "$k" = KILL ] && note="$note (out of host memory? see host_mem_available_min_mib)"
      [ "$k" = ABRT ] && note="$note (an abort: assertion, or the fuzzer's FUZZ_ASSERT)"
    elif [ "$rc" = 9 ]; then
      note="rc 9 and no FAIL line: the tool's code for a target killed by a signal? (out of host memory? see host_mem_available_min_mib)"
    elif grep -q "didn't terminate successfully" "$san" 2> /dev/null; then
      note="the process did not terminate successfully (rc $rc) and printed no FAIL line: see its last lines"
    else
      note="rc $rc"
    fi
  elif [ -z "$sum" ]; then
    st=FAILED
    note="rc 0 but no summary from the tool"
  else
    st=pass
  fi
  if grep -q "Internal Sanitizer Error" "$san" 2> /dev/null && [ "$st" = pass ]; then
    st=FAILED
    note="the sanitizer reports an internal error (launches not tracked)"
  fi
  # memcheck/synccheck check NVIDIA's kernels too: say so when they are where the reports are
  if [ "$st" = FINDINGS ] && [ -n "${J_KERN[i]}" ]; then
    local nv=0 ours=0
    while IFS=$'\t' read -r _ k; do
      if is_nv_kernel "$k"; then nv=1; else ours=1; fi
    done <<< "${J_KERN[i]}"
    if [ $nv = 1 ] && [ $ours = 0 ]; then
      note="reports in NVIDIA kernels only"
      if [ "${J_KIND[i]}" = required ] && [ -z "$(excl_for "${J_TOOL[i]}")" ]; then
        note="$note (policy: exclude them from ${J_TOOL[i]} too, GPU_SANITIZE_EXCLUDE_TOOLS=\"$EXCL_TOOLS ${J_TOOL[i]}\")"
      elif [ "${J_KIND[i]}" = required ]; then
        note="$note, although excluded: the exclusion did not take effect (see $EXCL_OPT in compute-sanitizer --help)"
      fi
    fi
    [ $ours = 1 ] && note="reports in latte's kernels"
    [ "$rc" != 0 ] && note="$note; the program failed too (rc $rc, $(grep -c '^FAIL ' "$out" 2> /dev/null) FAIL line(s))"
    # initcheck does not see the writes of kernels it does not check: a latte kernel reading what an excluded
    # cuBLASLt kernel wrote (a projection's output) would read "uninitialized" memory
    if [ $ours = 1 ] && [ "${J_TOOL[i]}" = initcheck ] && [ -n "$(excl_for initcheck)" ] && [ "${J_KIND[i]}" = required ]; then
      note="$note (if they read a cuBLASLt GEMM's output, the exclusion may hide its writes from initcheck: compare with GPU_SANITIZE_EXCLUDE_TOOLS=racecheck)"
    fi
  fi
  J_STATUS[i]=$st
  J_DETAIL[i]=$note
}

# ---- setup ---------------------------------------------------------------------------------------------------
SAN=${GPU_SANITIZE_SAN:-}
if [ -z "$SAN" ]; then
  SAN=$(command -v compute-sanitizer 2> /dev/null)
  [ -z "$SAN" ] && command -v nvcc > /dev/null && [ -x "$(dirname "$(command -v nvcc)")/compute-sanitizer" ] &&
    SAN="$(dirname "$(command -v nvcc)")/compute-sanitizer"
  [ -z "$SAN" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && SAN=/usr/local/cuda/bin/compute-sanitizer
fi
GPU=$(nvidia-smi -L 2> /dev/null | head -1 | sed 's/ (UUID.*//')
# one process at a time where the GPU admits only one context (compute mode Exclusive_Process)
if nvidia-smi --query-gpu=compute_mode --format=csv,noheader 2> /dev/null | head -1 | grep -qi exclusive; then
  PAR=1
  GPU="$GPU (exclusive compute mode: one run at a time)"
fi
GIT_REV=${LATTE_GIT_REV:-$(git rev-parse --short HEAD 2> /dev/null || echo unknown)}
fatal() {  # message: no run possible; report it and stop (exit 1)
  say "$1"
  printf 'gpu_sanitize: %s\n' "$1" > "$LOG"
  [ -f "$WORK/build.log" ] && { echo "---- build (last 30 lines) ----"; tail -30 "$WORK/build.log"; } >> "$LOG"
  printf '{"result": "FAIL", "reason": "%s", "git": "%s", "gpu": "%s"}\n' "$(jstr "$1")" "$(jstr "$GIT_REV")" \
    "$(jstr "${GPU:-none}")" > "$JSON"
  exit 1
}
if [ -z "$SAN" ] || [ ! -x "$SAN" ]; then fatal "compute-sanitizer not found (PATH, next to nvcc, /usr/local/cuda/bin)"; fi
SAN_VERSION=$("$SAN" --version 2> /dev/null | grep -iE "version" | tail -1)
# the exclusion option: --kernel-name-exclude (2023.3+), --kernel-regex-exclude (2021.2 to 2023.2)
SAN_HELP=$("$SAN" --help 2> /dev/null)
EXCL_OPT=""
if printf '%s' "$SAN_HELP" | grep -q -- "--kernel-name-exclude"; then EXCL_OPT=--kernel-name-exclude
elif printf '%s' "$SAN_HELP" | grep -q -- "--kernel-regex-exclude"; then EXCL_OPT=--kernel-regex-exclude
fi
EXCL_ARGS=""
for k in $NV_KERNELS; do EXCL_ARGS="$EXCL_ARGS $EXCL_OPT kns=$k"; done
EXCL_ARGS=${EXCL_ARGS# }

say "budget ${BUDGET}s, ${PAR} runs at a time, $SAN (${SAN_VERSION:-version unknown}), GPU: ${GPU:-none found by nvidia-smi}"
if [ "${GPU_SANITIZE_BUILD:-1}" != 0 ]; then
  say "build ($BUILD, CUDA arch $ARCH)"
  gen=""
  command -v ninja > /dev/null && [ ! -f "$BUILD/CMakeCache.txt" ] && gen="-G Ninja"
  {
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
      # shellcheck disable=SC2086
      timeout 120 cmake -S . -B "$BUILD" $gen -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH"
    fi &&
      # at least 4 minutes left for the sanitizers (a fresh build takes ~1 minute on 16 cores)
      timeout $(($(left) > 300 ? $(left) - 240 : 60)) cmake --build "$BUILD" -j "$(nproc 2> /dev/null || echo 16)"
  } > "$WORK/build.log" 2>&1 || fatal "the build failed"
  say "built"
fi

PROGS=${GPU_SANITIZE_PROGRAMS:-}
if [ -z "$PROGS" ]; then
  for f in "$BUILD"/tests/gpu_*; do
    case "$(basename "$f")" in *.*) ;; *) [ -f "$f" ] && [ -x "$f" ] && PROGS="$PROGS $(basename "$f")" ;; esac
  done
fi
# gpu_mla first: the slowest under every tool
case " $PROGS " in *" gpu_mla "*) PROGS="gpu_mla ${PROGS/ gpu_mla / }" ;; esac
read -ra plist <<< "$PROGS"
PROGS=$(printf '%s\n' "${plist[@]}" | awk '!seen[$0]++' | tr '\n' ' ')
PROGS=${PROGS% }
[ -n "$PROGS" ] || fatal "no GPU test programs in $BUILD/tests"

# The exclusion patterns must not match a kernel of ours: every __global__ declaration line in src/cuda and
# tests/gpu_* (its name, namespace and parameter types end up in the mangled name the filter sees).
OURS_HIT=""
for k in $NV_KERNELS; do
  h=$(grep -hn -i -E "__global__" src/cuda/*.cu src/cuda/*.cuh tests/gpu_* 2> /dev/null | grep -i -F -- "$k" | head -3)
  [ -n "$h" ] && OURS_HIT="$OURS_HIT kns=$k matches: $(printf '%s' "$h" | tr '\n' ' ' | cut -c1-160);"
done

FUZZ_BIN="$BUILD/fuzz/fuzz_api_cuda"
FUZZ_OVERHEAD=100  # seconds beyond the fuzzing itself: start-up under memcheck, the last input, the leak check
FUZZ_NOTE=""
if [ "$FUZZ_S" != 0 ] && case " $TOOLS " in *" memcheck "*) true ;; *) false ;; esac; then
  if [ "${GPU_SANITIZE_BUILD:-1}" != 0 ]; then
    env FUZZ=cuda BUILD="$BUILD" timeout 120 tests/fuzz/build.sh "$BUILD/fuzz" > "$WORK/fuzz_build.log" 2>&1 ||
      FUZZ_NOTE="the build of fuzz_api_cuda failed: $(grep -m1 -iE 'error' "$WORK/fuzz_build.log" | cut -c1-150)"
  fi
  [ -z "$FUZZ_NOTE" ] && [ ! -x "$FUZZ_BIN" ] && FUZZ_NOTE="$FUZZ_BIN missing"
fi

# ---- the job list, slowest first -----------------------------------------------------------------------------
excl_for() { case " $EXCL_TOOLS " in *" $1 "*) [ -n "$EXCL_OPT" ] && echo "$EXCL_ARGS" ;; esac; }
opts_for() {  # tool: its options (memcheck: leak check; racecheck/initcheck: the NVIDIA exclusion; synccheck: blocking
  local o=""    # launches, since its tracking of the tune's hundreds of launches in flight ran the GPU out of memory)
  [ "$1" = memcheck ] && o="--leak-check full"
  [ "$1" = synccheck ] && o="--force-blocking-launches"
  echo "$o $(excl_for "$1")"
}
first=${PROGS%% *}
for tool in $TOOLS; do add_job "$tool" "$first" "$BUILD/tests/$first" "$(opts_for "$tool")" "" required 0 ""; done
# gpu_mla again under each attention kernel the default does not take (LATTE_MLA_ATTENTION), shown as gpu_mla:KERNEL
if [ "$first" = gpu_mla ]; then
  for v in $ATTN_KERNELS; do
    for tool in $TOOLS; do
      add_job "$tool" "gpu_mla:$v" "$BUILD/tests/gpu_mla" "$(opts_for "$tool")" "" required 0 "" \
        "LATTE_MLA_ATTENTION=$v"
    done
  done
fi
FUZZ_SEED=$T0
if [ "$FUZZ_S" != 0 ] && case " $TOOLS " in *" memcheck "*) true ;; *) false ;; esac; then
  # -seconds=@S@: FUZZ_S, or less when less time is left at its start (the run must end by itself)
  add_job memcheck fuzz_api_cuda "$FUZZ_BIN -seconds=@S@ -seed=$FUZZ_SEED" "--leak-check full" "" required \
    $((FUZZ_S + FUZZ_OVERHEAD)) "seed $FUZZ_SEED"
  if [ -n "$FUZZ_NOTE" ]; then
    i=$((${#J_TOOL[@]} - 1))
    J_STATUS[i]=FAILED J_DETAIL[i]=$FUZZ_NOTE J_PID[i]=skip
  fi
fi
for p in ${PROGS#"$first"}; do
  for tool in $TOOLS; do add_job "$tool" "$p" "$BUILD/tests/$p" "$(opts_for "$tool")" "" required 0 ""; done
done
N_REQUIRED=${#J_TOOL[@]}
for tool in $INFO; do
  case " $PROGS " in *" gpu_mla "*)
    add_job "$tool" gpu_mla "$BUILD/tests/gpu_mla" "--launch-count $INFO_LAUNCHES" "$INFO_FILTER" info 240 \
      "cuBLASLt kernels checked too (no exclusion), first $INFO_LAUNCHES launches, case \"$INFO_FILTER\"" ;;
  esac
done

# host memory (MemAvailable) and GPU memory, sampled while the runs go: several sanitizers share 128 GiB
(
  while :; do
    a=$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo 2> /dev/null)
    g=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2> /dev/null | head -1 | tr -d ' ')
    echo "${a:-} ${g:-}" >> "$WORK/mem.txt"
    sleep 5
  done
) &
MON_PID=$!

# ---- report --------------------------------------------------------------------------------------------------
# write_report: the table and the details into sanitizer.log, every run into sanitizer.json; sets RESULT and EXIT
write_report() {
  ELAPSED=$(($(now) - T0))
  HOST_MIN=$(awk '$1 != "" {if (m == "" || $1 < m) m = $1} END {print m}' "$WORK/mem.txt" 2> /dev/null)
  GPU_MAX=$(awk '$2 != "" {if ($2 > m) m = $2} END {print m + 0}' "$WORK/mem.txt" 2> /dev/null)
  bad=0 nogpu=0 ran=0
  [ -n "${INTERRUPTED:-}" ] && bad=1
  for ((i = 0; i < N_REQUIRED; i++)); do
    case "${J_STATUS[i]}" in
      pass) ran=1 ;;
      "NO GPU") nogpu=$((nogpu + 1)) ;;
      *) bad=1 ;;
    esac
  done
  [ -n "$OURS_HIT" ] && bad=1
  if [ $bad = 0 ] && [ $ran = 1 ] && [ $nogpu = 0 ]; then RESULT=pass EXIT=0
  elif [ $bad = 0 ] && [ $ran = 0 ] && [ $nogpu -gt 0 ]; then RESULT="NO GPU" EXIT=77
  else RESULT=FAIL EXIT=1
  fi

  {
    echo "gpu_sanitize: $(date -u +%Y-%m-%dT%H:%M:%SZ), git $GIT_REV, ${GPU:-no GPU found by nvidia-smi}"
    echo "compute-sanitizer: $SAN (${SAN_VERSION:-version unknown}); LATTE_TEST_QUICK=1; ${PAR} runs at a time;" \
      "budget ${BUDGET}s, took ${ELAPSED}s; host memory available min ${HOST_MIN:-?} MiB, GPU memory used max ${GPU_MAX:-?} MiB"
    if [ -n "$EXCL_OPT" ]; then
      echo "excluded from $EXCL_TOOLS (NVIDIA's closed cuBLAS/cuBLASLt kernels, by mangled-name substring): $EXCL_ARGS"
    else
      echo "NO exclusion possible: $SAN has neither --kernel-name-exclude nor --kernel-regex-exclude"
    fi
    echo "  latte's kernels matched by an exclusion pattern: ${OURS_HIT:-none}"
    echo
    printf '%-10s %-16s %-11s %-4s %-7s %-5s %s\n' tool program status rc errors secs "tests / notes"
    for i in "${!J_TOOL[@]}"; do
      e=${J_ERR[i]:-?}
      [ -n "${J_WARN[i]}" ] && e="$e+${J_WARN[i]}w"
      n=${J_TESTS[i]}
      [ "${J_PROG[i]}" = fuzz_api_cuda ] && n="${n:-?} inputs; ${J_NOTE[i]}"
      [ "${J_KIND[i]}" = info ] && n="informational: ${J_NOTE[i]}"
      case " $EXCL_TOOLS " in *" ${J_TOOL[i]} "*)
        [ "${J_KIND[i]}" = required ] && [ -n "$EXCL_OPT" ] && n="$n${n:+; }NVIDIA kernels excluded" ;;
      esac
      n="$n${J_DETAIL[i]:+${n:+; }${J_DETAIL[i]}}"
      st=${J_STATUS[i]}
      [ -n "${J_FIRST[i]}" ] && st="$st*"
      printf '%-10s %-16s %-11s %-4s %-7s %-5s %s\n' "${J_TOOL[i]}" "${J_PROG[i]}" "$st" "${J_RC[i]:--}" "$e" \
        "${J_SECS[i]}" "$n"
    done
    for i in "${!J_TOOL[@]}"; do
      [ -n "${J_FIRST[i]}" ] && echo "* ${J_TOOL[i]} ${J_PROG[i]}: first run ${J_FIRST[i]}"
    done
    shown_nogpu=0
    for i in "${!J_TOOL[@]}"; do
      [ "${J_STATUS[i]}" = pass ] && continue
      [ "${J_STATUS[i]}" = "NOT RUN" ] && continue
      d="$WORK/j$i"
      [ -d "$d" ] || continue
      if [ "${J_STATUS[i]}" = "NO GPU" ]; then  # one of them says it all
        [ $shown_nogpu = 1 ] && continue
        shown_nogpu=1
      fi
      echo
      # shellcheck disable=SC2031
      echo "---- ${J_TOOL[i]} ${J_PROG[i]}${J_FILTER[i]:+ [LATTE_TEST_FILTER=${J_FILTER[i]}]}: ${J_STATUS[i]} (${J_KIND[i]}) ----"
      echo "command: compute-sanitizer --tool ${J_TOOL[i]} ${J_OPTS[i]} ${J_CMD[i]#"$BUILD/"}"
      if [ -n "${J_KERN[i]}" ]; then
        echo "kernels of the printed reports (count, name):"
        printf '%s\n' "${J_KERN[i]}" | sed 's/^/  /'
      fi
      echo "sanitizer (first reports, summary):"
      grep -vE "^=+ *$|COMPUTE-SANITIZER|Saved host backtrace|Host Frame|^=+ +(in|at) .*\.so|SUMMARY|didn't terminate|returned an error" \
        "$d/san.txt" 2> /dev/null | head -24 | cut -c1-240 | sed 's/^/  /'
      grep -E "SUMMARY|didn't terminate|returned an error" "$d/san.txt" 2> /dev/null | tail -3 | sed 's/^/  /'
      echo "program output (last 25 lines):"
      tail -25 "$d/out.txt" 2> /dev/null | cut -c1-240 | sed 's/^/  /'
      if [ -f "$d/fuzz-crash.bin" ]; then
        echo "fuzz input (hex; replay: printf the bytes into a file, fuzz_api_cuda FILE):"
        od -An -tx1 -v "$d/fuzz-crash.bin" | tr -d ' \n' | fold -w 128 | sed 's/^/  /'
        echo
      fi
    done
    echo
    echo "gpu_sanitize: $RESULT"
  } > "$LOG"

  {
    printf '{"result": "%s", "git": "%s", "gpu": "%s", "compute_sanitizer": "%s", "quick": true,' \
      "$RESULT" "$(jstr "$GIT_REV")" "$(jstr "${GPU:-none}")" "$(jstr "$SAN_VERSION")"
    printf ' "budget_s": %s, "elapsed_s": %s, "parallel": %s, "host_mem_available_min_mib": %s, "gpu_mem_used_max_mib": %s,' \
      "$BUDGET" "$ELAPSED" "$PAR" "${HOST_MIN:-null}" "${GPU_MAX:-null}"
    printf ' "exclusion": {"tools": "%s", "option": "%s", "filters": "%s", "why": "NVIDIA cuBLAS/cuBLASLt kernels (closed source)", "latte_kernels_matched": "%s"},' \
      "$(jstr "$EXCL_TOOLS")" "$EXCL_OPT" "$(jstr "$EXCL_ARGS")" "$(jstr "$OURS_HIT")"
    printf ' "runs": ['
    for i in "${!J_TOOL[@]}"; do
      [ "$i" -gt 0 ] && printf ', '
      excl=false
      case " $EXCL_TOOLS " in *" ${J_TOOL[i]} "*) [ "${J_KIND[i]}" = required ] && [ -n "$EXCL_OPT" ] && excl=true ;; esac
      kj=""
      while IFS=$'\t' read -r c k; do
        [ -n "$k" ] && kj="$kj${kj:+, }\"$(jstr "$k")\": $c"
      done <<< "${J_KERN[i]}"
      printf '{"tool": "%s", "program": "%s", "filter": "%s", "kind": "%s", "status": "%s", "rc": %s, "errors": %s, "warnings": %s,' \
        "${J_TOOL[i]}" "${J_PROG[i]}" "$(jstr "${J_FILTER[i]}")" "${J_KIND[i]}" "${J_STATUS[i]}" \
        "$(case "${J_RC[i]}" in '' | *[!0-9]*) echo null ;; *) echo "${J_RC[i]}" ;; esac)" "${J_ERR[i]:-null}" "${J_WARN[i]:-null}"
      printf ' "seconds": %s, "timeout_s": %s, "nvidia_excluded": %s, "report_kernels": {%s}, "note": "%s"' \
        "${J_SECS[i]}" "${J_T[i]}" "$excl" "$kj" "$(jstr "${J_DETAIL[i]}${J_FIRST[i]:+${J_DETAIL[i]:+; }first run: ${J_FIRST[i]}}")"
      if [ "${J_PROG[i]}" = fuzz_api_cuda ]; then
        fs=$(printf '%s' "${J_CMD[i]}" | sed -nE 's/.*-seconds=([0-9]+).*/\1/p')
        printf ', "cases": %s, "seed": %s, "fuzz_seconds": %s}' "${J_TESTS[i]:-null}" "$FUZZ_SEED" "${fs:-null}"
      else
        printf ', "tests": "%s"}' "$(jstr "${J_TESTS[i]}")"
      fi
    done
    printf ']}\n'
  } > "$JSON"
}

# ---- run: required pairs (PAR at a time), then lone re-runs, the informational pair last ---------------------
run_queue() {  # first last slots: start jobs in [first, last) as slots free up (slowest first), wait for them
  local lo=$1 hi=$2 slots=$3 next=$1 busy i t s
  while :; do
    busy=0
    for ((i = lo; i < hi; i++)); do
      if [ -n "${J_PID[i]}" ] && [ "${J_PID[i]}" != skip ] && [ "${J_PID[i]}" != finished ]; then
        if [ -f "$WORK/j$i/rc" ]; then
          wait "${J_PID[i]}" 2> /dev/null
          J_PID[i]=finished
          finish_job "$i"
          say "${J_TOOL[i]} ${J_PROG[i]}: ${J_STATUS[i]} (rc ${J_RC[i]}, errors ${J_ERR[i]:-?}, ${J_SECS[i]}s)${J_DETAIL[i]:+ ${J_DETAIL[i]}}"
        else
          busy=$((busy + 1))
        fi
      fi
    done
    while [ $busy -lt "$slots" ] && [ "$next" -lt "$hi" ]; do
      i=$next
      next=$((next + 1))
      [ -n "${J_PID[i]}" ] && continue  # decided already (fuzz build failed)
      t=$(($(left) - RESERVE - KILL_GRACE))
      [ "${J_CAP[i]}" -gt 0 ] && [ "${J_CAP[i]}" -lt $t ] && t=${J_CAP[i]}
      if [ "${J_PROG[i]}" = fuzz_api_cuda ]; then
        s=$((t - FUZZ_OVERHEAD))
        [ $s -gt "$FUZZ_S" ] && s=$FUZZ_S
        [ "$s" -lt 15 ] && t=0
        J_CMD[i]=${J_CMD[i]//@S@/$s}
        [ "$t" -gt 0 ] && J_NOTE[i]="${J_NOTE[i]}, ${s}s of inputs"
      fi
      if [ "$t" -lt $MIN_START ]; then
        J_PID[i]=skip
        J_STATUS[i]="NOT RUN"
        J_DETAIL[i]="no time left before the deadline"
        say "${J_TOOL[i]} ${J_PROG[i]}: not run (time)"
        continue
      fi
      start_job "$i" "$t"
      busy=$((busy + 1))
      sleep 2  # staggered: each sanitizer sets up its connection to the program it starts
    done
    [ $busy -eq 0 ] && [ "$next" -ge "$hi" ] && break
    sleep 1
  done
}
run_queue 0 "$N_REQUIRED" "$PAR"

# Runs that failed for a reason the other processes on the GPU caused run again, alone, if there is time left.
# rerun_alone I WHY: WHY says what failed, in the report
rerun_alone() {
  local i=$1 why=$2
  if [ $(($(left) - RESERVE - KILL_GRACE)) -lt $MIN_START ]; then
    J_DETAIL[i]="${J_DETAIL[i]}; $why with other processes on the GPU, no time to run it alone"
    return
  fi
  J_FIRST[i]="${J_STATUS[i]} with other processes on the GPU, $why: run again alone"
  J_PID[i]=""
  run_queue "$i" $((i + 1)) 1
}
for ((i = 0; i < N_REQUIRED; i++)); do
  f="$WORK/j$i/out.txt"
  # gpu_reliability whose only failed check is the device-wide leak measurement (which the other processes move)
  if [ "${J_PROG[i]}" = gpu_reliability ] && [ "${J_STATUS[i]}" = FAILED ] && [ "${J_ERR[i]:-x}" = 0 ]; then
    nf=$(grep -c "^FAIL " "$f" 2> /dev/null)
    nl=$(grep "^FAIL " "$f" 2> /dev/null | grep -c "leaks device memory")
    if [ "${nf:-0}" -gt 0 ] && [ "$nf" = "$nl" ]; then
      rerun_alone "$i" "only the device-memory leak check failed"
      continue
    fi
  fi
  # out of GPU memory (the other sanitizers' processes and their own allocations fill it: seen on an H200 with 5 at a
  # time, gpu_attention and gpu_gemm_sm90 failing at their first cudaMalloc)
  case "${J_STATUS[i]}" in pass|"NOT RUN"|"NO GPU"|SKIPPED) continue ;; esac
  if grep -q "cudaErrorMemoryAllocation" "$f" 2> /dev/null; then rerun_alone "$i" "out of GPU memory"; continue; fi
  # the tool itself out of GPU memory: "Internal Sanitizer Error: ... didn't track the launch ... (Unable to allocate
  # enough memory ...)", one per launch it could not track, each counted as an error (seen on an H200 under synccheck,
  # at cuBLASLt's launches in gpu_mla's tuned cases: 3895-9068 such errors a run, no report of a hazard): the run goes
  # again alone, with launches blocking (the tune enqueues hundreds of launches ahead, and the tool holds memory per
  # launch in flight: the "memory footprint" advice of its manual)
  if grep -q "Internal Sanitizer Error.*Unable to allocate enough memory" "$WORK/j$i/san.txt" 2> /dev/null; then
    case " ${J_OPTS[i]} " in *" --force-blocking-launches "*) ;; *) J_OPTS[i]="${J_OPTS[i]} --force-blocking-launches" ;; esac
    rerun_alone "$i" "the sanitizer out of GPU memory (run again with --force-blocking-launches)"
  fi
done

if [ "$N_REQUIRED" -lt ${#J_TOOL[@]} ]; then run_queue "$N_REQUIRED" ${#J_TOOL[@]} 1; fi
kill "$MON_PID" 2> /dev/null
MON_PID=""

write_report
sed -n '/^tool /,/^$/p' "$LOG"
say "$RESULT: $LOG, $JSON"
exit $EXIT
