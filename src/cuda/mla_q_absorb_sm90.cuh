// The query side of the MLA decode step in one Hopper kernel (mla_q_absorb_sm90.cu): the up projection, the query
// rope and the W_UK absorption, per (head, 128 sequences).
//
//   q[b][h]          = bf16( q_lora[b] · Wq_up[h·192 .. h·192 + 191]ᵀ )            (spec step 3)
//   q_attn[b][h][512 + i] = rope_bf16(q_pe[b][h], len[b])[i]                       (step 4, the reference's roundings)
//   q_attn[b][h][0:512]   = bf16( q_nope[b][h] · W_UK[h] )                         (the absorption)
//
// Optionally it also appends the new token's cache row (the down projection's epilogue, spec step 2, folded in so that
// the layer runs one launch fewer): kv_cache[b][len[b]] = kv_row[b], with the keys' rope when rotate_keys.
//
// The same function as gemm (up) + mla_q_rope + gemm (W_UK) in mla_plan.cu, with the same roundings; the fp32 sums
// run in another order, so results agree to a bf16 ulp of q or q_attn, not bit for bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda/mla_attention_schedule.cuh"

namespace latte {

struct MlaQAbsorbArgs {
    const __nv_bfloat16 *q_lora;  // [batch][dq], rows q_lora_stride apart
    const __nv_bfloat16 *wq_up;   // [H·192][dq]
    const __nv_bfloat16 *w_uk_t;  // [H][512][128]: W_UK[h]ᵀ (the plan's re-laid copy)
    __nv_bfloat16 *q_attn;        // [batch][H][576]
    int64_t batch;
    int n_heads, dq;
    const int32_t *cache_lens;  // [batch]; a length outside [0, max_cache_len] ropes at position 0 (as mla_q_rope)
    int64_t max_cache_len;
    const __nv_bfloat16 *rope_cos, *rope_sin;  // [>= max_cache_len + 1][64]
    int dev_flags;  // timing experiments only, 0 everywhere else: 4 no stores, 8 no W_UK product (wrong results)
    int64_t q_lora_stride;  // elements between q_lora's rows; 0 means dq (else a multiple of 8, >= dq: e.g. the down
                            // projection's [batch][dq + 576] output read in place)
    // The cache append, or kv_row = nullptr (none). Row b of kv_row (576 bf16: latent, then k_pe, as the down projection
    // rounded them) goes to row cache_lens[b] of sequence b, roped at that position when rotate_keys (the keys-stored-
    // rotated convention), as mla_down_epilogue_kernel does; a sequence with an invalid length appends nothing and
    // adds 1 to *bad_lengths. One CTA per sequence writes it, after the previous grid (PDL) is done.
    const __nv_bfloat16 *kv_row;
    int64_t kv_row_stride;  // elements between the rows of kv_row
    __nv_bfloat16 *kv_cache;
    int64_t cache_batch_stride, cache_row_stride;
    int rotate_keys;
    unsigned long long *bad_lengths;
    // The attention's balanced schedule (mla_attention_schedule.cuh), written by one more CTA on an SM the tiles leave
    // free (mla_q_absorb_sm90_spare_sm; attn.list null: none) for the attention that follows, which then only reads it.
    // Nothing of it waits for the kernel before (the lengths are an input of the step).
    MlaScheduleArgs attn;
};

// This build has the sm_90a kernel and `device` can run it (compute capability 9.0, the shared memory, a driver that
// encodes tensor maps).
bool mla_q_absorb_sm90_available(int device);

// The layout rules: dq a multiple of 64, 1 <= batch <= 2^30, 1 <= n_heads <= 65535, q_lora_stride 0 or a multiple of 8
// >= dq, and (check_pointers) every pointer set (the append's when kv_row is), q_lora, wq_up, w_uk_t and q_attn 16-byte
// aligned.
bool mla_q_absorb_sm90_supports(const MlaQAbsorbArgs &a, bool check_pointers);

// Whether a launch on sm_count SMs leaves an SM free for the attention's schedule (MlaQAbsorbArgs::attn): the
// tiles (heads × batch tiles of 128) take fewer CTAs than there are SMs.
bool mla_q_absorb_sm90_spare_sm(const MlaQAbsorbArgs &a, int sm_count);

// Enqueue it (one CTA per SM at most, and the schedule's CTA where attn.list is set and an SM is spare). pdl: launch with programmatic stream serialization (the CTAs load their first
// weights before waiting for the previous kernel). cudaErrorNotSupported (nothing enqueued): not available, or the
// arguments break the layout rules, or the tensor maps could not be encoded.
cudaError_t mla_q_absorb_sm90_launch(const MlaQAbsorbArgs &a, int sm_count, bool pdl, cudaStream_t stream);

}  // namespace latte
