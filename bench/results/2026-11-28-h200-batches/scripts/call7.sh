#!/usr/bin/env bash
# Call 7 (H200): the combine v2 under compute-sanitizer: memcheck and initcheck over gpu_attention's split cases
# (LATTE_TEST_FILTER=split: batch 1 at 3000 and 8191 tokens, batch 2, 16 and 24 split, many sequences split in two)
# and gpu_mla's small-batch split case (quick mode).
set -u
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target gpu_attention gpu_mla >> $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
cd build-gpu/tests
for tool in memcheck initcheck; do
  LATTE_TEST_FILTER=split timeout 100 $SAN --tool $tool --error-exitcode 3 ./gpu_attention > $OUT/san_attn_$tool.log 2>&1
  echo "gpu_attention [split] $tool rc $?: $(grep -E 'ERROR SUMMARY' $OUT/san_attn_$tool.log) $(tail -1 $OUT/san_attn_$tool.log)"
done
LATTE_TEST_QUICK=1 LATTE_TEST_FILTER=split timeout 100 $SAN --tool memcheck --error-exitcode 3 ./gpu_mla > $OUT/san_mla_memcheck.log 2>&1
echo "gpu_mla [split] memcheck rc $?: $(grep -E 'ERROR SUMMARY' $OUT/san_mla_memcheck.log) $(tail -1 $OUT/san_mla_memcheck.log)"
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
