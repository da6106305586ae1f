#!/usr/bin/env bash
# Call 2 (H200): can the new gpu_attention check fail? The new test over the old writer (the tree with .carry/base's
# mla_attention_schedule.cuh: 20b12a2's estimate) on the batch 67 case, expected to fail; and the new writer's
# equal-length pieces under compute-sanitizer racecheck (its scratch kk now holds a 7th row of candidates).
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"
mkdir -p /tmp/oldw && tar cf - --exclude='./build*' . | tar xf - -C /tmp/oldw &&
  cp .carry/base/src/cuda/mla_attention_schedule.cuh /tmp/oldw/src/cuda/mla_attention_schedule.cuh || exit 1
build $PWD/build-new . "gpu_attention" & p1=$!
build /tmp/oldw/build-oldw /tmp/oldw "gpu_attention" & p2=$!
for p in $p1 $p2; do wait $p || { tail -20 $OUT/build_*.log; exit 1; }; done
echo "built $(( $(date +%s) - t0 )) s"
( cd /tmp/oldw/build-oldw/tests && LATTE_TEST_FILTER="never worse" timeout 60 ./gpu_attention > $OUT/gpu_attention_old_writer.log 2>&1; echo "old writer, new check: rc $? $(tail -1 $OUT/gpu_attention_old_writer.log)"; grep -E "FAIL|busiest" $OUT/gpu_attention_old_writer.log | cut -c1-250 | head -5 )
( cd build-new/tests && LATTE_TEST_FILTER="never worse" timeout 60 ./gpu_attention > $OUT/gpu_attention_new_writer.log 2>&1; echo "new writer, new check: rc $? $(tail -1 $OUT/gpu_attention_new_writer.log)" )
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
( cd build-new/tests && LATTE_TEST_FILTER="equal lengths: run-time pieces" timeout 200 $SAN --tool racecheck --racecheck-report hazard ./gpu_attention > $OUT/racecheck_attention.log 2>&1; echo "racecheck rc $?: $(grep -E 'RACECHECK SUMMARY|checks' $OUT/racecheck_attention.log | tr '\n' ' ')" )
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
