// Skinny bf16 GEMM for the MLA projections (weight streaming), internal to the CUDA backend.
//
//   C[z][M, N] = A[z][M, K] · B[z][N, K]ᵀ     bf16 in, fp32 accumulation
//
// A (activations, M = batch rows) and B (weights, N rows) are both K-contiguous with arbitrary row strides
// (multiples of 8 elements, 16-byte aligned rows). N and K must be multiples of 64; M is anything >= 1.
// z runs over `batch` independent problems (the per-head absorptions) with element batch strides.
//
// Output: either bf16 C directly (split == 1, partial == nullptr), or fp32 partial sums
// partial[s][z][M][N] (packed) for every K split s, which gemm_reduce_launch (or a caller's own
// epilogue kernel) sums in a fixed order: runs are bit-reproducible (no atomics).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

namespace latte {

struct GemmProblem {
    const __nv_bfloat16 *A;
    int64_t lda, batch_stride_a;
    const __nv_bfloat16 *B;
    int64_t ldb, batch_stride_b;
    __nv_bfloat16 *C;              // bf16 output when partial == nullptr (then split must be 1)
    int64_t ldc, batch_stride_c;
    float *partial;                // fp32 partial sums [split][batch][M][N], or nullptr
    int64_t M;                     // rows of A and C (>= 1)
    int N, K;                      // multiples of 64
    int batch;                     // z
    int split;                     // K splits (from gemm_choose_split), >= 1
    // 1: A is scratch nothing reads after this GEMM (e.g. the layer's o_lat before W_UV): the sm90 kernel drops A's
    // lines from L2 unwritten (discard.global.L2) once their wgmma are done, where each line of A is read once
    // (one n-tile, K a multiple of 64, 128-byte aligned rows); A's contents are undefined afterwards. Other
    // GEMMs ignore it (a hint: it never changes C).
    int discard_a = 0;
};

// Per-device facts the tiling decisions use (filled once at plan creation by gemm_bf16_setup).
struct GemmDeviceInfo {
    int sm_count;
    int blocks_per_sm[2];  // resident blocks of the tensor-core kernel per SM: [0] tile M 64, [1] tile M 128
};

// Sets the dynamic shared-memory attributes of the kernels and measures occupancy. Call once per plan.
cudaError_t gemm_bf16_setup(GemmDeviceInfo *info);

// K splits for a problem so the grid fills the GPU (at least ~2 waves where K allows); deterministic.
// simple: the fallback kernel (always 1).
int gemm_choose_split(const GemmDeviceInfo &info, int64_t M, int N, int K, int batch, bool simple);

// Bytes of fp32 partials a problem with `split` splits writes.
size_t gemm_partial_bytes(int64_t M, int N, int batch, int split);

// Enqueue the GEMM. simple: the one-thread-per-output fp32 fallback (LATTE_MLA_SIMPLE_GEMM=1).
void gemm_bf16_launch(const GemmProblem &p, bool simple, cudaStream_t stream);

// C[z][m][n] = bf16(sum_s partial[s][z][m][n]) for a problem written with partials.
void gemm_reduce_launch(const float *partial, int split, int batch, int64_t M, int N, __nv_bfloat16 *C, int64_t ldc,
                        int64_t batch_stride_c, cudaStream_t stream);

}  // namespace latte
