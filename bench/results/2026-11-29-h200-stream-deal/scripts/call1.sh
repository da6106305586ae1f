#!/usr/bin/env bash
# Call 1 (H200): HEAD 1a3997a (last session's host-only refactor of the run-time split, not yet run on a GPU):
# gpu_attention, gpu_mla quick and its tuned cases; then the baseline of this session's lead: latte-bench --quick at
# batches 40, 48, 64, 96, 100 (equal lengths leave SMs idle between one and two rounds of whole items) and 128.
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
. "$(dirname "$0")/lib.sh"  # build
build $PWD/build-gpu . "latte latte-bench gpu_mla gpu_attention" || { tail -20 $OUT/build_*.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
( cd build-gpu/tests && timeout 200 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)"; grep FAIL $OUT/gpu_attention.log | cut -c1-230 | head )
( cd build-gpu/tests && LATTE_TEST_QUICK=1 LATTE_TEST_NO_TUNE=1 timeout 150 ./gpu_mla > $OUT/gpu_mla_quick.log 2>&1; echo "gpu_mla quick rc $?: $(tail -1 $OUT/gpu_mla_quick.log)"; grep FAIL $OUT/gpu_mla_quick.log | head -5 )
( cd build-gpu/tests && LATTE_TEST_FILTER=tuned timeout 200 ./gpu_mla > $OUT/gpu_mla_tuned.log 2>&1; echo "gpu_mla tuned rc $?: $(tail -1 $OUT/gpu_mla_tuned.log)"; grep FAIL $OUT/gpu_mla_tuned.log | head -5 )
echo "at $(( $(date +%s) - t0 )) s"
for b in 40,48,64 96,100 128; do
  [ $(( $(date +%s) - t0 )) -gt 520 ] && break
  timeout 120 build-gpu/bench/latte-bench --only mla --quick --batch $b --json $OUT/bench_b$b.json > $OUT/bench_b$b.log 2>&1
  echo "b$b: $(grep -E '^mla (b|len|lens)' $OUT/bench_b$b.log | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+).*/\1=\2 [\3] (\4|\5)/' | tr '\n' ' ')"
done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log bench_*.json && rm -f *.log bench_*.json
