// The fused query kernel (src/cuda/mla_q_absorb_sm90.cu: up projection + query rope + W_UK absorption) against a
// reference computed one element per thread, every element of q_attn compared.
//
//   exact:  small integer q_lora, Wq_up and W_UK (|v| <= 2), so every product and partial sum is an integer below 2^24
//           and exact in fp32 whatever the order: q rounds to bf16 the same way as the reference's exact sum, and so do
//           q_lat and the rope (the same fp32 operations on the same bf16 values): q_attn must match bit for bit.
//   real:   ~normal operands at the layer's scales, against float64 sums: |d| <= 2e-2 |ref| + 5e-3 rms, plus for a
//           rotated element 1.6e-2 (|x_i| + |x_p|) (q may be a bf16 ulp apart, and the rope's cancellations keep that),
//           plus for a q_lat element 2^-7 Σ_j |q_j| |W_UK[j]| (each q_j may be a bf16 ulp, <= 2^-7 |q_j|, apart: a
//           q_lat that cancels to near 0 keeps those ulps, found with 6 of 9.4 M elements over the first two terms).
// Shapes: the layer's (batch 128, 128 heads, dq 1536) and odd ones (batch 1 / 77 / 130 / 256, 3-16 heads, dq 64-512)
// with the grid capped at 3-7 CTAs (each CTA then takes tiles of several heads and both M tiles). Lengths include
// invalid ones (roped at position 0, as the unfused path). q_attn has one extra row, NaN-poisoned, that must stay NaN.
// Also: a launch with programmatic dependent launch right after the kernel that writes q_lora.
// The cache append (the layer's down epilogue folded in, Case::fold): q_lora read in place from a [batch][dq + 576]
// "down output", the other 576 columns appended to a NaN-poisoned cache with padded rows at row len[b] (roped at len[b]
// when the keys are stored rotated); the whole cache is compared bit for bit with a reference append (every other
// element still NaN, nothing for an invalid length) and the bad-length counter with the number of invalid lengths.
// LATTE_GEMM_TIMING=1: then the layer shape's timing (median of 20 launches, each after a read-only L2 flush), and with
// parts left out (dev flags 4: the stores, 8: the W_UK product).
// Exit 77 (ctest: skipped) without a GPU, on a GPU that is not compute capability 9.0, or in a build without sm_90a.
#include "cuda/mla_q_absorb_sm90.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "cuda_test_util.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

using namespace latte;
typedef __nv_bfloat16 bf16;

constexpr int kR = 512, kP = 64, kNope = 128, kQHead = 192, kRow = kR + kP;

static void fill(bf16 *p, size_t n, uint64_t seed, int int_range, float scale, cudaStream_t stream = 0) {
    fill_bf16_kernel<<<512, 256, 0, stream>>>(p, n, seed, int_range, scale);
    CK(cudaGetLastError());
}

// reference 1: q[m][h·192 + j] = bf16(Σ_k q_lora[m][k] · Wq_up[h·192 + j][k]) in float64 (exact for integers)
__global__ void ref_q_kernel(const bf16 *q_lora, const bf16 *wq_up, bf16 *q, int64_t M, int N, int dq) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= M * N) return;
    const int n = (int)(idx % N);
    const int64_t m = idx / N;
    double s = 0.0;
    for (int k = 0; k < dq; k++)
        s += (double)__bfloat162float(q_lora[m * dq + k]) * (double)__bfloat162float(wq_up[(int64_t)n * dq + k]);
    q[idx] = __float2bfloat16_rn((float)s);
}
// reference 2: q_attn[m][h][r] = bf16(Σ_j q_nope[j] · W_UK[h][j][r]) (w_uk_t[h][r][j]); q_attn[m][h][512 + i] =
// bf16(bf16(x_i·cos_i) + bf16(rot_i·sin_i)), rot = -x_{i+32} / x_{i-32}, at position len[m] (0 if invalid)
// (bound: for each q_lat element Σ_j |q_j| |W_UK[h][j][r]|, the scale of what one-ulp differences of q can move it)
__global__ void ref_attn_kernel(const bf16 *q, const bf16 *w_uk_t, const int32_t *lens, int64_t max_len,
                                const bf16 *cos_t, const bf16 *sin_t, bf16 *q_attn, float *bound, int64_t M, int H) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= M * H * kRow) return;
    const int c = (int)(idx % kRow);
    const int h = (int)(idx / kRow % H);
    const int64_t m = idx / kRow / H;
    const bf16 *qh = q + (m * H + h) * kQHead;
    if (c < kR) {
        double s = 0.0, sa = 0.0;
        for (int j = 0; j < kNope; j++) {
            const double v = (double)__bfloat162float(qh[j]) * (double)__bfloat162float(w_uk_t[((int64_t)h * kR + c) * kNope + j]);
            s += v, sa += fabs(v);
        }
        q_attn[idx] = __float2bfloat16_rn((float)s);
        bound[idx] = (float)sa;
    } else {
        bound[idx] = 0.0f;
        const int i = c - kR;
        const int32_t len = lens[m];
        const int64_t pos = len >= 0 && len <= max_len ? len : 0;
        const float x = __bfloat162float(qh[kNope + i]), xp = __bfloat162float(qh[kNope + (i ^ 32)]);
        const float rot = i < 32 ? -xp : xp;
        const float a = __bfloat162float(__float2bfloat16_rn(__fmul_rn(x, __bfloat162float(cos_t[pos * kP + i]))));
        const float b = __bfloat162float(__float2bfloat16_rn(__fmul_rn(rot, __bfloat162float(sin_t[pos * kP + i]))));
        q_attn[idx] = __float2bfloat16_rn(__fadd_rn(a, b));
    }
}

// reference 3: the cache append. cache[b][len[b]][j] = down[b][dq + j] for a valid length, the k_pe part (j >= 512)
// roped at len[b] when `rotate`; one thread per (b, j)
__global__ void ref_append_kernel(const bf16 *down, int64_t ld, int dq, const int32_t *lens, int64_t max_len,
                                  const bf16 *cos_t, const bf16 *sin_t, int rotate, bf16 *cache, int64_t batch_stride,
                                  int64_t row_stride, int64_t M) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= M * kRow) return;
    const int j = (int)(idx % kRow);
    const int64_t m = idx / kRow;
    const int32_t len = lens[m];
    if (len < 0 || len > max_len) return;
    const bf16 *row = down + m * ld + dq;
    bf16 v = row[j];
    if (rotate && j >= kR) {
        const int i = j - kR;
        const float x = __bfloat162float(row[j]), xp = __bfloat162float(row[kR + (i ^ 32)]);
        const float rot = i < 32 ? -xp : xp;
        const float a = __bfloat162float(__float2bfloat16_rn(__fmul_rn(x, __bfloat162float(cos_t[len * kP + i]))));
        const float b = __bfloat162float(__float2bfloat16_rn(__fmul_rn(rot, __bfloat162float(sin_t[len * kP + i]))));
        v = __float2bfloat16_rn(__fadd_rn(a, b));
    }
    cache[m * batch_stride + (int64_t)len * row_stride + j] = v;
}

static float bf16_to_f(uint16_t v) {
    uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t g_seed = 0x5EED0001ull;
static int g_sms = 0;

struct Case {
    const char *name;
    int64_t M;
    int H, dq;
    int grid;   // SM count the launch is told (0: the device's)
    bool exact;
    bool pdl;   // launched with PDL right after the kernel that fills q_lora
    int fold;   // 0: q_lora [M][dq], no append; 1 / 2: q_lora read from a [M][dq + 576] down output, whose other 576
                // columns are appended to the cache (2: keys stored rotated, so roped)
};

static void run_case(const Case &k) {
    const int64_t M = k.M;
    const int H = k.H, dq = k.dq;
    const int64_t max_len = 300;
    const size_t n_ql = (size_t)M * dq, n_wq = (size_t)H * kQHead * dq, n_wk = (size_t)H * kR * kNope,
                 n_q = (size_t)M * H * kQHead, n_out = (size_t)(M + 1) * H * kRow, n_tab = (size_t)(max_len + 1) * kP;
    bf16 *q_lora, *wq_up, *w_uk_t, *q_ref, *attn, *attn_ref, *cos_t, *sin_t;
    int32_t *lens;
    CK(cudaMalloc(&q_lora, n_ql * 2));
    CK(cudaMalloc(&wq_up, n_wq * 2));
    CK(cudaMalloc(&w_uk_t, n_wk * 2));
    CK(cudaMalloc(&q_ref, n_q * 2));
    CK(cudaMalloc(&attn, n_out * 2));
    CK(cudaMalloc(&attn_ref, n_out * 2));
    CK(cudaMalloc(&cos_t, n_tab * 2));
    CK(cudaMalloc(&sin_t, n_tab * 2));
    CK(cudaMalloc(&lens, (size_t)M * 4));
    // fold: the down output [M][dq + 576] (q_lora its first dq columns) and a cache of max_len + 2 rows a sequence,
    // rows padded by 8 and sequences by 16 elements (all poisoned)
    const int64_t ld_down = dq + kRow, cache_rows = max_len + 2, row_stride = kRow + 8,
                  batch_stride = cache_rows * row_stride + 16;
    const size_t n_down = (size_t)M * ld_down, n_cache = (size_t)M * batch_stride;
    bf16 *down = nullptr, *cache = nullptr, *cache_ref = nullptr;
    unsigned long long *bad_count = nullptr;
    if (k.fold) {
        CK(cudaMalloc(&down, n_down * 2));
        CK(cudaMalloc(&cache, n_cache * 2));
        CK(cudaMalloc(&cache_ref, n_cache * 2));
        CK(cudaMalloc(&bad_count, sizeof *bad_count));
        CK(cudaMemset(bad_count, 0, sizeof *bad_count));
        poison_bf16_kernel<<<512, 256>>>(cache, n_cache);
        poison_bf16_kernel<<<512, 256>>>(cache_ref, n_cache);
        CK(cudaGetLastError());
    }
    const int ir = k.exact ? 2 : 0;
    fill(wq_up, n_wq, g_seed++, ir, 1.0f / sqrtf((float)dq));
    fill(w_uk_t, n_wk, g_seed++, ir, 1.0f / sqrtf((float)kR));
    fill(cos_t, n_tab, g_seed++, 0, 0.25f);  // |v| <= 2·sqrt(3)·0.25 < 1 (the rope tolerance assumes it)
    fill(sin_t, n_tab, g_seed++, 0, 0.25f);
    poison_bf16_kernel<<<512, 256>>>(attn, n_out);
    CK(cudaGetLastError());
    std::vector<int32_t> hl((size_t)M);
    for (int64_t m = 0; m < M; m++) {
        const uint64_t h = (uint64_t)(m + 1) * 0x9E3779B97F4A7C15ull ^ g_seed;
        hl[m] = (int32_t)((h >> 33) % (uint64_t)(max_len + 7)) - 3;  // -3 .. max_len + 3: a few invalid
    }
    if (M > 2) hl[1] = -1, hl[2] = (int32_t)max_len + 1;
    hl[0] = (int32_t)max_len;
    g_seed++;
    CK(cudaMemcpy(lens, hl.data(), (size_t)M * 4, cudaMemcpyHostToDevice));

    MlaQAbsorbArgs a = {};
    a.q_lora = k.fold ? down : q_lora;
    a.q_lora_stride = k.fold ? ld_down : 0;
    a.wq_up = wq_up;
    a.w_uk_t = w_uk_t;
    a.q_attn = attn;
    a.batch = M;
    a.n_heads = H;
    a.dq = dq;
    a.cache_lens = lens;
    a.max_cache_len = max_len;
    a.rope_cos = cos_t;
    a.rope_sin = sin_t;
    a.dev_flags = 0;
    if (k.fold) {
        a.kv_row = down + dq;
        a.kv_row_stride = ld_down;
        a.kv_cache = cache;
        a.cache_batch_stride = batch_stride;
        a.cache_row_stride = row_stride;
        a.rotate_keys = k.fold == 2;
        a.bad_lengths = bad_count;
    }
    // what the kernel reads q_lora (and the rows to append) from
    bf16 *const src = k.fold ? down : q_lora;
    const size_t n_src = k.fold ? n_down : n_ql;
    const int sms = k.grid > 0 ? k.grid : g_sms;
    CHECK(mla_q_absorb_sm90_supports(a, true), "%s: supports() refused", k.name);
    if (k.pdl) {  // q_lora poisoned, then written by the kernel right before: the PDL launch must wait for it
        cudaStream_t stream;
        CK(cudaStreamCreate(&stream));
        poison_bf16_kernel<<<512, 256>>>(src, n_src);
        CK(cudaDeviceSynchronize());
        fill(src, n_src, g_seed, ir, 1.0f, stream);
        CK(mla_q_absorb_sm90_launch(a, sms, true, stream));
        CK(cudaStreamSynchronize(stream));
        CK(cudaStreamDestroy(stream));
    } else {
        fill(src, n_src, g_seed, ir, 1.0f);
        CK(mla_q_absorb_sm90_launch(a, sms, false, 0));
    }
    g_seed++;
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    if (k.fold)  // the reference reads q_lora compact
        CK(cudaMemcpy2D(q_lora, (size_t)dq * 2, down, (size_t)ld_down * 2, (size_t)dq * 2, (size_t)M,
                        cudaMemcpyDeviceToDevice));

    ref_q_kernel<<<(unsigned)((n_q + 255) / 256), 256>>>(q_lora, wq_up, q_ref, M, H * kQHead, dq);
    CK(cudaGetLastError());
    poison_bf16_kernel<<<512, 256>>>(attn_ref, n_out);
    float *bound;
    CK(cudaMalloc(&bound, (size_t)M * H * kRow * sizeof(float)));
    ref_attn_kernel<<<(unsigned)(((size_t)M * H * kRow + 255) / 256), 256>>>(q_ref, w_uk_t, lens, max_len, cos_t, sin_t,
                                                                             attn_ref, bound, M, H);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    std::vector<uint16_t> got(n_out), ref(n_out), qr(n_q);
    CK(cudaMemcpy(got.data(), attn, n_out * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(qr.data(), q_ref, n_q * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ref.data(), attn_ref, n_out * 2, cudaMemcpyDeviceToHost));
    std::vector<float> bnd((size_t)M * H * kRow);
    CK(cudaMemcpy(bnd.data(), bound, bnd.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaFree(bound));
    const size_t n_valid = (size_t)M * H * kRow;
    double ss = 0.0;
    for (size_t i = 0; i < n_valid; i++) ss += (double)bf16_to_f(ref[i]) * bf16_to_f(ref[i]);
    const double rms = sqrt(ss / (double)n_valid);
    size_t bad = 0, first_bad = (size_t)-1;
    double max_err = 0.0;
    for (size_t i = 0; i < n_valid; i++) {
        const float g = bf16_to_f(got[i]), r = bf16_to_f(ref[i]);
        bool ok;
        if (k.exact) {
            ok = got[i] == ref[i];
        } else {
            // q may be a bf16 ulp (2^-8 relative) apart from the reference's: q_lat sums 128 of them (the rms term);
            // a rotated element is x_i·cos ± x_p·sin, where a cancellation leaves the inputs' ulps (their term)
            const int c = (int)(i % kRow);
            double tol = 2e-2 * fabs((double)r) + 5e-3 * rms + (double)bnd[i] / 128.0;
            if (c >= kR) {
                const size_t qh = i / kRow * kQHead + kNope;
                const int e = c - kR;
                tol += 1.6e-2 * (fabs((double)bf16_to_f(qr[qh + e])) + fabs((double)bf16_to_f(qr[qh + (e ^ 32)])));
            }
            const double d = fabs((double)g - (double)r);
            ok = !isnan(g) && d <= tol;
            if (d > max_err) max_err = d;
        }
        if (!ok && bad++ == 0) first_bad = i;
    }
    if (bad) {
        const size_t i = first_bad;
        CHECK(false, "%s: %zu of %zu elements differ; first at row %lld head %lld col %lld: got %g, want %g", k.name, bad,
              n_valid, (long long)(i / kRow / H), (long long)(i / kRow % H), (long long)(i % kRow), bf16_to_f(got[i]),
              bf16_to_f(ref[i]));
    } else {
        CHECK(true, "");
    }
    size_t touched = 0;  // the extra row (batch M) is outside the output: still NaN
    for (size_t i = n_valid; i < n_out; i++) touched += got[i] != 0x7fc1;
    CHECK(touched == 0, "%s: %zu elements written past the batch", k.name, touched);
    printf("%s: batch %lld, H %d, dq %d, %d CTAs%s, %s: %s (rms %.3g%s)\n", k.name, (long long)M, H, dq,
           (int)std::min<int64_t>(sms, ((M + 127) / 128) * H), k.pdl ? ", PDL" : "", k.exact ? "exact" : "real",
           bad ? "FAILED" : "all equal", rms, k.exact ? "" : (max_err > 0 ? ", within tolerance" : ""));

    if (k.fold) {  // the append: every element of the cache (padding included) against the reference append
        ref_append_kernel<<<(unsigned)(((size_t)M * kRow + 255) / 256), 256>>>(
            down, ld_down, dq, lens, max_len, cos_t, sin_t, k.fold == 2, cache_ref, batch_stride, row_stride, M);
        CK(cudaGetLastError());
        std::vector<uint16_t> c_got(n_cache), c_ref(n_cache);
        CK(cudaMemcpy(c_got.data(), cache, n_cache * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(c_ref.data(), cache_ref, n_cache * 2, cudaMemcpyDeviceToHost));
        unsigned long long n_bad_len = 0;
        CK(cudaMemcpy(&n_bad_len, bad_count, sizeof n_bad_len, cudaMemcpyDeviceToHost));
        size_t diff = 0, first = 0, appended = 0;
        for (size_t i = 0; i < n_cache; i++) {
            if (c_got[i] != c_ref[i] && diff++ == 0) first = i;
            appended += c_ref[i] != 0x7fc1;
        }
        int64_t invalid = 0;
        for (int64_t m = 0; m < M; m++) invalid += hl[m] < 0 || hl[m] > max_len;
        CHECK(diff == 0, "%s: cache append: %zu of %zu elements differ, first at sequence %lld element %lld: got 0x%04x, "
              "want 0x%04x", k.name, diff, n_cache, (long long)(first / batch_stride), (long long)(first % batch_stride),
              c_got[first], c_ref[first]);
        CHECK((int64_t)n_bad_len == invalid, "%s: bad-length counter %llu, want %lld", k.name, n_bad_len,
              (long long)invalid);
        printf("%s: cache append (%s keys): %zu elements written, %lld invalid lengths: %s\n", k.name,
               k.fold == 2 ? "roped" : "plain", appended, (long long)invalid,
               diff == 0 && (int64_t)n_bad_len == invalid ? "all equal, the rest untouched" : "FAILED");
        for (void *p : {(void *)down, (void *)cache, (void *)cache_ref, (void *)bad_count}) CK(cudaFree(p));
    }

    for (void *p : {(void *)q_lora, (void *)wq_up, (void *)w_uk_t, (void *)q_ref, (void *)attn, (void *)attn_ref,
                    (void *)cos_t, (void *)sin_t, (void *)lens})
        CK(cudaFree(p));
}

static void time_layer_shape() {
    const int64_t M = 128;
    const int H = 128, dq = 1536;
    const size_t n_ql = (size_t)M * dq, n_wq = (size_t)H * kQHead * dq, n_wk = (size_t)H * kR * kNope,
                 n_out = (size_t)M * H * kRow, n_tab = 8192 * kP;
    bf16 *q_lora, *wq_up, *w_uk_t, *attn, *tab;
    int32_t *lens;
    CK(cudaMalloc(&q_lora, n_ql * 2));
    CK(cudaMalloc(&wq_up, n_wq * 2));
    CK(cudaMalloc(&w_uk_t, n_wk * 2));
    CK(cudaMalloc(&attn, n_out * 2));
    CK(cudaMalloc(&tab, n_tab * 2));
    CK(cudaMalloc(&lens, (size_t)M * 4));
    fill(q_lora, n_ql, 1, 0, 1.0f);
    fill(wq_up, n_wq, 2, 0, 0.02f);
    fill(w_uk_t, n_wk, 3, 0, 0.04f);
    fill(tab, n_tab, 4, 0, 0.5f);
    std::vector<int32_t> hl((size_t)M, 512);
    CK(cudaMemcpy(lens, hl.data(), (size_t)M * 4, cudaMemcpyHostToDevice));
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    const size_t flush_bytes = (size_t)l2 * 3;
    void *flush;
    CK(cudaMalloc(&flush, flush_bytes));
    CK(cudaMemset(flush, 0x5a, flush_bytes));
    MlaQAbsorbArgs a = {};
    a.q_lora = q_lora, a.wq_up = wq_up, a.w_uk_t = w_uk_t, a.q_attn = attn, a.batch = M, a.n_heads = H, a.dq = dq;
    a.cache_lens = lens, a.max_cache_len = 8191, a.rope_cos = tab, a.rope_sin = tab;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const double wq_bytes = (double)n_wq * 2, wk_bytes = (double)n_wk * 2;
    printf("timing (batch 128, 128 heads, dq 1536; median of 20 launches, each after a %zu MB read-only L2 flush):\n",
           flush_bytes >> 20);
    const struct { int flags; const char *what; } v[] = {
        {0, ""}, {4, "no stores"}, {8, "no W_UK product (its loads, wgmma, q_lat stores)"}, {12, "up projection alone"}};
    for (const auto &x : v) {
        a.dev_flags = x.flags;
        std::vector<float> ms;
        for (int r = 0; r < 22; r++) {
            l2_flush(flush, flush_bytes);
            CK(cudaEventRecord(e0, 0));
            CK(mla_q_absorb_sm90_launch(a, g_sms, false, 0));
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            if (r >= 2) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const double us = ms[ms.size() / 2] * 1e3;
        const double wbytes = wq_bytes + (x.flags & 8 ? 0.0 : wk_bytes);  // the weights this variant streams
        printf("  time q_absorb %8.1f us  %5.2f TB/s of weights (%.1f MB)  %s\n", us, wbytes / us * 1e-6, wbytes * 1e-6,
               x.what);
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    for (void *p : {(void *)q_lora, (void *)wq_up, (void *)w_uk_t, (void *)attn, (void *)tab, (void *)lens, flush})
        CK(cudaFree(p));
}

int main() {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("gpu_q_absorb: no GPU, skipped\n");
        return 77;
    }
    if (!mla_q_absorb_sm90_available(0)) {
        printf("gpu_q_absorb: not available here (needs compute capability 9.0 and an sm_90a build), skipped\n");
        return 77;
    }
    CK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, 0));
    if (const char *seed = getenv("LATTE_TEST_SEED")) g_seed = strtoull(seed, nullptr, 0);
    printf("gpu_q_absorb: %d SMs, seed 0x%llx\n", g_sms, (unsigned long long)g_seed);

    // the argument rules
    {
        MlaQAbsorbArgs a = {};
        a.batch = 4, a.n_heads = 2, a.dq = 96;  // dq not a multiple of 64
        CHECK(!mla_q_absorb_sm90_supports(a, false), "dq 96 accepted");
        a.dq = 128;
        CHECK(mla_q_absorb_sm90_supports(a, false), "geometry (4, 2, 128) refused");
        CHECK(!mla_q_absorb_sm90_supports(a, true), "null pointers accepted");
        CHECK(mla_q_absorb_sm90_launch(a, g_sms, false, 0) == cudaErrorNotSupported, "launch with null pointers");
        a.batch = 0;
        CHECK(!mla_q_absorb_sm90_supports(a, false), "batch 0 accepted");
        a.batch = 4;
        a.q_lora_stride = 100;  // < dq
        CHECK(!mla_q_absorb_sm90_supports(a, false), "q_lora_stride 100 < dq 128 accepted");
        a.q_lora_stride = 132;  // not a multiple of 8
        CHECK(!mla_q_absorb_sm90_supports(a, false), "q_lora_stride 132 accepted");
        a.q_lora_stride = 128 + 576;
        CHECK(mla_q_absorb_sm90_supports(a, false), "q_lora_stride 704 refused");
        bf16 *dummy = nullptr;
        int32_t *dummy_lens = nullptr;
        CK(cudaMalloc(&dummy, 1 << 20));
        CK(cudaMalloc(&dummy_lens, 64));
        a.q_lora = a.wq_up = a.w_uk_t = a.rope_cos = a.rope_sin = dummy;
        a.q_attn = dummy;
        a.cache_lens = dummy_lens;
        CHECK(mla_q_absorb_sm90_supports(a, true), "valid pointers refused");
        a.kv_row = dummy;  // an append without its cache and counter
        CHECK(!mla_q_absorb_sm90_supports(a, true), "an append without a cache accepted");
        CK(cudaFree(dummy));
        CK(cudaFree(dummy_lens));
    }

    const char *quick_env = getenv("LATTE_TEST_QUICK");
    const bool quick = quick_env && quick_env[0] == '1';
    const Case cases[] = {
        {"layer exact", 128, 128, 1536, 0, true, false, 0},
        {"layer real", 128, 128, 1536, 0, false, false, 0},
        {"b77 h16 dq256 3 CTAs", 77, 16, 256, 3, true, false, 0},
        {"b256 h8 dq512 5 CTAs", 256, 8, 512, 5, true, false, 0},
        {"b130 h5 dq192 7 CTAs", 130, 5, 192, 7, true, false, 0},
        {"b1 h3 dq64", 1, 3, 64, 0, true, false, 0},
        {"b3 h32 dq512 real", 3, 32, 512, 0, false, false, 0},
        {"b128 h16 dq1536 PDL", 128, 16, 1536, 0, true, true, 0},
        // the cache append folded in: the layer's shape, odd batches on few CTAs (each appends many rows), and PDL
        {"layer fold roped", 128, 128, 1536, 0, true, false, 2},
        {"layer fold real plain", 128, 128, 1536, 0, false, false, 1},
        {"b77 h16 dq256 fold 3 CTAs", 77, 16, 256, 3, true, false, 2},
        {"b130 h5 dq192 fold 7 CTAs plain", 130, 5, 192, 7, true, false, 1},
        {"b1 h3 dq64 fold", 1, 3, 64, 0, true, false, 2},
        {"b128 h16 dq1536 fold PDL", 128, 16, 1536, 0, false, true, 2},
    };
    for (const Case &k : cases) {
        if (quick && k.M * k.H * k.dq > 128 * 16 * 1536) {
            printf("%s: skipped (LATTE_TEST_QUICK=1)\n", k.name);
            continue;
        }
        run_case(k);
    }
    if (getenv("LATTE_GEMM_TIMING")) time_layer_shape();  // (not under ctest: other tests share the GPU there)
    printf("gpu_q_absorb: %d checks, %d failed\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
