#!/usr/bin/env bash
# Call 0 of this folder, run from the repository root as bench/results/2026-11-29-h200-stream-deal/scripts/next_writer_exact.sh
# (a copy; its patch path now points at that folder). Its "base" is 20b12a2.
# For the next session (prepared 2026-11-29, NOT RUN: the device time was spent). Applies writer_exact.patch (equal
# lengths' cuts priced by their exact busiest CTA; the general ⌈items / CTAs⌉ × smallest bound for the others; a new
# gpu_attention check that equal lengths in pieces are never worse than whole items, and a case that fails it today)
# over a copy of the tree, builds it beside the tree as it is (the base), then: gpu_attention (all cases) and gpu_mla
# quick and tuned on the patched build; latte-bench --quick at batches 48, 72, 100 and 8, 16, 32 and 128, patched /
# base, two interleaved rounds. Model predictions (scripts/writer_model.py, quarter tiles on the busiest CTA): batch 48
# / 4096 306 -> 258 (attention ~170 -> ~143 µs), batch 100 / 4096 600 -> 510 (~326 -> ~277), batch 100 / 2048 344 ->
# 288 (~197 -> ~165), batch 72 / 4096 450 -> 400; batches 8-32 and 128 unchanged.
# Run from the repository root: bash bench/results/2026-11-29-h200-stream-deal/scripts/next_writer_exact.sh
set -u
t0=$(date +%s)
D=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p /tmp/new && tar cf - --exclude='./build*' . | tar xf - -C /tmp/new && ( cd /tmp/new && patch -p1 < $D/../../2026-11-29-h200-stream-deal/writer_exact.patch > $OUT/patch.log 2>&1 ) ||
  { echo "patch failed"; cat $OUT/patch.log; exit 1; }
bld() { cmake -S $2 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build_$(basename $1).log 2>&1 &&
        cmake --build $1 -j8 --target $3 >> $OUT/build_$(basename $1).log 2>&1; }
bld /tmp/new/build-new /tmp/new "latte latte-bench gpu_mla gpu_attention" & p1=$!
bld $PWD/build-base . "latte latte-bench gpu_attention" & p2=$!
for p in $p1 $p2; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
( cd build-base/tests && LATTE_TEST_FILTER="never worse" timeout 60 ./gpu_attention > $OUT/gpu_attention_base_case.log 2>&1; echo "base, the new case without the new check: rc $? $(tail -1 $OUT/gpu_attention_base_case.log)" )
( cd /tmp/new/build-new/tests && timeout 200 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep -E "FAIL|busiest|^  " $OUT/gpu_attention.log | cut -c1-250 | head -10 )
( cd /tmp/new/build-new/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 100 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)" )
( cd /tmp/new/build-new/tests && LATTE_TEST_FILTER=tuned timeout 100 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)" )
run() {  # run new|base ROUND BATCHES
  [ $(( $(date +%s) - t0 )) -gt 540 ] && return
  local bin=/tmp/new/build-new/bench/latte-bench; [ $1 = base ] && bin=build-base/bench/latte-bench
  timeout 100 $bin --only mla --quick --batch $3 --json $OUT/bench_$1_b$3_r$2.json > $OUT/bench_$1_b$3_r$2.log 2>&1
  echo "$1 r$2: $(grep -E '^mla (b|len|lens)' $OUT/bench_$1_b$3_r$2.log | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+).*/\1=\2 [\3] (\4|\5)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' ')"
}
for r in 1 2; do for v in new base; do run $v $r 48,72,100; run $v $r 8,16,32; done; done
run new 1 128; run base 1 128
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
