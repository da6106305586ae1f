// A GEMM for a few rows of activations (gemv_bf16.cu): the MLA down projection at small batches as one weight stream.
//
//   y[z][m][n] = bf16( Σ_k x[z][m][k] · w[z][n][k] )   m < M <= 16, fp32 accumulation, one rounding
//
// (the GemmProblem convention, C = A · Bᵀ batched over z, with split 1). At batches 1-16 a projection is a
// matrix-vector product: its floor is the weights at copy bandwidth. A CTA's 16 warps stream 16 rows of w through
// per-warp cp.async rings (up to 192 KB in flight per SM) and multiply on the tensor cores. Every CTA lets the next
// kernel launch at its start (programmatic dependent launch), and a launch behind another kernel issues its first
// weights before it waits for that kernel.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace latte {

// The most rows of x the kernel takes: two 8-column mma tiles (9-16 rows: every chunk of w multiplies both).
constexpr int kGemvMaxRows = 16;
// The largest batch the MLA layer gives it by default (LATTE_MLA_DOWN_GEMV_ROWS overrides): one tile. v1's two-tile
// version ran slower than cuBLASLt's down projection in the layer (H100: +3 µs at batch 16; docs/NOTES.md); v2's has
// not been measured yet.
constexpr int kGemvLayerRows = 8;

struct GemvParams {
    const __nv_bfloat16 *x;  // x[z][m][k] at x + z·x_z + m·ldx + k (k < K read)
    int64_t ldx, x_z;
    const __nv_bfloat16 *w;  // w[z][n][k] at w + z·w_z + n·ldw + k (k < K read)
    int64_t ldw, w_z;
    __nv_bfloat16 *y;        // y[z][m][n] at y + z·y_z + m·ldy + n: these elements written, nothing else
    int64_t ldy, y_z;
    int M;                   // 1 .. kGemvMaxRows
    int N, K, Z;             // N >= 1; K >= 8, a multiple of 8; Z >= 1 (grid.y)
};

// Whether the kernel runs on this device: compute capability 8.0 or later with room for its ring (a 4-chunk ring and
// the two-tile reduction: 144 KB of shared memory a block; 208 KB with the 6-chunk ring where the device allows it).
bool gemv_bf16_available(int device);

// Whether the kernel takes these parameters: sizes, non-null pointers, x and w 16-byte aligned with strides that keep
// every row so (multiples of 8 elements), ldx, ldw >= K and ldy >= N where there is more than one row.
bool gemv_bf16_supports(const GemvParams &p);

// Enqueue it. pdl: launched with programmatic stream serialization; each warp's first weights are requested before
// griddepcontrol.wait (the weights never depend on the kernel before), x is read and y written after it. Either way
// every CTA lets the next kernel launch at its start (griddepcontrol.launch_dependents, sm_90+): a dependent launched
// with the attribute must wait before it reads y. cudaErrorNotSupported (nothing enqueued): parameters it does not take.
cudaError_t gemv_bf16_launch(const GemvParams &p, bool pdl, cudaStream_t stream);

}  // namespace latte
