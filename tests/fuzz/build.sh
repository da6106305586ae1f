#!/usr/bin/env bash
# Builds the API fuzzer into OUTDIR (default build-fuzz/):
#   OUTDIR/fuzz_api             libFuzzer + ASan + UBSan (Debian clang; needs libclang-rt-NN-dev), CPU backend
#   OUTDIR/fuzz_api_standalone  the same generator, seeded-random driver, gcc + ASan + UBSan (no libFuzzer needed)
#   OUTDIR/fuzz_api_cuda        with FUZZ=cuda: the generator on the CUDA backend over cudaMalloc'd buffers,
#                               linked against BUILD/liblatte.a (BUILD defaults to build/); run it on a GPU
#                               machine under `compute-sanitizer --tool memcheck`.
# The host builds compile the library's C sources directly (src/api, src/cpu) with tests/fuzz/cuda_stub.c in
# place of the CUDA backend.
# Usage: tests/fuzz/build.sh [OUTDIR]     FUZZ=cuda BUILD=build tests/fuzz/build.sh [OUTDIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/build-fuzz}"
mkdir -p "$out"
srcs=("$root"/src/api/*.c "$root"/src/cpu/*.c "$root/tests/fuzz/cuda_stub.c" "$root/tests/fuzz/fuzz_api.c")
inc=(-I"$root/include" -I"$root/src")
# no OpenMP: one thread per execution keeps inputs reproducible and the fuzzer fast
common=(-std=gnu11 -O1 -g -fno-omit-frame-pointer -Wall -Wno-unused-parameter -Wno-unknown-pragmas "${inc[@]}")
san=(-fsanitize=address,undefined -fno-sanitize-recover=all)

if [ "${FUZZ:-host}" = cuda ]; then
  build="${BUILD:-$root/build}"
  cuda="${CUDA_HOME:-/usr/local/cuda}"
  gcc -std=gnu11 -O1 -g -Wall -DFUZZ_CUDA -DFUZZ_STANDALONE "${inc[@]}" -I"$cuda/include" \
    "$root/tests/fuzz/fuzz_api.c" -o "$out/fuzz_api_cuda" \
    "$build/liblatte.a" -L"$cuda/lib64" -lcudart_static -lstdc++ -lgomp -lpthread -ldl -lrt -lm
  echo "built $out/fuzz_api_cuda"
  exit 0
fi

${CC_FUZZ:-clang} "${common[@]}" "${san[@]}" -fsanitize=fuzzer "${srcs[@]}" -lm -o "$out/fuzz_api"
echo "built $out/fuzz_api"
gcc "${common[@]}" "${san[@]}" -DFUZZ_STANDALONE "${srcs[@]}" -lm -o "$out/fuzz_api_standalone"
echo "built $out/fuzz_api_standalone"
