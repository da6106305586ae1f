// Small kernels of the MLA decode layer (CUDA backend).
//
// What and why: the steps between the projections that are too small to deserve a GEMM: summing the
// down-projection's split-K partials (or reading its bf16 output, when cuBLASLt ran it) while splitting the
// result into q_lora and the cache append (rounding point 1 and 2 of the spec's order), the rope of the
// query's rotary part (rounding point 3), and the plan-time transpose of W_UK. Each reads and writes a few MB at most.
//
// Reference rope (the reference's bf16 rounding, NeoX half split over 64 dims, rotate_half([a,b]) = [-b,a]):
//     rope_bf16(x, t)[i] = bf16( bf16(x[i] * cos[t][i]) + bf16(rotate_half(x)[i] * sin[t][i]) )
// Products and sums use __fmul_rn / __fadd_rn so no FMA contraction changes the roundings.
#include "mla_small_kernels.cuh"

namespace latte {
namespace {

constexpr int kR = 512, kP = 64, kHalf = 32, kRow = kR + kP;  // latent, rope, cache row
constexpr int kQHead = 192;                                      // nope 128 + rope 64 per head in q

__device__ __forceinline__ bool length_ok(int32_t len, int64_t max_len) { return len >= 0 && (int64_t)len <= max_len; }

// ---- down-projection epilogue ------------------------------------------------------------------------
// grid: x = batch row m, y = column blocks of 256 over N = dq + 576. One thread per column.
__global__ void mla_down_epilogue_kernel(const MlaDownEpilogueArgs a) {
    const int64_t m = blockIdx.x;
    const int N = a.dq + kRow;
    const int n = blockIdx.y * blockDim.x + threadIdx.x;
    const int32_t len = a.cache_lens[m];
    const bool ok = length_ok(len, a.max_cache_len);
    if (!ok && blockIdx.y == 0 && threadIdx.x == 0) atomicAdd(a.bad_lengths, 1ull);
    if (n >= N) return;

    const int64_t plane = a.batch * N;
    auto sum = [&](int col) {  // fixed split order: deterministic
        if (a.down) return __bfloat162float(a.down[m * N + col]);  // bf16 already: the rounding below is exact
        const float *p = a.partial + m * N + col;
        float v = p[0];
        for (int s = 1; s < a.split; s++) v += p[s * plane];
        return v;
    };
    const float v = sum(n);
    if (n < a.dq) {
        a.q_lora[m * a.dq + n] = __float2bfloat16_rn(v);
        return;
    }
    if (!ok) return;  // invalid length: nothing appended, nothing read from the rope tables
    const int j = n - a.dq;
    __nv_bfloat16 out = __float2bfloat16_rn(v);
    if (a.rotate_keys && j >= kR) {
        const int i = j - kR;
        const float partner = __bfloat162float(__float2bfloat16_rn(sum(a.dq + kR + (i ^ kHalf))));
        out = mla_rope_elem(__bfloat162float(out), partner, i, a.rope_cos + (int64_t)len * kP, a.rope_sin + (int64_t)len * kP);
    }
    a.kv_cache[m * a.cache_batch_stride + (int64_t)len * a.cache_row_stride + j] = out;
}

// ---- query rope ----------------------------------------------------------------------------------------
__global__ void mla_q_rope_kernel(const __nv_bfloat16 *__restrict__ q, __nv_bfloat16 *__restrict__ q_attn,
                                  int64_t batch, int n_heads, const int32_t *__restrict__ cache_lens, int64_t max_len,
                                  const __nv_bfloat16 *__restrict__ rope_cos, const __nv_bfloat16 *__restrict__ rope_sin) {
    const int64_t total = batch * n_heads * kP;
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int i = (int)(idx % kP);
        const int64_t bh = idx / kP;  // b * n_heads + h
        const int64_t b = bh / n_heads;
        const int h = (int)(bh % n_heads);
        const int32_t len = cache_lens[b];
        const int64_t pos = length_ok(len, max_len) ? len : 0;  // invalid: the attention makes it NaN anyway
        const __nv_bfloat16 *src = q + b * n_heads * kQHead + (int64_t)h * kQHead + 128;
        const __nv_bfloat16 r = mla_rope_elem(__bfloat162float(src[i]), __bfloat162float(src[i ^ kHalf]), i,
                                          rope_cos + pos * kP, rope_sin + pos * kP);
        q_attn[bh * kRow + kR + i] = r;
    }
}

// ---- plan time: W_UKᵀ ----------------------------------------------------------------------------------
// 32x32 tiles through shared memory: reads rows of wkv_up, writes rows of w_uk_t, both coalesced.
__global__ void mla_transpose_w_uk_kernel(const __nv_bfloat16 *__restrict__ wkv_up, __nv_bfloat16 *__restrict__ w_uk_t) {
    __shared__ __nv_bfloat16 tile[32][33];
    const int h = blockIdx.z, j0 = blockIdx.y * 32, r0 = blockIdx.x * 32;
    const int tx = threadIdx.x, ty = threadIdx.y;  // 32 x 8
    for (int k = ty; k < 32; k += 8) tile[k][tx] = wkv_up[((int64_t)h * 256 + j0 + k) * kR + r0 + tx];
    __syncthreads();
    for (int k = ty; k < 32; k += 8) w_uk_t[((int64_t)h * kR + r0 + k) * 128 + j0 + tx] = tile[tx][k];
}

int grid_for(int64_t work, int threads) {
    const int64_t blocks = (work + threads - 1) / threads;
    return (int)(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

}  // namespace

void mla_down_epilogue_launch(const MlaDownEpilogueArgs &a, cudaStream_t stream) {
    const int N = a.dq + kRow;
    const dim3 grid((unsigned)a.batch, (unsigned)((N + 255) / 256));
    mla_down_epilogue_kernel<<<grid, 256, 0, stream>>>(a);
}

void mla_q_rope_launch(const __nv_bfloat16 *q, __nv_bfloat16 *q_attn, int64_t batch, int n_heads,
                       const int32_t *cache_lens, int64_t max_cache_len, const __nv_bfloat16 *rope_cos,
                       const __nv_bfloat16 *rope_sin, cudaStream_t stream) {
    mla_q_rope_kernel<<<grid_for(batch * n_heads * kP, 256), 256, 0, stream>>>(q, q_attn, batch, n_heads, cache_lens,
                                                                              max_cache_len, rope_cos, rope_sin);
}

void mla_transpose_w_uk_launch(const __nv_bfloat16 *wkv_up, __nv_bfloat16 *w_uk_t, int n_heads, cudaStream_t stream) {
    mla_transpose_w_uk_kernel<<<dim3(kR / 32, 128 / 32, n_heads), dim3(32, 8), 0, stream>>>(wkv_up, w_uk_t);
}

}  // namespace latte
