// The W_UV product with the split attention's combine folded in (mla_uv_combine.cu), for small batches on Hopper:
//
//   o_lat[b][h] = Σ_s w_s · o_partial_s[b][h]  (the combine kernel's merge), rounded to bf16
//   o[b][h·128 + d] = Σ_c o_lat[b][h][c] · W_UV[h][d][c]   fp32 accumulation, one rounding to bf16
//
// One CTA per head loads W_UV[h] (128 KB) into shared memory before it waits for the attention (programmatic
// dependent launch), then merges its head's partials straight into shared memory and multiplies: no combine launch,
// no o_lat round trip, and the weights arrive while the attention still runs.
#pragma once

#include "cuda/mla_attention.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace latte {

// The largest batch the kernel takes (its merged rows stay in shared memory beside W_UV[h]). Measured in the layer
// (H200, medians of four rounds against the combine kernel + the tuned W_UV): batch 1 −3 to −6 µs, 4 and 16 −1.5 to
// −3, 8 −0.2 to −1.2, 32 −0.2 to +1.2 (its attention fills every SM, so the weights cannot come early): not past 16.
constexpr int kMlaUvCombineMaxBatch = 16;

struct MlaUvCombineParams {
    // the attention's partials and how to read them: MlaAttentionParams's fields of the same names (o_partial,
    // lse_partial, n_splits, split_len, cache_lens, max_cache_len, seq_pieces: nullptr for the static splits, else
    // the run-time pieces' table, where a 0 entry means the attention wrote that sequence's o_lat row itself)
    const float *o_partial;
    const float *lse_partial;
    const int *seq_pieces;
    const int32_t *cache_lens;
    int max_cache_len;
    int n_splits;
    int split_len;
    const __nv_bfloat16 *o_lat;  // [batch][n_heads][512]: read only for the rows a run-time piece table marks whole
    int batch;                   // 1 .. kMlaUvCombineMaxBatch
    int n_heads;                 // 1 .. 128 (one CTA each)
    const __nv_bfloat16 *w_uv;   // [n_heads][128][512] packed, 16-byte aligned (the plan's copy)
    __nv_bfloat16 *o;            // o[b * ldo + h * 128 + d], 4-byte aligned
    int64_t ldo;                 // even
    // 1: the partials are scratch nothing reads afterwards: dropped from L2 unwritten once read (as
    // MlaAttentionParams::discard_partial); honoured where o_partial is 128-byte aligned
    int discard = 0;
    // timing experiments only (the layer sets them from LATTE_MLA_UVC_EXPERIMENT in builds with
    // -DLATTE_DEV_EXPERIMENTS), 0 everywhere else: 1 no merge, 2 no W_UV loads, 4 no product or stores (these three: wrong results), 8 no discards
    int dev_flags = 0;
};

// This build has the kernel and `device` runs it (compute capability 9.0, the shared memory it needs).
bool mla_uv_combine_available(int device);

// Whether the parameters meet the kernel's rules (batch, heads, alignment, non-null pointers).
bool mla_uv_combine_supports(const MlaUvCombineParams &p);

// Enqueue it. pdl: launched with programmatic stream serialization: its CTAs load W_UV while the kernel before it
// (the attention, which lets dependents in: MlaAttentionParams::launch_dependents) still runs, and wait for it
// (griddepcontrol.wait) before reading anything it wrote. cudaErrorNotSupported (nothing enqueued): parameters it
// does not take. The device must be one mla_uv_combine_available said yes to (as mla_q_absorb_sm90_launch's, not asked
// again on every launch: the layer's plan asks once).
cudaError_t mla_uv_combine_launch(const MlaUvCombineParams &p, bool pdl, cudaStream_t stream);

}  // namespace latte
