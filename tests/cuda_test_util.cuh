// Helpers shared by the CUDA unit tests (gpu_*.cu): a CUDA-call check that exits on failure, the CHECK counters, a
// parallel for over host threads (for float64 references), an L2 flush that reads (a memset flush leaves dirty lines
// that the timed kernel would have to write back: NOTES.md), and kernels that fill bf16 buffers with hashed values or
// poison them with NaN. The host's bf16 conversions are the library's own (src/internal.h: latte_bf16_to_f32,
// latte_f32_to_bf16, round to nearest even).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#define CK(call)                                                                                          \
    do {                                                                                                  \
        cudaError_t e_ = (call);                                                                          \
        if (e_ != cudaSuccess) {                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_)); \
            exit(1);                                                                                      \
        }                                                                                                 \
    } while (0)

// Check counters and CHECK(cond, printf-args...): counts the check, and on failure counts it and prints "FAIL: ...".
static int g_fail __attribute__((unused)) = 0, g_checks __attribute__((unused)) = 0;
#define CHECK(cond, ...)                  \
    do {                                  \
        g_checks++;                       \
        if (!(cond)) {                    \
            g_fail++;                     \
            printf("FAIL: " __VA_ARGS__); \
            printf("\n");                 \
        }                                 \
    } while (0)

// Runs fn(i) for i in [0, n) on every host thread (hardware_concurrency, at most 64): for the float64 references,
// whose single-thread time would otherwise be the test's. fn must write only what belongs to its i.
template <class Fn>
static void for_each_host_thread(int n, const Fn &fn) {
    const int n_threads = (int)std::min(64u, std::max(1u, std::thread::hardware_concurrency()));
    std::atomic<int> next(0);
    const auto work = [&]() {
        for (int i; (i = next.fetch_add(1)) < n;) fn(i);
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < n_threads && t < n; t++) pool.emplace_back(work);
    work();
    for (std::thread &t : pool) t.join();
}

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

__global__ void copy_u16_kernel(uint16_t *dst, const uint16_t *src, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}
// n 16-bit values at dst the way a producer kernel leaves its output for the next kernel: `stale` in DRAM (written,
// then pushed out of L2 by a read-only flush of 3× L2), `fresh` over it as dirty lines in L2 (a kernel's stores).
// A line a later kernel drops from L2 unwritten (discard.global.L2) then reads back stale.
static inline void write_dirty_over_stale(void *dst, const uint16_t *fresh, const uint16_t *stale, size_t n) {
    uint16_t *d_fresh = nullptr;
    void *flush = nullptr;
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    CK(cudaMalloc(&d_fresh, n * 2));
    CK(cudaMalloc(&flush, (size_t)l2 * 3));
    CK(cudaMemset(flush, 0, (size_t)l2 * 3));
    CK(cudaMemcpy(d_fresh, fresh, n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dst, stale, n * 2, cudaMemcpyHostToDevice));
    l2_flush(flush, (size_t)l2 * 3);
    copy_u16_kernel<<<256, 256>>>((uint16_t *)dst, d_fresh, n);
    CK(cudaDeviceSynchronize());
    cudaFree(d_fresh), cudaFree(flush);
}

// The value of element i under (seed, int_range, scale): integers in [-int_range, int_range] (exact in any sum below
// 2^24), or with int_range 0 a sum of four uniforms, ~normal with standard deviation `scale`.
__device__ __forceinline__ float hashed_value(size_t i, uint64_t seed, int int_range, float scale) {
    uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    if (int_range > 0) return (float)((int)(h % (uint64_t)(2 * int_range + 1)) - int_range);
    const float s = (float)(h & 0xffff) + (float)((h >> 16) & 0xffff) + (float)((h >> 32) & 0xffff) + (float)(h >> 48);
    return (s * (1.0f / 65536.0f) - 2.0f) * 1.7320508f * scale;
}
// n bf16 values at p, element i hashed_value(i, ...)
__global__ void fill_bf16_kernel(__nv_bfloat16 *p, size_t n, uint64_t seed, int int_range, float scale) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16(hashed_value(i, seed, int_range, scale));
}

// n bf16 NaNs of one payload (0x7fc1), to tell "never written" from a computed NaN
__global__ void poison_bf16_kernel(__nv_bfloat16 *p, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __ushort_as_bfloat16((unsigned short)0x7fc1);
}
