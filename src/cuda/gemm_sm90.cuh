// The Hopper (sm_90a) projection GEMM: weight streaming through TMA and wgmma (gemm_sm90.cu).
//
//   C[z][M, N] = A[z][M, K] · B[z][N, K]ᵀ     bf16 in, fp32 accumulation, one rounding to bf16 at the store
//
// Same GemmProblem as gemm_bf16 (A = activations, B = weights, both K-contiguous), so the MLA run can hand any
// projection to either; the fields `partial` and `split` are not used here.
#pragma once

#include "cuda/gemm_bf16.cuh"

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

namespace latte {

// How a problem is cut. bn: weight rows per tile (64, 128, 192 or 256; a tile is always 128 rows of A).
// stream_k: the k-iterations of all tiles are dealt to the CTAs in equal contiguous ranges, so a tile may be shared by
// several CTAs (fp32 partials in the workspace, summed by the tile's owner); otherwise every tile runs whole in one
// CTA (whole tiles dealt in equal contiguous ranges).
struct GemmSm90Config {
    int bn;
    bool stream_k;
    int dev_flags;  // timing experiments only (tests/gpu_gemm_sm90.cu), 0 everywhere else: 1 no L2 eviction hints,
                    // 4 no stores, 32 no loads of A, 128 no stream-K fixup (these three: wrong results), 256 a shared
                    // tile's owner does not wait: every contributor writes its slot, the last to count sums
};

// This build has the sm_90a kernel, `device` is compute capability 9.0 with the shared memory it needs, and the driver
// can encode tensor maps.
bool gemm_sm90_available(int device);

// Whether the problem meets the kernel's layout rules: A and B 16-byte aligned with row and batch strides of multiples
// of 8 elements (TMA), K a multiple of 8, N even, C 4-byte aligned with even strides, 1 <= M, batch, strides < 2^38
// elements. check_pointers false: the geometry only (the pointers may be null).
bool gemm_sm90_supports(const GemmProblem &p, bool check_pointers);

// The configuration a cost model picks for a problem on `sm_count` SMs (deterministic).
GemmSm90Config gemm_sm90_choose(int64_t M, int N, int K, int batch, int sm_count);

// The configurations latte_mla_plan_tune times besides the chosen one (every bn, both modes), at most `max`.
int gemm_sm90_candidates(int64_t M, int N, int K, int batch, int sm_count, GemmSm90Config *out, int max);

// Workspace the launches need, valid for every configuration and problem on a device with sm_count SMs:
// fp32 partials (stream-K), and int counters, one per tile, that must be zero before the first launch (a launch
// leaves them zero again when it completes).
size_t gemm_sm90_partial_bytes(int sm_count);
size_t gemm_sm90_counter_count(int64_t M, int N, int batch);

// Enqueue the GEMM. pdl: launch with programmatic stream serialization (the kernel loads its first weight tiles
// before waiting for the previous kernel on the stream). cudaErrorNotSupported (nothing enqueued): not available, or
// the problem breaks the layout rules, or the tensor maps could not be encoded.
cudaError_t gemm_sm90_launch(const GemmProblem &p, const GemmSm90Config &cfg, int sm_count, float *partial, int *counters,
                             bool pdl, cudaStream_t stream);

}  // namespace latte
