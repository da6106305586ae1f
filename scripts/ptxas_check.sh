#!/usr/bin/env bash
# ptxas_check.sh: fails if ptxas serializes the wgmma of any Hopper kernel. ptxas reports that only as an info line
# (C7514 / C7515 / C7520 "wgmma.mma_async instructions are serialized ...", printed with -Xptxas -v; C7520: "due to
# program dependence on compiler-inserted WG.AR in divergent path", met in bench/probes/pair_order.cu), which neither
# -Werror=all-warnings nor -warn-spills catches, and it cost +29% once (docs/NOTES.md, "FlashMLA's whole pair
# order, built"). Compiles every src/cuda/*.cu that issues wgmma for sm_90a, the release flags plus -v and
# -DLATTE_DEV_EXPERIMENTS (the dev variants too). Needs nvcc only (no GPU). Usage: scripts/ptxas_check.sh
set -u
cd "$(dirname "$0")/.."
nvcc=${NVCC:-nvcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for f in $(grep -l "ptx::wgmma_m" src/cuda/*.cu bench/probes/*.cu); do  # the files that issue wgmma (not those naming them)
  log="$tmp/$(basename "$f").log"
  if ! "$nvcc" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude --expt-relaxed-constexpr \
       -Xptxas -v -DLATTE_HAVE_SM90A=1 -DLATTE_DEV_EXPERIMENTS -c "$f" -o "$tmp/x.o" >"$log" 2>&1; then
    echo "ptxas_check: $f does not compile:"; tail -20 "$log"; fail=1; continue
  fi
  if grep -qE "C751[45]\)|C7520\)" "$log"; then
    echo "ptxas_check: $f: wgmma serialized:"; grep -E "C751[45]\)|C7520\)" "$log" | cut -c1-200; fail=1
  else
    echo "ptxas_check: $f: ok"
  fi
  # the seesaw kernel's dev variants (informational): one that spills more than the release budget times something
  # else than the change it carries (a __nanosleep variant spilled 152 bytes and ran +30 µs: NOTES, "The attention's
  # start without dependent loads")
  grep -A1 "Function properties for .*mla_attention_seesaw_kernelILi" "$log" |
    sed -n 's/.*seesaw_kernelILi\([0-9]*\)E.*/\1/p; s/^ *\([0-9]*\) bytes stack frame, \([0-9]*\) bytes spill stores.*/\1 \2/p' |
    paste - - | while read -r exp stack stores; do
      note=""; [ "$stack" -gt 8 ] || [ "$stores" -gt 8 ] && note="  <- spills past 8 bytes: its timings are not comparable"
      echo "ptxas_check:   seesaw experiment $exp: stack $stack, spill stores $stores$note"
    done
done
# The seesaw attention kernel is built without the spill warnings (CMakeLists.txt): its release instantiation may spill
# one register (8 bytes of stack: a row index, stored once per item; none since e318300), no more (NOTES, "The ranking
# out of line")
f=src/cuda/mla_attention_sm90_seesaw.cu
if "$nvcc" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude --expt-relaxed-constexpr -Xptxas -v \
     -DLATTE_HAVE_SM90A=1 -c "$f" -o "$tmp/x.o" >"$tmp/seesaw.log" 2>&1; then
  line=$(grep -A1 "Function properties for .*mla_attention_seesaw_kernelILi0E" "$tmp/seesaw.log" | tail -1)
  stack=$(echo "$line" | sed -n 's/^ *\([0-9]*\) bytes stack frame.*/\1/p')
  stores=$(echo "$line" | sed -n 's/.*, \([0-9]*\) bytes spill stores.*/\1/p')
  if [ -z "$stack" ] || [ -z "$stores" ] || [ "$stack" -gt 8 ] || [ "$stores" -gt 8 ]; then
    echo "ptxas_check: $f: the seesaw kernel spills past its budget of 8 bytes: ${line:-no ptxas line}"; fail=1
  else
    echo "ptxas_check: $f: seesaw kernel within its spill budget ($line)"
  fi
else
  echo "ptxas_check: $f does not compile:"; tail -20 "$tmp/seesaw.log"; fail=1
fi
exit $fail
