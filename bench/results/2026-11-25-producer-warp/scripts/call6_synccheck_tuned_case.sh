#!/usr/bin/env bash
# Where gpu_mla's time goes under synccheck with blocking launches: its first tuned case at batch 256 alone
# (LATTE_TEST_FILTER), with the tuned engines (a) and with cuBLASLt's GEMMs only (b), side by side
set -u
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target gpu_mla >> $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
f="h64 b256 c0.1 tuned"
( s=$(date +%s); LATTE_TEST_QUICK=1 LATTE_TEST_FILTER="$f" timeout 400 compute-sanitizer --tool synccheck --force-blocking-launches \
    build-gpu/tests/gpu_mla > $OUT/a_default.log 2>&1; echo "a default rc $? $(( $(date +%s) - s )) s" ) &
( s=$(date +%s); LATTE_MLA_GEMM=cublaslt LATTE_TEST_QUICK=1 LATTE_TEST_FILTER="$f" timeout 400 compute-sanitizer --tool synccheck \
    --force-blocking-launches build-gpu/tests/gpu_mla > $OUT/b_cublaslt.log 2>&1; echo "b cublaslt rc $? $(( $(date +%s) - s )) s" ) &
wait
( s=$(date +%s); LATTE_TEST_QUICK=1 LATTE_TEST_FILTER="$f" build-gpu/tests/gpu_mla > $OUT/c_native.log 2>&1; echo "c native rc $? $(( $(date +%s) - s )) s" )
for x in a_default b_cublaslt c_native; do echo "== $x"; grep -v "^ *$" $OUT/$x.log | tail -12 | cut -c1-200; done
