// Device helpers shared by the attention kernels (mla_attention.cu: mma.sync + simple; mla_attention_sm90.cu:
// wgmma): the validity of a length, the reference's score rounding and its key-rope rounding.
#pragma once

#include <cuda_bf16.h>
#include <stdint.h>

namespace latte {
namespace attention_detail {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

static __device__ __forceinline__ bool length_is_valid(int len, int max_cache_len) { return len >= 0 && len <= max_cache_len; }

// A score as the reference rounds it: its QKᵀ matmul returns bf16, and the scaling returns bf16 again
// (PyTorch's absorbed bmm rounds at the same two points). Keeping it in fp32 instead is closer to the exact
// function but drifts from the bf16 reference once scores grow (x·2 inputs: twice PyTorch's error).
static __device__ __forceinline__ float score_reference(float dot, float scale) {
    return __bfloat162float(__float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn(dot)) * scale));
}
// The same, in the log2 domain the fast kernel's exp2f works in.
static __device__ __forceinline__ float score_log2(float dot, float scale) { return score_reference(dot, scale) * kLog2e; }

// bf16(x) as a float, in one instruction: the bf16x2 conversion (cvt.rn.bf16x2.f32, F2FP.PACK_AB) of x into the high
// half and 0 into the low half, whose 32 bits are bf16(x)'s float (a bf16 is the high half of a float). The scalar
// float → bf16 conversion (F2F.BF16.F32) goes through the shared MIO pipe, and converting two at once into one word
// needs two integer moves to unpack them again: neither is needed here.
static __device__ __forceinline__ float bf16_round(float x) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(0.f, x);  // .x (low half) = 0, .y (high half) = bf16(x)
    return __uint_as_float(*reinterpret_cast<const uint32_t *>(&v));
}
// score_reference bit for bit, in three instructions (F2FP, FMUL, F2FP). History: in the seesaw kernel (ncu, H100,
// length 6144) the scalar conversions made the scores ~1,100 cycles of each warpgroup's critical path; two scores per
// conversion then unpacked (score_x2, until 2026-11-25) took 8 instructions a pair; this form 6 (pair-order probe,
// H200: −2.3% a pair).
// (Natural units: the caller folds log2 e into its exponent, exp2(s·log2e − m·log2e), one FFMA.)
static __device__ __forceinline__ float score_fast(float dot, float scale) { return bf16_round(bf16_round(dot) * scale); }

// 2^x in one MUFU.EX2 (ex2.approx.ftz): exp2f without --use_fast_math adds a range test and two multiplies for
// results below 2^-126, which it returns as subnormals; here they are 0. Only exponents of softmax terms go through
// it: a term below 2^-126 next to the row's largest term (exactly 1) changes no bf16 output.
static __device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// The reference's rotary rounding for one element: x·cos and rotate_half(x)·sin are each rounded to bf16 (PyTorch
// bf16 tensor ops), then their sum is. `rot` is the rotate_half partner already negated where needed (exact).
static __device__ __forceinline__ __nv_bfloat16 rope_reference(float x, float rot, float c, float s) {
    const float a = __bfloat162float(__float2bfloat16_rn(x * c));
    const float b = __bfloat162float(__float2bfloat16_rn(rot * s));
    return __float2bfloat16_rn(a + b);
}

// rotate_half([a, b]) = [-b, a] on two bf16 of the low half (lo: rope d, d+1) and their partners in the high half
// (hi: d+32, d+33), each given as a packed bf16 pair with its cos/sin pairs, in packed bf16 arithmetic:
//   lo' = bf16(bf16(lo·cos_lo) − bf16(hi·sin_lo)),   hi' = bf16(bf16(hi·cos_hi) + bf16(lo·sin_hi)).
// Bitwise the reference's rounding (rope_reference), with 3 packed instructions per 2 elements instead of ~20 (the
// fp32 route needs a single-lane F2F conversion per product, the costly part of the rotation):
// * mul.rn.bf16x2 rounds the exact product once. The product of two bf16 (8-bit significands) has ≤ 16 significant
//   bits, so the reference's fp32 product is exact, except below 2^-134 (bits under fp32's 2^-149), where both
//   roundings give ±0 (bf16's smallest subnormal is 2^-133; fp32 rounds to at most the tie 2^-134, which bf16 rounds
//   to even = 0).
// * add/sub.rn.bf16x2 round the exact sum once; the reference rounds it to fp32 first, and rounding to 24 bits and
//   then to 8 bits equals rounding to 8 bits directly (double rounding is innocuous when 24 ≥ 2·8 + 2), while sums
//   in the subnormal range are exact in fp32 (multiples of 2^-133).
// * x − y = x + (−y) exactly, and bf16((−y)·s) = −bf16(y·s) (round-to-nearest-even is symmetric).
// The _rn forms are never contracted into an fma. bf16 arithmetic keeps subnormals (PTX has no .ftz for bf16).
// sm_90 has native bf16x2 mul/add/sub; sm_80 gets them as fma.rn.bf16x2 with −0 / ±1 operands (same roundings).
static __device__ __forceinline__ void rotate_pair(uint32_t &lo, uint32_t &hi, uint32_t c_lo, uint32_t c_hi, uint32_t s_lo,
                                            uint32_t s_hi) {
    const auto b2 = [](uint32_t v) { return *reinterpret_cast<const __nv_bfloat162 *>(&v); };
    const __nv_bfloat162 x = b2(lo), y = b2(hi);
    const __nv_bfloat162 new_lo = __hsub2_rn(__hmul2_rn(x, b2(c_lo)), __hmul2_rn(y, b2(s_lo)));
    const __nv_bfloat162 new_hi = __hadd2_rn(__hmul2_rn(y, b2(c_hi)), __hmul2_rn(x, b2(s_hi)));
    lo = *reinterpret_cast<const uint32_t *>(&new_lo);
    hi = *reinterpret_cast<const uint32_t *>(&new_hi);
}

}  // namespace attention_detail
}  // namespace latte
