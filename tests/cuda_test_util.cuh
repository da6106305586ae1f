// Helpers shared by the CUDA unit tests (gpu_*.cu): a CUDA-call check that exits on failure, and an L2 flush that
// reads (a memset flush leaves dirty lines that the timed kernel would have to write back: NOTES.md).
#pragma once

#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>

#define CK(call)                                                                                          \
    do {                                                                                                  \
        cudaError_t e_ = (call);                                                                          \
        if (e_ != cudaSuccess) {                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_)); \
            exit(1);                                                                                      \
        }                                                                                                 \
    } while (0)

// Reads `bytes` (a multiple of 16; at least 3× the L2) at `buf` on the legacy stream; its last 4 bytes of the first
// half receive a value only if the XOR of everything read hits a constant (so the reads cannot be optimized away).
__global__ void l2_flush_kernel(const uint4 *__restrict__ p, size_t n16, unsigned *sink) {
    unsigned x = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = __ldcg(p + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9E3779B9u) *sink = x;
}
static inline void l2_flush(void *buf, size_t bytes) {
    l2_flush_kernel<<<1024, 512>>>((const uint4 *)buf, bytes / 16, (unsigned *)((char *)buf + bytes / 2));
}
