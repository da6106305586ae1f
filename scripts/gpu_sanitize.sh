#!/usr/bin/env bash
# gpu_sanitize.sh OUTDIR: the GPU test programs under compute-sanitizer, one run at a time (they share one GPU),
# in quick mode (LATTE_TEST_QUICK=1: the small cases). memcheck (with leak check) and synccheck over every GPU
# test; racecheck and initcheck over the cases that cover each kernel (LATTE_TEST_FILTER), since they are the
# slow tools. Writes OUTDIR/sanitizer.log (summary lines) and OUTDIR/sanitizer.json; exits 1 on any finding.
set -u
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
BUILD=${GPU_CHECK_BUILD:-$PWD/build-gpu}
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ ! -x "$BUILD/tests/gpu_mla" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90a -DLATTE_BUILD_BENCH=OFF > "$OUT/sanitizer_build.log" 2>&1 &&
    cmake --build "$BUILD" -j 16 >> "$OUT/sanitizer_build.log" 2>&1 || { tail -20 "$OUT/sanitizer_build.log"; exit 1; }
fi
export LATTE_TEST_QUICK=1 LATTE_REQUIRE_GPU=1 OMP_NUM_THREADS=4
json="{"; bad=0
T0=$(date +%s); DEADLINE=${GPU_SANITIZE_BUDGET_S:-540}  # the whole script fits one 10-minute device call
run() {  # tool program filter timeout
  local tool=$1 prog=$2 filter=$3 t=$4 extra="" log
  local left=$((DEADLINE - ($(date +%s) - T0)))
  if [ $left -lt 30 ]; then
    printf '%-10s %-16s %-28s skipped: no time left\n' "$tool" "$prog" "${filter:-all}" | tee -a "$OUT/sanitizer.log"
    json="$json\"$tool/$prog/${filter:-all}\": \"skipped (time)\","; return
  fi
  [ "$t" -gt "$left" ] && t=$left
  [ "$tool" = memcheck ] && extra="--leak-check full"
  log=$(mktemp)
  (cd "$BUILD/tests" && LATTE_TEST_FILTER="$filter" timeout "$t" "$SAN" --tool "$tool" $extra --print-limit 20 \
     "./$prog" > "$log" 2>&1); local rc=$?
  local errs; errs=$(grep -oE "ERROR SUMMARY: [0-9]+" "$log" | tail -1 | grep -oE "[0-9]+$")
  [ "$tool" = racecheck ] && errs=$(grep -oE "RACECHECK SUMMARY: [0-9]+ hazard" "$log" | tail -1 | grep -oE "[0-9]+" | head -1)
  local closing; closing=$(grep -E "passed, [0-9]+ failed" "$log" | tail -1)
  printf '%-10s %-16s %-28s rc=%-3s errors=%-4s %s\n' "$tool" "$prog" "${filter:-all}" "$rc" "${errs:-?}" "$closing" \
    | tee -a "$OUT/sanitizer.log"
  grep -E "^=========  *(Invalid|Race|Uninitialized|Barrier|Leaked|Program hit)" "$log" | head -5 >> "$OUT/sanitizer.log"
  if [ "$rc" != 0 ] || [ "${errs:-x}" != 0 ]; then bad=1; fi
  json="$json\"$tool/$prog/${filter:-all}\": {\"rc\": $rc, \"errors\": \"${errs:-?}\"},"
  rm -f "$log"
}
: > "$OUT/sanitizer.log"
for p in gpu_qknorm gpu_reliability gpu_mla; do run memcheck $p "" 240; done
for p in gpu_qknorm gpu_reliability gpu_mla; do run synccheck $p "" 180; done
run racecheck gpu_qknorm "fused qkv" 120
run racecheck gpu_mla "h16 b8 maxlen 4000 split" 240   # attention (split + combine), GEMMs, small kernels
run racecheck gpu_mla "h64 b256 bad lengths unsplit" 240  # attention writing o_lat directly
run initcheck gpu_qknorm "fused qkv" 120
run initcheck gpu_mla "h16 b8 maxlen 4000 split" 240
echo "${json%,}}" > "$OUT/sanitizer.json"
[ $bad = 0 ] && echo "gpu_sanitize: no findings" || echo "gpu_sanitize: FINDINGS or failed runs (see above)"
exit $bad
