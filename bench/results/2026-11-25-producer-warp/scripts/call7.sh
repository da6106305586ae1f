#!/usr/bin/env bash
# dev build: seesaw experiment 128 (WG1 rotates and multiplies its k_pe chunk first in its S, buffer 1's chunk 8 copied
# first of its group; WG0 keeps it last): check, the attention alone (three interleaved rounds), pair timelines at 6144, layer rounds
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 &&
  cmake --build build-exp -j16 --target gpu_attention latte-bench >> $OUT/build_exp.log 2>&1 || { tail -30 $OUT/build_exp.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
chk() { LATTE_MLA_WGMMA_EXPERIMENT=$1 timeout 150 build-exp/tests/gpu_attention > $OUT/chk_$1.log 2>&1; echo "check exp $1 rc $?: $(tail -1 $OUT/chk_$1.log)"; }
chk 128
att() {  # att EXP
  ( LATTE_MLA_WGMMA_EXPERIMENT=$1 LATTE_ATTN_TIMING=2 timeout 120 build-exp/tests/gpu_attention > $OUT/att_$1_$r.log 2>&1 )
  echo -n "exp $1 r$r attention: "; grep -E "time attention len" $OUT/att_$1_$r.log | grep -v 'index order' | sed -E 's/.*len +([0-9]+( stored)?):? +([0-9.]+) us.*/\1=\3/' | tr '\n' ' '; echo
}
for r in 1 2 3; do
  case $r in 1) order="0 128";; 2) order="128 0";; 3) order="0 128";; esac
  for x in $order; do att $x; done
done
echo "timed $(( $(date +%s) - t0 )) s"
for x in 8 136; do
  LATTE_MLA_WGMMA_EXPERIMENT=$x LATTE_ATTN_TRACE=6144 timeout 60 build-exp/tests/gpu_attention > $OUT/trace_$x.log 2>&1
  echo "trace $x rc $?"
done
run() {  # run EXP
  LATTE_MLA_WGMMA_EXPERIMENT=$1 timeout 100 build-exp/bench/latte-bench --only mla --quick > $OUT/ab_$1_$r.log 2>&1
  echo -n "exp $1 r$r layer: "; grep -E '^mla (len|lens)' $OUT/ab_$1_$r.log | grep -v untuned | sed -E 's/^mla (len|lens) ([^:]*): ([0-9.]+) us.*graph: down_append [0-9.]+, up_absorb ([0-9.]+), attention ([0-9.]+).*/\2=\3(\5)/' | tr '\n' ' ' | cut -c1-300; echo
}
for r in 4 5 6; do
  [ $(( $(date +%s) - t0 )) -gt 470 ] && break
  if [ $r != 5 ]; then run 0; run 128; else run 128; run 0; fi
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
