#!/usr/bin/env bash
# gpu_iter.sh OUTDIR: one device call for kernel iteration (a subset of gpu_check.sh, quicker): build for sm_90a, the
# Hopper GEMM's unit test and then its timing table alone on the GPU, gpu_mla, latte-bench --only mla (tuned layer,
# phases). Each step has a timeout, logs go under OUTDIR, a short summary is printed last.
# ITER_STEPS (default "build,gemm,mla,bench") picks steps; ITER_BENCH_ARGS adds latte-bench arguments. Attention steps:
#   attn    gpu_attention (the attention alone against a float64 reference) and its timing table
#   ncu     Nsight Compute on one attention launch at each length of ITER_NCU_LENS (default 6144): per-SASS-line
#           warp stall samples (ncu_LEN.csv) and the details page (ncu_LEN.txt)
#   exp     a build with -DLATTE_DEV_EXPERIMENTS and the attention timing table under each LATTE_MLA_WGMMA_EXPERIMENT
#           of ITER_EXPS (default "1 2 3 4": stages left out, wrong results; 8 and up are checked too), then the
#           timelines of ITER_TRACES (experiments with bit 8) at length ITER_TRACE_LEN (default 6144)
#   ctas    the same dev build: gpu_attention's checks with the seesaw kernel's CTAs capped at each of ITER_CTAS_CHECK
#           (default "1 7": every CTA takes many items), then its timing table under each cap of ITER_CTAS_TIME
#           (default "0 100000": the persistent grid, then one CTA per item as before it was persistent), and under
#           each of those caps the item timeline (experiment 8) at each length of ITER_CTAS_TRACE (default "512")
#   ab      the same dev build (gpu_attention, latte-bench): gpu_attention's checks under each experiment of ITER_AB_EXPS
#           (default 128), then ITER_AB_ROUNDS (3) interleaved rounds of its timing table under 0 and each (the order
#           reversed every other round), the timelines of ITER_TRACES, and ITER_AB_ROUNDS rounds of the layer (latte-bench
#           --only mla --quick, graph replay) under 0 and each of ITER_AB_LAYER_EXPS (default: ITER_AB_EXPS). One line a
#           run, "exp X rN attention: LEN=us ..." or "exp X rN layer: CASE=us(attention phase) ...", in ab.log
#           (bench/results/2026-11-25-producer-warp/scripts/summary.py reads that format)
#   base    A/B against another version of some files: ITER_BASE names a folder (e.g. under .carry, in the run's carry)
#           whose files, at their paths relative to it, replace the tree's in a copy; its gpu_attention timing table
set -u
out=$(mkdir -p "${1:?usage: gpu_iter.sh OUTDIR}" && cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2
steps=${ITER_STEPS:-build,gemm,mla,bench}
want() { case ",$steps," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
summary=""
note() { summary="$summary$1"$'\n'; echo "[gpu_iter] $1"; }
nvidia-smi -L | tee "$out/info.log"
if want build; then
  t0=$(date +%s)
  if cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a >"$out/build.log" 2>&1 &&
     cmake --build build-gpu -j"$(nproc)" >>"$out/build.log" 2>&1; then
    note "build pass $(( $(date +%s) - t0 ))s"
  else
    tail -30 "$out/build.log"; note "build FAIL"; echo "$summary"; exit 1
  fi
fi
mkdir -p build-gpu && cd build-gpu || exit 1
if want gemm; then
  LATTE_REQUIRE_GPU=1 timeout 180 tests/gpu_gemm_sm90 >"$out/gemm.log" 2>&1; rc=$?
  note "gpu_gemm_sm90 rc=$rc: $(tail -1 "$out/gemm.log")"
  grep FAIL "$out/gemm.log" | head -8
  LATTE_GEMM_TIMING=1 LATTE_REQUIRE_GPU=1 timeout 120 tests/gpu_gemm_sm90 >"$out/gemm_timing.log" 2>&1
  grep -E "^  time" "$out/gemm_timing.log"
fi
if want mla; then
  LATTE_REQUIRE_GPU=1 timeout 300 tests/gpu_mla >"$out/mla.log" 2>&1; rc=$?
  note "gpu_mla rc=$rc: $(tail -1 "$out/mla.log")"
  grep -E "FAIL" "$out/mla.log" | head -8
fi
if want attn; then
  LATTE_MLA_ATTENTION=${ITER_ATTN_KERNEL:-wgmma3} LATTE_ATTN_TIMING=1 timeout 240 tests/gpu_attention >"$out/attn.log" 2>&1; rc=$?
  note "gpu_attention rc=$rc: $(tail -1 "$out/attn.log")"
  grep -E "FAIL|time attention" "$out/attn.log" | head -20
fi
if want ncu; then
  for len in ${ITER_NCU_LENS:-6144}; do
    LATTE_ATTN_PROFILE=$len timeout 300 ncu --clock-control none -k regex:seesaw -s 1 -c 1 --set full \
      --import-source yes -f -o "$out/ncu_$len" tests/gpu_attention >"$out/ncu_run_$len.log" 2>&1
    note "ncu $len rc=$?"
    ncu -i "$out/ncu_$len.ncu-rep" --page source --csv --print-source sass >"$out/ncu_$len.csv" 2>&1
    ncu -i "$out/ncu_$len.ncu-rep" --page details >"$out/ncu_$len.txt" 2>&1
    rm -f "$out/ncu_$len.ncu-rep"
  done
fi
if want exp; then
  (cd .. && cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
     -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS >"$out/exp_build.log" 2>&1 &&
   cmake --build build-exp -j"$(nproc)" --target gpu_attention >>"$out/exp_build.log" 2>&1)
  note "exp build rc=$?"
  for x in ${ITER_EXPS:-1 2 3 4}; do
    echo "== experiment $x" >>"$out/exp.log"
    mode=2; [ "$x" -ge 8 ] && mode=1  # experiments 8 and up keep the results: checked too
    LATTE_MLA_WGMMA_EXPERIMENT=$x LATTE_ATTN_TIMING=$mode timeout 120 ../build-exp/tests/gpu_attention >>"$out/exp.log" 2>&1
  done
  grep -E "^==|time attention|FAIL|checks" "$out/exp.log"
  for x in ${ITER_TRACES:-}; do  # timelines (experiment bit 8) at length 6144
    echo "== trace $x" >>"$out/trace.log"
    LATTE_MLA_WGMMA_EXPERIMENT=$x LATTE_ATTN_TRACE=${ITER_TRACE_LEN:-6144} timeout 60 ../build-exp/tests/gpu_attention \
      >>"$out/trace.log" 2>&1
  done
fi
if want ab; then
  (cd .. && cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
     -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS >>"$out/exp_build.log" 2>&1 &&
   cmake --build build-exp -j"$(nproc)" --target gpu_attention latte-bench >>"$out/exp_build.log" 2>&1)
  note "ab build rc=$?"
  ab_exps=${ITER_AB_EXPS:-128}
  for x in $ab_exps; do
    LATTE_MLA_WGMMA_EXPERIMENT=$x timeout 150 ../build-exp/tests/gpu_attention >"$out/ab_check_$x.log" 2>&1
    note "ab exp $x checks rc=$?: $(tail -1 "$out/ab_check_$x.log")"
  done
  # one run's line: the attention table's lengths (LATTE_ATTN_TIMING=2) or the layer's cases with their graph attention phase
  ab_line() {  # KIND EXP ROUND LOG
    local vals
    if [ "$1" = attention ]; then
      vals=$(grep -E "time attention len" "$4" | grep -v 'index order' | sed -E 's/.*len +([0-9]+( stored)?):? +([0-9.]+) us.*/\1=\3/')
    else
      vals=$(grep -E '^mla (len|lens)' "$4" | grep -v untuned |
        sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append [0-9.]+, up_absorb [0-9.]+, attention ([0-9.]+).*/\2=\3(\4)/')
    fi
    echo "exp $2 r$3 $1: $(echo "$vals" | tr '\n' ' ')" | tee -a "$out/ab.log"
  }
  ab_order() {  # ROUND EXPS: "0 EXPS", reversed in even rounds
    local list="0 $2"
    [ $(($1 % 2)) = 0 ] && list=$(echo "$list" | tr ' ' '\n' | tac | tr '\n' ' ')
    echo "$list"
  }
  for r in $(seq 1 "${ITER_AB_ROUNDS:-3}"); do
    for x in $(ab_order "$r" "$ab_exps"); do
      LATTE_MLA_WGMMA_EXPERIMENT=$x LATTE_ATTN_TIMING=2 timeout 120 ../build-exp/tests/gpu_attention >"$out/ab_att_${x}_$r.log" 2>&1
      ab_line attention "$x" "$r" "$out/ab_att_${x}_$r.log"
    done
  done
  for x in ${ITER_TRACES:-}; do
    LATTE_MLA_WGMMA_EXPERIMENT=$x LATTE_ATTN_TRACE=${ITER_TRACE_LEN:-6144} timeout 60 ../build-exp/tests/gpu_attention \
      >"$out/ab_trace_$x.log" 2>&1
    note "ab trace $x rc=$?"
  done
  for r in $(seq 1 "${ITER_AB_ROUNDS:-3}"); do
    for x in $(ab_order "$r" "${ITER_AB_LAYER_EXPS:-$ab_exps}"); do
      LATTE_MLA_WGMMA_EXPERIMENT=$x timeout 100 ../build-exp/bench/latte-bench --only mla --quick >"$out/ab_layer_${x}_$r.log" 2>&1
      ab_line layer "$x" "$r" "$out/ab_layer_${x}_$r.log"
    done
  done
fi
if want ctas; then
  (cd .. && cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
     -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS >>"$out/exp_build.log" 2>&1 &&
   cmake --build build-exp -j"$(nproc)" --target gpu_attention >>"$out/exp_build.log" 2>&1)
  note "exp build rc=$?"
  for n in ${ITER_CTAS_CHECK:-1 7}; do
    echo "== checks, CTAs capped at $n" >>"$out/ctas.log"
    LATTE_MLA_ATTENTION=wgmma3 LATTE_MLA_SEESAW_CTAS=$n timeout 240 ../build-exp/tests/gpu_attention >>"$out/ctas.log" 2>&1
    note "ctas $n checks rc=$?: $(tail -1 "$out/ctas.log")"
  done
  for n in ${ITER_CTAS_TIME:-0 100000}; do
    echo "== timing, CTAs capped at $n" >>"$out/ctas.log"
    LATTE_MLA_ATTENTION=wgmma3 LATTE_MLA_SEESAW_CTAS=$n LATTE_ATTN_TIMING=2 timeout 120 ../build-exp/tests/gpu_attention \
      >>"$out/ctas.log" 2>&1
  done
  for n in ${ITER_CTAS_TIME:-0 100000}; do
    for len in ${ITER_CTAS_TRACE:-512}; do
      echo "== item timeline, CTAs capped at $n, length $len" >>"$out/ctas.log"
      LATTE_MLA_ATTENTION=wgmma3 LATTE_MLA_SEESAW_CTAS=$n LATTE_MLA_WGMMA_EXPERIMENT=8 LATTE_ATTN_TRACE=$len timeout 60 \
        ../build-exp/tests/gpu_attention 2>&1 | sed -n '/^item timeline/,/exit (from/p' >>"$out/ctas.log"
    done
  done
  grep -vE "^ok  " "$out/ctas.log"
fi
if want base; then
  rm -rf /tmp/latte-base && mkdir -p /tmp/latte-base &&
    (cd .. && tar cf - --exclude='./build*' --exclude=./.git --exclude=./.carry . | tar xf - -C /tmp/latte-base) &&
    cp -r "../${ITER_BASE:?base: ITER_BASE names the folder of replacement files}/." /tmp/latte-base/ &&
    cmake -S /tmp/latte-base -B /tmp/latte-base/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
      >"$out/base_build.log" 2>&1 && cmake --build /tmp/latte-base/b -j"$(nproc)" --target gpu_attention >>"$out/base_build.log" 2>&1
  note "base build rc=$?"
  LATTE_MLA_ATTENTION=wgmma3 LATTE_ATTN_TIMING=2 timeout 120 /tmp/latte-base/b/tests/gpu_attention >"$out/base.log" 2>&1
  grep -E "time attention" "$out/base.log"
fi
if want bench; then
  timeout 240 bench/latte-bench --only mla --json "$out/bench.json" ${ITER_BENCH_ARGS:-} >"$out/bench.log" 2>&1
  note "latte-bench rc=$?"
  sed -n '/^MLA decode layer/,$p' "$out/bench.log" | head -40
fi
echo "==== gpu_iter summary"; printf '%s' "$summary"
