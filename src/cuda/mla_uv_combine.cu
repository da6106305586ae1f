// The W_UV product with the split attention's combine folded in: small batches on Hopper (sm_90a).
//
//   o_lat[b][h] = Σ_s w_s · o_partial_s[b][h], w_s = exp(lse_s − max) / Σ exp(lse − max), rounded to bf16
//   o[b][h·128 + d] = Σ_c o_lat[b][h][c] · W_UV[h][d][c]          fp32 accumulation, one rounding to bf16
//
// What and why: at batches of about 1-32 the attention is split across the SMs (mla_attention_schedule, or pieces cut
// at run time), a combine kernel merges each (sequence, head)'s splits into o_lat, and the W_UV GEMM (cuBLASLt on an
// H200: ~9 µs alone for 16.8 MB of weights that take ~4 µs at copy bandwidth) starts cold behind it. W_UV's weights
// never depend on the attention, but no launch could load them earlier: the combine kernel sits between the two.
// Here one CTA per head does both: it loads W_UV[h] (128 KB) into shared memory as soon as it has an SM (programmatic
// dependent launch behind the attention, which lets dependents in at its start), waits for the attention, merges its
// head's partials for every sequence straight into shared memory, and multiplies. No combine launch, no o_lat round
// trip through memory, and the weight stream overlaps the attention's tail.
//
// Reference: mla_attention.cu's combine kernel followed by the W_UV GEMM. The merge repeats the combine's arithmetic
// with the same expressions, so from batch 3 on the merged rows are the combine's o_lat bit for bit (at batches 1-2
// a few warps share a row's splits and their fp32 sums are added at the end: the association differs); the product
// differs from a GEMM engine's only in its fp32 summation order. tests/gpu_mla checks the layer element by element
// against the CPU backend with this kernel and without it (LATTE_MLA_UV_COMBINE=0, and the other engines' cases).
//
// The kernel (one version; its ideas):
//   * 512 threads. Warp 0 issues W_UV[h]'s 128 rows as 1 KB bulk copies (TMA's 1-D form) on one mbarrier, before
//     griddepcontrol.wait; each row lands 1040 bytes from the last, so ldmatrix's 8 row addresses fall in 8 distinct
//     16-byte bank groups.
//   * the merge: (row, slice) items over the 16 warps. A row is cut into 16 / E slices of 32·E columns (E floats a
//     lane, E = the batch rounded up to a power of two, 4 to 16: 16-byte loads), so from batch 4 on every warp has a
//     slice; at batches 1-2 the warps a slice would leave idle take contiguous parts of its splits instead. A lane
//     keeps the LSEs (s = lane + 32 i) in registers and has 64 floats of rows in flight: the LSEs and the first 16
//     splits' rows are one round trip, each further 16 one more. Loads use ld.global.cg: the partials are written by
//     the attention, which this grid overlapped.
//   * the product: warps 0-7, 16 columns of W_UV[h] each over every row, mma.sync m16n8k16 fed by ldmatrix (M ≤ 16:
//     the tensor work is ~2 MFLOP a CTA; wgmma would buy nothing here).
#include "cuda/mla_uv_combine.cuh"
#include "cuda/launch.cuh"
#include "cuda/mla_attention_common.cuh"
#include "cuda/mla_attention_schedule.cuh"
#include "cuda/ptx.cuh"
#include "cuda/smem_optin.cuh"
#include "cuda/tma.cuh"

#include <cuda_bf16.h>
#include <math.h>

namespace latte {
namespace {

constexpr int kThreads = 512;
constexpr int kDv = 128;                                      // v_head_dim: W_UV[h] is [128][512]
constexpr uint32_t kRowBytes = kMlaLatent * 2 + 16;           // a 512-column bf16 row in shared memory, padded
constexpr uint32_t kWOff = 128;                               // the mbarrier at 0, then W_UV[h], then the merged rows
constexpr uint32_t kAOff = kWOff + kDv * kRowBytes;
constexpr int kMaxRows = (kMlaUvCombineMaxBatch + 15) / 16 * 16;
constexpr uint32_t kScratchBytes = 16 * 32 * 4 * 4;           // batches 1-2: each warp's fp32 share of a slice
constexpr size_t kSmemMax = kAOff + (size_t)kMaxRows * kRowBytes + kScratchBytes;
static_assert(kMaxRows <= 32, "the product keeps at most two m16 tiles of accumulators a warp");
static_assert(kSmemMax <= 232448, "fits the 227 KB a Hopper block may opt into");

size_t smem_bytes(int batch) { return kAOff + (size_t)((batch + 15) / 16 * 16) * kRowBytes + kScratchBytes; }

// E consecutive floats at src (16-byte aligned), through L2 only
template <int E>
__device__ __forceinline__ void load_floats(float (&v)[E], const float *src) {
    static_assert(E % 4 == 0, "16-byte loads");
#pragma unroll
    for (int j = 0; j < E / 4; j++) {
        const float4 t = __ldcg(reinterpret_cast<const float4 *>(src) + j);
        v[4 * j] = t.x, v[4 * j + 1] = t.y, v[4 * j + 2] = t.z, v[4 * j + 3] = t.w;
    }
}

template <int E>
__global__ void __launch_bounds__(kThreads, 1) mla_uv_combine_kernel(const MlaUvCombineParams p) {
#if LATTE_PTX_SM90A
    constexpr int kWarps = kThreads / 32;
    constexpr int kMmaWarps = 8;  // 8 × 16 columns = W_UV[h]'s 128 rows
    extern __shared__ __align__(128) unsigned char smem[];
    const int h = blockIdx.x;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint32_t bar = ptx::smem_u32(smem), w_s = bar + kWOff, a_s = bar + kAOff;

    // ---- W_UV[h] into shared memory: it never depends on the attention, so before the wait
    if (threadIdx.x == 0) {
        ptx::mbarrier_init(bar, 1);
        ptx::fence_mbarrier_init();
    }
    __syncthreads();
    if (warp == 0 && (p.dev_flags & 2)) {
        if (lane == 0) ptx::mbarrier_arrive(bar);
    } else if (warp == 0) {
        if (lane == 0) ptx::mbarrier_arrive_expect_tx(bar, kDv * kMlaLatent * 2);
        __syncwarp();
        const uint64_t policy = ptx::l2_policy_evict_first();  // read once a step
        const __nv_bfloat16 *w = p.w_uv + (size_t)h * kDv * kMlaLatent;
        for (int r = lane; r < kDv; r += 32)
            ptx::bulk_load_hint(w_s + r * kRowBytes, w + (size_t)r * kMlaLatent, kMlaLatent * 2, bar, policy);
    }
    // rows past the batch up to the m16 tile: never stored, zero so that their products stay finite
    const int rows = (p.batch + 15) / 16 * 16;
    for (int i = threadIdx.x; i < (rows - p.batch) * (kMlaLatent / 8); i += kThreads)
        *reinterpret_cast<uint4 *>(smem + kAOff + (size_t)(p.batch + i / (kMlaLatent / 8)) * kRowBytes +
                                   16 * (i % (kMlaLatent / 8))) = make_uint4(0u, 0u, 0u, 0u);

    ptx::griddep_wait();  // the attention has completed: its partials (and o_lat rows) are visible

    // ---- the merge: the combine kernel's arithmetic, its o_lat row slice written to shared memory as bf16
    constexpr int kSlices = kMlaLatent / (32 * E);
    constexpr int kChunk = 64 / E;  // splits whose rows a lane has in flight at once: 64 floats
    constexpr int kLseRegs = 4;     // LSEs a lane keeps (s = lane + 32 i): up to 128 splits are not loaded twice
    // fewer slices than warps (batches 1-2): G warps share a slice, each its contiguous part of the splits; their fp32
    // sums meet in shared memory (scratch) and are added in part order (the one place the merge's association differs
    // from the combine kernel's: o_lat may then differ from its bf16 in the last bit)
    const int n_items = p.batch * kSlices, G = n_items < kWarps ? kWarps / n_items : 1;
    float *const scratch = reinterpret_cast<float *>(smem + kAOff + (size_t)rows * kRowBytes);  // [warp][lane][E]
    for (int wi = warp; wi < n_items * G && !(p.dev_flags & 1); wi += kWarps) {
        const int it = wi / G, part = wi % G;
        const int b = it / kSlices, col0 = (it % kSlices) * 32 * E;  // the slice's first column
        const int col = col0 + lane * E;                             // this lane's first column
        __nv_bfloat16 *dst = reinterpret_cast<__nv_bfloat16 *>(smem + kAOff + (size_t)b * kRowBytes) + col;
        float *const share = scratch + ((size_t)wi * 32 + lane) * E;  // G > 1: this warp's sums
        int n_valid = 0, row0 = 0, row_step = 0;
        bool whole = false, invalid = false;
        if (p.seq_pieces) {  // run-time pieces: rows slot0.. of o_partial, or 0: the attention wrote o_lat itself
            const int sp = __ldcg(p.seq_pieces + b);
            if (sp == 0) whole = true;
            else row0 = mla_piece_slot0(sp), n_valid = mla_piece_count(sp), row_step = 1;
        } else {  // the static splits T reaches, rows s · batch + b; NaN for an invalid length (as the combine writes)
            const int len = __ldcg(p.cache_lens + b);
            if (!attention_detail::length_is_valid(len, p.max_cache_len)) invalid = true;
            else row0 = b, n_valid = (len + 1 + p.split_len - 1) / p.split_len, row_step = p.batch;
        }
        if (whole || invalid) {  // the attention's own o_lat row, or NaN; shared: part 0's values, −0 from the rest
            const __nv_bfloat16 *src = p.o_lat + ((size_t)b * p.n_heads + h) * kMlaLatent + col;
#pragma unroll
            for (int i = 0; i < E; i++) {
                const __nv_bfloat16 x = whole ? __ldcg(src + i) : __float2bfloat16(NAN);
                if (G == 1) dst[i] = x;
                else share[i] = part == 0 ? __bfloat162float(x) : -0.f;  // x + (−0) is x for every x
            }
            continue;
        }
        const float *lse_row = p.lse_partial + (size_t)row0 * p.n_heads + h;
        const size_t lse_stride = (size_t)row_step * p.n_heads;
        const float *slice = p.o_partial + ((size_t)row0 * p.n_heads + h) * kMlaLatent + col0;
        const size_t stride = (size_t)row_step * p.n_heads * kMlaLatent;  // floats from one row to the next
        // this warp's splits [s_begin, s_end): all of them, or its part
        const int per_part = (n_valid + G - 1) / G;
        const int s_begin = min(n_valid, part * per_part), s_end = min(n_valid, s_begin + per_part);
        auto load_chunk = [&](float (&v)[kChunk][E], int s0) {
#pragma unroll
            for (int u = 0; u < kChunk; u++)
                if (s0 + u < s_end) load_floats<E>(v[u], slice + (size_t)(s0 + u) * stride + lane * E);
        };
        // the LSEs and the first chunk's rows in flight together (every split below n_valid has tokens, so its row was
        // written; an empty one, LSE −inf, would be loaded and skipped as the combine skips it)
        float lse_r[kLseRegs];
#pragma unroll
        for (int i = 0; i < kLseRegs; i++)
            lse_r[i] = lane + 32 * i < n_valid ? __ldcg(lse_row + (size_t)(lane + 32 * i) * lse_stride) : -INFINITY;
        float v[kChunk][E];
        load_chunk(v, s_begin);
        // max and sum as the combine takes them: lane-strided in s order, then the butterfly
        float mx = -INFINITY;
#pragma unroll
        for (int i = 0; i < kLseRegs; i++)
            if (lane + 32 * i < n_valid) mx = fmaxf(mx, lse_r[i]);
        for (int s = lane + 32 * kLseRegs; s < n_valid; s += 32) mx = fmaxf(mx, __ldcg(lse_row + (size_t)s * lse_stride));
        for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        float den = 0.f;
#pragma unroll
        for (int i = 0; i < kLseRegs; i++)
            if (lane + 32 * i < n_valid) den += expf(lse_r[i] - mx);
        for (int s = lane + 32 * kLseRegs; s < n_valid; s += 32) den += expf(__ldcg(lse_row + (size_t)s * lse_stride) - mx);
        for (int o = 16; o > 0; o /= 2) den += __shfl_xor_sync(0xffffffffu, den, o);
        const float inv_den = 1.f / den;

        float acc[E];
#pragma unroll
        for (int i = 0; i < E; i++) acc[i] = 0.f;
        for (int s0 = s_begin; s0 < s_end; s0 += kChunk) {
            if (s0 > s_begin) load_chunk(v, s0);
#pragma unroll
            for (int u = 0; u < kChunk; u++) {
                const int s = s0 + u;
                if (s >= s_end) break;
                const int r = s / 32;  // the same on every lane
                const float mine = r == 0 ? lse_r[0] : r == 1 ? lse_r[1] : r == 2 ? lse_r[2] : lse_r[3];
                const float lse = r < kLseRegs ? __shfl_sync(0xffffffffu, mine, s % 32)
                                               : __ldcg(lse_row + (size_t)s * lse_stride);
                if (lse == -INFINITY) continue;
                const float w = expf(lse - mx) * inv_den;
#pragma unroll
                for (int i = 0; i < E; i++) acc[i] += w * v[u][i];
            }
        }
#pragma unroll
        for (int i = 0; i < E; i++) {
            if (G == 1) dst[i] = __float2bfloat16_rn(acc[i]);
            else share[i] = acc[i];
        }
        // the partial rows are read for good: a slice is E lines (32 floats each) of each of this warp's split rows;
        // after __syncwarp every lane's loads have returned (their values are in the stores above)
        if (p.discard && !(p.dev_flags & 8)) {
            __syncwarp();
            if (lane < E)
                for (int s = s_begin; s < s_end; s++) ptx::discard_l2(slice + (size_t)s * stride + 32 * lane);
        }
    }
    if (G > 1 && !(p.dev_flags & 1)) {  // a warp an item adds its parts' sums in part order
        __syncthreads();
        if (warp < n_items) {
            const int b = warp / kSlices, col = (warp % kSlices) * 32 * E + lane * E;
            __nv_bfloat16 *dst = reinterpret_cast<__nv_bfloat16 *>(smem + kAOff + (size_t)b * kRowBytes) + col;
            const float *share = scratch + ((size_t)warp * G * 32 + lane) * E;
#pragma unroll
            for (int i = 0; i < E; i++) {
                float x = share[i];
                for (int part = 1; part < G; part++) x += share[(size_t)part * 32 * E + i];
                dst[i] = __float2bfloat16_rn(x);
            }
        }
    }
    __syncthreads();  // every merged row (and the zeroed padding) is in shared memory
    if (warp >= kMmaWarps || (p.dev_flags & 4)) return;

    // ---- the product: this warp's 16 columns of o (W_UV[h]'s rows n0..n0+15) for every row, K = 512
    ptx::mbarrier_wait(bar, 0);  // W_UV[h] has landed
    const int n0 = warp * 16, m_tiles = rows / 16;
    const int q = lane / 8, r8 = lane % 8;
    // ldmatrix x4 row addresses: B's matrices (n0.., k0..), (n0.., k0+8..), (n0+8.., k0..), (n0+8.., k0+8..) = b0 b1 of
    // the two n8 tiles; A's (rows 0-7, k0..), (8-15, k0..), (0-7, k0+8..), (8-15, k0+8..) = a0 a1 a2 a3
    const uint32_t b_addr = w_s + (uint32_t)(n0 + r8 + 8 * (q / 2)) * kRowBytes + 16u * (q % 2);
    const uint32_t a_addr = a_s + (uint32_t)(r8 + 8 * (q % 2)) * kRowBytes + 16u * (q / 2);
    float d[2][2][4];
#pragma unroll
    for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int i = 0; i < 4; i++) d[mt][nt][i] = 0.f;
#pragma unroll 4
    for (int k0 = 0; k0 < kMlaLatent; k0 += 16) {
        uint32_t bf[4];
        ptx::ldmatrix_x4(bf, b_addr + 2u * k0);
#pragma unroll
        for (int mt = 0; mt < 2; mt++) {
            if (mt < m_tiles) {
                uint32_t af[4];
                ptx::ldmatrix_x4(af, a_addr + (uint32_t)mt * 16 * kRowBytes + 2u * k0);
                ptx::mma_bf16_16816(d[mt][0], af, bf[0], bf[1]);
                ptx::mma_bf16_16816(d[mt][1], af, bf[2], bf[3]);
            }
        }
    }
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int nt = 0; nt < 2; nt++) {
            const int c = h * kDv + n0 + 8 * nt + 2 * t;
#pragma unroll
            for (int half = 0; half < 2; half++) {
                const int row = 16 * mt + g + 8 * half;
                if (row < p.batch)
                    *reinterpret_cast<__nv_bfloat162 *>(p.o + (size_t)row * p.ldo + c) =
                        __floats2bfloat162_rn(d[mt][nt][2 * half], d[mt][nt][2 * half + 1]);
            }
        }
#else
    (void)p;
#endif
}

// E for a batch: the batch rounded up to a power of two, at least 4 and at most 16, so that batch · 16 / E items fill
// the 16 warps from batch 4 on. Not fewer than 4 floats a lane: at batch 1 and 4096 tokens (65 splits) E = 1 (16
// warps a row, 4-byte loads) took the layer to ~149 µs against ~136 with E = 4 (4 warps a row, 16-byte loads, five
// rounds of 16 splits), E = 2 ~140 (bench/results/2026-11-29-h200-uv-combine, call 3)
int lane_floats(int batch) {
    int e = 4;
    while (e < batch && e < 16) e *= 2;
    return e;
}

template <int E>
cudaError_t launch_one(const MlaUvCombineParams &p, bool pdl, int device, cudaStream_t stream) {
    if (const cudaError_t e = smem_optin_once<mla_uv_combine_kernel<E>>(kSmemMax, device)) return e;
    return launch_maybe_pdl(mla_uv_combine_kernel<E>, dim3((unsigned)p.n_heads), dim3(kThreads), smem_bytes(p.batch), stream,
                            pdl, p);
}

bool aligned(const void *ptr, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; }

}  // namespace

bool mla_uv_combine_available(int device) {
#if defined(LATTE_HAVE_SM90A)
    return tma_hopper_device_ok(device, kSmemMax);
#else
    (void)device;
    return false;
#endif
}

bool mla_uv_combine_supports(const MlaUvCombineParams &p) {
    if (p.batch < 1 || p.batch > kMlaUvCombineMaxBatch || p.n_heads < 1 || p.n_heads > 128 || p.n_splits < 1 ||
        p.split_len < 1 || p.ldo < (int64_t)p.n_heads * kDv || p.ldo % 2 != 0)
        return false;
    if (!p.o_partial || !p.lse_partial || !p.w_uv || !p.o || (p.seq_pieces ? !p.o_lat : !p.cache_lens)) return false;
    // float4 loads of the partials, 16-byte bulk copies of W_UV, bf16x2 stores of o, bf16 reads of o_lat
    return aligned(p.o_partial, 16) && aligned(p.w_uv, 16) && aligned(p.o, 4) && aligned(p.o_lat, 2);
}

cudaError_t mla_uv_combine_launch(const MlaUvCombineParams &p, bool pdl, cudaStream_t stream) {
    // (the device's fitness is the caller's mla_uv_combine_available, asked once: the layer's plan does)
    if (!mla_uv_combine_supports(p)) return cudaErrorNotSupported;
    int device = 0;
    if (const cudaError_t e = cudaGetDevice(&device)) return e;
    MlaUvCombineParams k = p;
    k.discard = p.discard && aligned(p.o_partial, 128);  // whole lines only
    switch (lane_floats(p.batch)) {
        case 4: return launch_one<4>(k, pdl, device, stream);
        case 8: return launch_one<8>(k, pdl, device, stream);
        default: return launch_one<16>(k, pdl, device, stream);
    }
}

}  // namespace latte
