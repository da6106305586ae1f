// Small kernels of the MLA decode layer (CUDA backend): the down-projection epilogue (split-K sum or bf16
// GEMM output, q_lora, cache append with the bad-length guard), the query rope, and the plan-time W_UK transpose.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace latte {

// Element i (< 64) of rope_bf16(x, pos) (the reference's bf16 roundings, NeoX half split, rotate_half([a,b]) = [-b,a]):
// x_i the element, x_p its partner i ^ 32 (bf16 values as float), cos_row / sin_row the tables' row of the position.
// Products and the sum use __fmul_rn / __fadd_rn so that no FMA contraction changes the roundings. (Shared by the down
// epilogue, the query rope and the fused query kernel's cache append.)
__device__ __forceinline__ __nv_bfloat16 mla_rope_elem(float x_i, float x_p, int i, const __nv_bfloat16 *cos_row,
                                                       const __nv_bfloat16 *sin_row) {
    const float rot = i < 32 ? -x_p : x_p;
    const float a = __bfloat162float(__float2bfloat16_rn(__fmul_rn(x_i, __bfloat162float(cos_row[i]))));
    const float b = __bfloat162float(__float2bfloat16_rn(__fmul_rn(rot, __bfloat162float(sin_row[i]))));
    return __float2bfloat16_rn(__fadd_rn(a, b));
}

struct MlaDownEpilogueArgs {
    // The down GEMM's result, one of:
    const __nv_bfloat16 *down;     // [batch][dq + 576] bf16, already rounded (cuBLASLt's output), or nullptr
    const float *partial;          // [split][batch][dq + 576] fp32 partial sums (our GEMM), used when !down
    int split;
    int64_t batch;
    int dq;                        // q_lora_rank
    __nv_bfloat16 *q_lora;         // [batch][dq] bf16
    __nv_bfloat16 *kv_cache;       // appended at row cache_lens[b]
    int64_t cache_batch_stride, cache_row_stride;
    const int32_t *cache_lens;
    int64_t max_cache_len;
    const __nv_bfloat16 *rope_cos; // [>= max_cache_len + 1][64]
    const __nv_bfloat16 *rope_sin;
    int rotate_keys;               // keys stored rotated: append rope(k_pe, len) instead of k_pe
    unsigned long long *bad_lengths;  // plan-owned counter, +1 per sequence with an invalid length
};
void mla_down_epilogue_launch(const MlaDownEpilogueArgs &a, cudaStream_t stream);

// q_attn[b][h][512 + i] = rope_bf16(q[b][h*192 + 128 + i], pos b), i < 64; pos = len[b] (0 when invalid)
void mla_q_rope_launch(const __nv_bfloat16 *q, __nv_bfloat16 *q_attn, int64_t batch, int n_heads,
                       const int32_t *cache_lens, int64_t max_cache_len, const __nv_bfloat16 *rope_cos,
                       const __nv_bfloat16 *rope_sin, cudaStream_t stream);

// w_uk_t[h][r][j] = wkv_up[h*256 + j][r] (j < 128, r < 512): W_UKᵀ per head, the absorption's B operand
void mla_transpose_w_uk_launch(const __nv_bfloat16 *wkv_up, __nv_bfloat16 *w_uk_t, int n_heads, cudaStream_t stream);

}  // namespace latte
