// Probe: how fast can one CTA (64 heads, two warpgroups) run the attention's tile loop under several orders of its
// work, with every operand resident in shared memory (no masking; the keys' rope and the tiles' copies as options)?
//
// Question it settles (docs/NOTES.md, "The attention's pair: a split of roles, probed"): the seesaw kernel's pair of
// tiles takes ~7,000-7,500 cycles against 4,352 of tensor work, and leaving its copies out entirely gains only ~7-10%:
// the loss is inside the SM. Per pair both warpgroups run S (2 × 36 wgmma m64n64k16), then both score and exponentiate
// (~1,200-1,600 cycles with nothing queued on the tensor cores), then both run P·V: the stages are serial. Every
// reorder of that structure tried so far lost (FlashMLA's order, a staggered pair). Here the roles split instead:
//   seesaw  (mode 0): per pair, WG w: S_w of tile w; the row maxima exchanged; P_w; O_w-half += P_0·V_0 + P_1·V_1.
//   no-smax (mode 3): the seesaw's wgmma and barriers without the scores, softmax and P stores (its bound).
//   wide    (mode 4): WG0 computes the pair's S over both tiles at once (36 wgmma m64n128k16: Q read once per pair,
//                     96 B of operands a tensor cycle instead of 128), rounds all 128 scores, takes the rows' max and
//                     hands tile 1's rounded scores (bf16, 8 KB) and the max to WG1; both exponentiate their tile and
//                     run the seesaw's P·V. WG1 has no S: with the rope it rotates both tiles' k_pe chunks meanwhile,
//                     off the S's critical path (in the seesaw each warpgroup rotates its own, behind its queued S).
//   wide2   (mode 5): wide with Q's rope part in WG0's registers (RS wgmma for chunk 8), P0 in Q's chunk-8 slot and P1
//                     in a region of its own (where WG0 first leaves tile 1's scores), so both tiles' chunks 8 are free
//                     once the S is done and are copied then (kCopy), ahead of the rest.
//   split   (mode 1): WG0 computes every tile's S and softmax; per tile n it issues S(n) and then P(n−1)·V_L(n−1), waits
//                     for S(n) only, scores and exponentiates while that P·V (and WG1's P(n−1)·V_R(n−1)) run on the
//                     tensor cores, rescales O_L once its P·V is done, stores P(n) and hands it (with the rows' rescale
//                     factors) to WG1, which only rescales O_R and runs P(n)·V_R(n). No max exchange: WG0 owns the row
//                     maxima and sums. Registers: WG0 O_L 128 + S 32; WG1 O_R 128 (room for the keys' rope tables).
// Flags (seesaw and wide): kRot, the keys' rotation of chunk 8 (the kernel's rotate_pair over 64 rows, constant
// tables in registers; the kernel's tables come from global memory a pair ahead); kCopy, every chunk reloaded by a
// 1-D bulk copy once its last reader of the pair is done (WG0 chunks 0-3 of both tiles after its P·V; WG1 both
// chunk 8 first, then 4-7, once both P·V are done), from a 456 MB image (each CTA pair its own copy a pair, as the
// kernel's two head groups of a sequence), waited on per chunk before the S reads it (wide2: chunks 8 right after
// the S; 0-3 by WG0 and 4-7 by WG1 after their own P·V, with kOrder 4-7 only after 0-3).
// Outcome (H200, 2026-11-25): docs/NOTES.md, "A wide S over both tiles, probed"; bench/results/2026-11-25-wide-s-probe.
// Modes `softmax` and `early8` (argv[2]; the seesaw only): the softmax's instruction mix (kNoRnd, kNoExp, kPoly,
// kIntRnd) and buffer 1's k_pe chunk reloaded after S1 and rotated during the P·V (kEarly8); outcome in NOTES, "The
// pair's softmax instructions and an early k_pe reload, probed"; bench/results/2026-11-25-softmax-early8-probe.
// Both orders compute the same function on the same data flow (P(n) lands in chunk 8 of tile n's buffer, which S(n+2)
// then reads as keys: synthetic, but the same in all), so their outputs are compared (they differ only by where the
// softmax's running max is taken, i.e. P's bf16 rounding).
// Method: one CTA per SM (132), `tiles` tiles each, clock64 around the loop on thread 0 of every CTA; median over the
// CTAs, in cycles per tile and µs, and the kernel's time by events (median of 7 launches).
// Tiles are stored interleaved by chunk (tile b's chunk c at (2c + b) · 8 KB) so that the wide S's B operand (128 rows)
// spans both tiles with one descriptor; the other orders only address them differently.
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DLATTE_HAVE_SM90A=1 -Isrc bench/probes/pair_order.cu
//        -o pair_order     Run: ./pair_order [tiles=96] [softmax|early8]
#include "../../tests/cuda_test_util.cuh"  // CK

#include "cuda/mla_attention_common.cuh"
#include "cuda/ptx.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

using namespace latte;
using namespace latte::attention_detail;

constexpr int kHeads = 64, kChunks = 9;
constexpr uint32_t kChunkBytes = 64 * 128, kTileBytes = kChunks * kChunkBytes;
constexpr uint32_t kQOff = 0, kKvOff = kTileBytes;  // Q [64][576], then two tiles [64][576], chunk-interleaved
constexpr uint32_t kP1Off = 3 * kTileBytes;          // wide2: P1 (and tile 1's scores before it); wide: the mail
constexpr uint32_t kMailOff = kP1Off;                // wide: tile 1's scores, WG0 → WG1, [16 words][128 threads]
constexpr uint32_t kStatOff = kP1Off + kChunkBytes;  // alpha [2][64], mx [2][64], l [64] (floats)
constexpr uint32_t kBarOff = kStatOff + 5 * 64 * 4;  // 7 mbarriers, then full[buffer][chunk]
constexpr size_t kSmemBytes = kBarOff + 256 + 1024;
static_assert(7 * 8 + 2 * kChunks * 8 <= 256, "mbarriers fit");
// kEarly8 (seesaw): tile 1's P in a region of its own (as the library kernel's P1), so buffer 1's k_pe chunk is free
// once S1 is done: WG1 then reloads it at once (kCopy) and rotates it (kRot) while its P·V run, not behind its next S
constexpr int kEarly8 = 512;
constexpr int kNoRnd = 32, kNoExp = 64, kPoly = 128, kIntRnd = 256;  // the softmax's instruction mix (seesaw): kNoRnd
// scores not rounded, kNoExp no MUFU.EX2 (both timing only: wrong values); kPoly every other exponential by an FMA
// polynomial, kIntRnd the scores' bf16 roundings by integer round-to-nearest-even instead of F2FP (both correct)
constexpr int kRot = 1, kCopy = 2, kOrder = 4, kL2 = 8, kFine = 16;  // flags (kOrder: wide2's chunks 0-3 copied
// before 4-7; kL2: every copy from the image's first copy, L2-resident; kFine: the seesaw's releases as the library
// kernel's: each warpgroup's own tile's chunks once its first P·V is done, and WG1's S reading chunks 4-7 first)
// named barriers (0 is __syncthreads): wide's hand-offs, and each warpgroup's own (seesaw's rotation)
constexpr int kBarRot = 1, kBarHand = 2, kBarPVis = 3, kBarRel = 4, kBarWg = 5;
__host__ __device__ constexpr uint32_t chunk_off(int buf, int c) { return kKvOff + (uint32_t)(2 * c + buf) * kChunkBytes; }
static_assert(kSmemBytes <= 232448, "fits");

__device__ __forceinline__ uint32_t hash32(uint32_t x) {
    x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
    return x;
}

// bf16(x) as a float by integer round-to-nearest-even (finite x and ±inf; NaN not kept): the INT pipe's 3 instructions
// instead of one F2FP, whose pipe the softmax's exponentials' and P's packing share or not (kIntRnd asks)
__device__ __forceinline__ float bf16_round_int(float x) {
    uint32_t u = __float_as_uint(x);
    u += 0x7fffu + ((u >> 16) & 1u);
    return __uint_as_float(u & 0xffff0000u);
}
// 2^x for x <= 0 on the FMA pipe (kPoly): x = j + f, j the nearest integer (the 1.5·2^23 shift), f in [-1/2, 1/2],
// 2^f by its degree-5 Taylor polynomial (relative error <= 2.4e-6, below a bf16 P's half step of 2^-9), j into the
// exponent by an integer add; below 2^-127 it is 0 (as ex2.approx.ftz)
__device__ __forceinline__ float poly_exp2(float x) {
    x = fmaxf(x, -127.f);
    const float t = x + 12582912.f, f = x - (t - 12582912.f);
    float p = fmaf(1.3333558e-3f, f, 9.6181291e-3f);
    p = fmaf(p, f, 5.5504109e-2f);
    p = fmaf(p, f, 2.4022651e-1f);
    p = fmaf(p, f, 6.9314718e-1f);
    p = fmaf(p, f, 1.f);
    return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

// the image the copies reload from: every CTA pair's copy for every pair holds the tiles' initial contents (below)
__global__ void fill_image(uint32_t *img, size_t words_per_copy, size_t copies) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words_per_copy * copies; i += (size_t)gridDim.x * blockDim.x) {
        const uint32_t w = (uint32_t)(kKvOff / 4 + i % words_per_copy);
        const uint32_t h = hash32(w * 2654435761u + 12345u);
        const __nv_bfloat162 v = __floats2bfloat162_rn(((int)(h & 0xffff) - 32768) / 32768.f,
                                                       ((int)(h >> 16) - 32768) / 32768.f);
        img[i] = *reinterpret_cast<const uint32_t *>(&v);
    }
}

// mbarrier wait with its spin loop inside one asm block (ptx::mbarrier_wait's C++ loop, unrolled between the S's wgmma
// here, made ptxas serialize them: C7520)
__device__ __forceinline__ void mbarrier_wait_asm(uint32_t bar, uint32_t parity) {
#if LATTE_PTX_SM90A
    asm volatile(
        "{\n.reg .pred p;\nWAIT_%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra WAIT_%=;\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
#endif
}

// One thread's copy of `bytes` into shared memory at dst on mbarrier `bar` (expect-tx, then the bulk copy), as
// predicated instructions: issued under `if (wtid == 0)`, a branch next to the S's waits, ptxas serialized every wgmma
// (C7520)
__device__ __forceinline__ void bulk_load_if(bool pred, uint32_t dst, const void *src, uint32_t bytes, uint32_t bar,
                                             uint64_t policy) {
#if LATTE_PTX_SM90A
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.u32 p, %5, 0;\n"
        "@p mbarrier.arrive.expect_tx.shared::cta.b64 _, [%3], %2;\n"
        "@p cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n}\n"
        ::"r"(dst), "l"(src), "r"(bytes), "r"(bar), "l"(policy), "r"((uint32_t)pred)
        : "memory");
#endif
}

template <int kMode, int kFlags = 0>
__global__ void __launch_bounds__(256, 1) pair_probe(int tiles, float scale, unsigned long long *cycles, __nv_bfloat16 *out,
                                                     const unsigned char *img) {
#if LATTE_PTX_SM90A
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw_u32 = ptx::smem_u32(smem_raw);
    unsigned char *smem = smem_raw + (((raw_u32 + 1023u) & ~1023u) - raw_u32);
    const uint32_t base = ptx::smem_u32(smem);
    float *alpha_s = reinterpret_cast<float *>(smem + kStatOff);  // [2][64]
    float *mx_s = alpha_s + 128;                                   // [2][64]
    float *l_s = mx_s + 128;                                       // [64]
    const uint32_t bar_ready = base + kBarOff, bar_free0 = bar_ready + 8;  // P(n) ready; P slot s free (2)
    const uint32_t bar_x = bar_free0 + 16, bar_y = bar_x + 8, bar_z = bar_y + 8;  // staggered: m0/P0, m1/P1, P0 free

    // wg through a shuffle: warp-uniform for ptxas, so that branches on it are not divergent paths (with wg = tid / 128,
    // a spin loop of an mbarrier wait between wide's wgmma in WG0's branch made ptxas serialize them: C7520)
    const int tid = threadIdx.x, wg = __shfl_sync(0xffffffffu, tid / 128, 0), wtid = tid % 128, warp = wtid / 32, lane = tid % 32;
    const int g = lane / 4, t4 = lane % 4, r0 = 16 * warp + g, r1 = r0 + 8;
    // data: bf16 in [-1, 1), the same for every CTA (Q and both tiles)
    for (uint32_t i = tid; i < 3 * kTileBytes / 4; i += 256) {
        const uint32_t h = hash32(i * 2654435761u + 12345u);
        const __nv_bfloat162 v = __floats2bfloat162_rn(((int)(h & 0xffff) - 32768) / 32768.f,
                                                       ((int)(h >> 16) - 32768) / 32768.f);
        reinterpret_cast<__nv_bfloat162 *>(smem)[i] = v;
    }
    if (tid == 0) {
        ptx::mbarrier_init(bar_ready, 128);
        ptx::mbarrier_init(bar_free0, 128);
        ptx::mbarrier_init(bar_free0 + 8, 128);
        ptx::mbarrier_init(bar_x, 128);
        ptx::mbarrier_init(bar_y, 128);
        ptx::mbarrier_init(bar_z, 128);
        ptx::mbarrier_init(bar_z + 8, 128);
        for (int i = 0; i < 2 * kChunks; ++i) ptx::mbarrier_init(bar_ready + 56 + 8 * i, 1);  // full[chunk][buffer]
        ptx::fence_mbarrier_init();
    }
    ptx::fence_proxy_async_smem();
    __syncthreads();

    const uint64_t q_desc = ptx::wgmma_desc_sw128(base + kQOff, 16, 1024);
    constexpr uint32_t kChunkStep = (2 * kChunkBytes) >> 4;  // a tile's next chunk, in descriptor units
    const auto k_desc = [&](int buf) { return ptx::wgmma_desc_sw128(base + chunk_off(buf, 0), 16, 1024); };
    const auto p_desc = [&](int buf) {  // P of the tile in `buf`: its chunk 8
        return ptx::wgmma_desc_sw128(base + chunk_off(buf, 8), 16, 1024);
    };
    const auto v_desc = [&](int buf, int half) {  // latent columns [256 half, +256) of the tile in `buf`
        return ptx::wgmma_desc_sw128(base + chunk_off(buf, 4 * half), 2 * kChunkBytes, 1024);
    };
    const int npairs = tiles / 2;
    const auto full_bar = [&](int buf, int c) { return bar_ready + 56 + 8 * (2 * c + buf); };
    // kCopy: chunk c of `buf` for pair q, from this CTA pair's copy q of the image
    const uint64_t evict_first = ptx::l2_policy_evict_first();
    const auto reload = [&](int buf, int c, int q) {  // by the warpgroup's thread 0
        const size_t copy = (kFlags & kL2) ? 0 : (size_t)(blockIdx.x / 2) * npairs + q;
        const unsigned char *src = img + copy * (2 * kTileBytes) + (2 * c + buf) * kChunkBytes;
        bulk_load_if(wtid == 0, base + chunk_off(buf, c), src, kChunkBytes, full_bar(buf, c), evict_first);
    };
    // kCopy: the releases of `pair`'s chunks once this warpgroup's P·V of it are done (WG0: chunks 0-3, which only its
    // P·V reads; WG1: once WG0's are done too, both chunks 8 (P, read by both) first, then 4-7)
    const auto release = [&](int pair, int role) {  // role: wg (a constant where the caller's branch knows it)
        if (pair + 1 >= npairs) return;
        if (role == 0) {
#pragma unroll
            for (int c = 0; c < 4; ++c) reload(0, c, pair + 1), reload(1, c, pair + 1);
            ptx::named_bar_arrive(kBarRel, 256);
        } else {
            ptx::named_bar_sync(kBarRel, 256);
            reload(0, 8, pair + 1), reload(1, 8, pair + 1);
#pragma unroll
            for (int c = 4; c < 8; ++c) reload(0, c, pair + 1), reload(1, c, pair + 1);
        }
    };
    // kRot: the keys' rotation of chunk 8 of `buf` by one warpgroup as the kernel does it (rows wtid/4 and +32, unit
    // pair (u, u + 4): rope dims i and i + 32), with this thread's tables
    const int pe_row = wtid / 4, pe_u = wtid % 4;
    const auto make_tables = [&](uint4 (&tab)[2][4]) {
#pragma unroll
        for (int k = 0; k < 2; ++k)
        {
                uint32_t cs[2][4], sn[2][4];
#pragma unroll
                for (int hi = 0; hi < 2; ++hi)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const float th = hash32((uint32_t)((pe_row + 32 * k) * 64 + 32 * hi + 8 * pe_u + 2 * e) + 777u) * 1.4629e-9f;
                        const __nv_bfloat162 c2 = __floats2bfloat162_rn(__cosf(th), __cosf(th)), s2 = __floats2bfloat162_rn(__sinf(th), __sinf(th));
                        cs[hi][e] = *reinterpret_cast<const uint32_t *>(&c2), sn[hi][e] = *reinterpret_cast<const uint32_t *>(&s2);
                    }
                tab[k][0] = make_uint4(cs[0][0], cs[0][1], cs[0][2], cs[0][3]);
                tab[k][1] = make_uint4(cs[1][0], cs[1][1], cs[1][2], cs[1][3]);
                tab[k][2] = make_uint4(sn[0][0], sn[0][1], sn[0][2], sn[0][3]);
                tab[k][3] = make_uint4(sn[1][0], sn[1][1], sn[1][2], sn[1][3]);
            }
    };
    const auto rotate_chunk = [&](int buf, const uint4 (&tab)[2][4]) {
        unsigned char *chunk = smem + chunk_off(buf, 8);
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int row = pe_row + 32 * k;
            uint4 *lo_ptr = reinterpret_cast<uint4 *>(chunk + row * 128 + ((pe_u ^ (row & 7)) << 4));
            uint4 *hi_ptr = reinterpret_cast<uint4 *>(chunk + row * 128 + (((pe_u + 4) ^ (row & 7)) << 4));
            uint4 x_lo = *lo_ptr, x_hi = *hi_ptr;
            rotate_pair(x_lo.x, x_hi.x, tab[k][0].x, tab[k][1].x, tab[k][2].x, tab[k][3].x);
            rotate_pair(x_lo.y, x_hi.y, tab[k][0].y, tab[k][1].y, tab[k][2].y, tab[k][3].y);
            rotate_pair(x_lo.z, x_hi.z, tab[k][0].z, tab[k][1].z, tab[k][2].z, tab[k][3].z);
            rotate_pair(x_lo.w, x_hi.w, tab[k][0].w, tab[k][1].w, tab[k][2].w, tab[k][3].w);
            *lo_ptr = x_lo;
            *hi_ptr = x_hi;
        }
    };
    // the wide orders' WG1 (kRot): both tiles' chunks 8 rotated, with kCopy once landed
    const auto rotate_both = [&](int pair, const uint4 (&tab)[2][4]) {
        if (kFlags & kCopy) {
            mbarrier_wait_asm(full_bar(0, 8), (pair + 1) & 1);
            mbarrier_wait_asm(full_bar(1, 8), (pair + 1) & 1);
        }
        rotate_chunk(0, tab);
        rotate_chunk(1, tab);
        ptx::fence_proxy_async_smem();
    };
    float s[32], o[128];
#pragma unroll
    for (int i = 0; i < 32; ++i) s[i] = 0.f;
#pragma unroll
    for (int i = 0; i < 128; ++i) o[i] = 0.f;
    float M0 = -INFINITY, M1 = -INFINITY, l0 = 0.f, l1 = 0.f;  // rows r0, r1: running max (natural units), sum

    // S = Q·K_bufᵀ; the first wgmma with scale-d = 0 (no zeroing moves into s: C7515 where a P·V is pending)
    const auto issue_s_into = [&](float (&d)[32], int buf) {
        ptx::wgmma_fence();
        const uint64_t kd0 = k_desc(buf);
#pragma unroll
        for (int c = 0; c < kChunks; ++c)
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
                ptx::wgmma_m64n64k16_ss(d, q_desc + (uint64_t)(c * (kChunkBytes >> 4)) + 2 * kk,
                                        kd0 + (uint64_t)(c * kChunkStep) + 2 * kk, c + kk > 0);
        ptx::wgmma_commit();
    };
    const auto issue_s = [&](int buf) { issue_s_into(s, buf); };
    // O_half += P · V_half(buf), P at smem offset p_off (default: chunk 8 of buf)
    const auto issue_pv = [&](int buf, int half, uint32_t p_off = 0) {
        ptx::wgmma_fence();
        const uint64_t a = p_off ? ptx::wgmma_desc_sw128(base + p_off, 16, 1024) : p_desc(buf), b = v_desc(buf, half);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) ptx::wgmma_m64n256k16_ss_tb(o, a + 2 * kk, b + (uint64_t)(kk * (2048 >> 4)));
        ptx::wgmma_commit();
    };
    const auto scores_from_to = [&](const float (&acc)[32], float (&sc)[32], float &mx0, float &mx1) {
#pragma unroll
        for (int i = 0; i < 32; ++i)
            sc[i] = (kFlags & kNoRnd)    ? acc[i] * scale
                    : (kFlags & kIntRnd) ? bf16_round_int(bf16_round_int(acc[i]) * scale)
                                         : score_fast(acc[i], scale);
        mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < 8; ++j) mx0 = fmaxf(mx0, fmaxf(sc[4 * j], sc[4 * j + 1])), mx1 = fmaxf(mx1, fmaxf(sc[4 * j + 2], sc[4 * j + 3]));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    };
    const auto scores_max = [&](float &mx0, float &mx1) { scores_from_to(s, s, mx0, mx1); };
    // the wide orders' WG0: both tiles' 64 scores rounded in place, the rows' max over both
    const auto scores64_max = [&](float (&sw)[64], float &mx0, float &mx1) {
#pragma unroll
        for (int i = 0; i < 64; ++i) sw[i] = score_fast(sw[i], scale);
        mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < 16; ++j) mx0 = fmaxf(mx0, fmaxf(sw[4 * j], sw[4 * j + 1])), mx1 = fmaxf(mx1, fmaxf(sw[4 * j + 2], sw[4 * j + 3]));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    };
    // P = e^(s − m) rounded to bf16 into chunk 8 of `buf` (A-operand layout of the P·V); returns the rows' fp32 sums
    const auto exp_store_from = [&](const float (&sc)[32], int buf, float m0, float m1, float &sum0, float &sum1,
                                    uint32_t p_off = 0) {
        unsigned char *p_tile = smem + (p_off ? p_off : chunk_off(buf, 8));
        const float sub0 = m0 * kLog2e, sub1 = m1 * kLog2e;
        sum0 = 0.f, sum1 = 0.f;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const auto ex = [](float x, bool odd) {
                return (kFlags & kNoExp) ? x : ((kFlags & kPoly) && odd) ? poly_exp2(x) : fast_exp2(x);
            };
            const float e0 = ex(fmaf(sc[4 * j], kLog2e, -sub0), false), e1 = ex(fmaf(sc[4 * j + 1], kLog2e, -sub0), true);
            const float e2 = ex(fmaf(sc[4 * j + 2], kLog2e, -sub1), false), e3 = ex(fmaf(sc[4 * j + 3], kLog2e, -sub1), true);
            sum0 += e0 + e1, sum1 += e2 + e3;
            *reinterpret_cast<__nv_bfloat162 *>(p_tile + r0 * 128 + ((j ^ (r0 & 7)) << 4) + 4 * t4) = __floats2bfloat162_rn(e0, e1);
            *reinterpret_cast<__nv_bfloat162 *>(p_tile + r1 * 128 + ((j ^ (r1 & 7)) << 4) + 4 * t4) = __floats2bfloat162_rn(e2, e3);
        }
    };
    const auto exp_store = [&](int buf, float m0, float m1, float &sum0, float &sum1) { exp_store_from(s, buf, m0, m1, sum0, sum1); };
    const auto scale_o = [&](float a0, float a1) {
#pragma unroll
        for (int j = 0; j < 32; ++j) o[4 * j] *= a0, o[4 * j + 1] *= a0, o[4 * j + 2] *= a1, o[4 * j + 3] *= a1;
    };
    // e^(from − to); 0 while `from` is −inf. Branch-free (ex2 of −inf is 0): a branch around the ex2 is a divergent
    // path to ptxas, next to which it inserted a warpgroup.arrive and then serialized the wgmma (C7520)
    const auto rescale_bf = [](float from, float to) { return fast_exp2(from == -INFINITY ? -INFINITY : (from - to) * kLog2e); };
    const auto rescale = [](float from, float to) { return from == -INFINITY ? 0.f : fast_exp2((from - to) * kLog2e); };

    __syncthreads();
    const long long t_start = clock64();
    if (kMode == 3) {
        // the seesaw's tensor work and barriers alone (no scores, softmax or P stores: P·V reads whatever is there;
        // the output is not compared): what any order of the same wgmma could reach without the softmax
#pragma unroll 1
        for (int pair = 0; pair < tiles / 2; ++pair) {
            issue_s(wg);
            ptx::wgmma_wait<0>();
            __syncthreads();
            __syncthreads();
            issue_pv(wg, wg);
            issue_pv(wg ^ 1, wg);
            ptx::wgmma_wait<0>();
        }
        if (wg == 0) l_s[r0] = 1.f + s[0] * 0.f, l_s[r1] = 1.f;
        __syncthreads();
    } else if (kMode == 0) {
        // seesaw: tile 2i in buffer 0 (WG0's S), 2i+1 in buffer 1 (WG1's S); both P·V per warpgroup per pair
        uint4 tab[2][4];
        if (kFlags & kRot) make_tables(tab);
        constexpr bool early8 = (kFlags & kEarly8) != 0;
        const uint32_t my_p_off = early8 && wg == 1 ? kP1Off : 0;  // where this warpgroup's P goes
        if (early8 && (kFlags & kRot) && wg == 1) {  // pair 0's tile 1: rotated before the loop, as a previous pair would
            rotate_chunk(1, tab);
            ptx::fence_proxy_async_smem();
            ptx::named_bar_sync(kBarWg + 1, 128);
        }
        for (int pair = 0; pair < npairs; ++pair) {
            if (kFlags & (kRot | kCopy)) {
                // as the kernel: each chunk waited for; the own tile's chunk 8 rotated behind the 32 queued wgmma
                // (as there, S zeroed and the chunk loop not unrolled: with the waits' spin loops unrolled between
                // the wgmma, ptxas serialized them, C7520)
#pragma unroll
                for (int i = 0; i < 32; ++i) s[i] = 0.f;
                ptx::wgmma_fence();
                const uint64_t kd0 = k_desc(wg);
#pragma unroll 1
                for (int i = 0; i < kChunks; ++i) {
                    const int c = (kFlags & kFine) && wg == 1 && i < 8 ? (i + 4) % 8 : i;
                    // (early8: WG1's chunk 8 was waited for and rotated in the previous pair)
                    if ((kFlags & kCopy) && !(early8 && wg == 1 && c == 8))
                        mbarrier_wait_asm(full_bar(wg, c), (pair + 1) & 1);  // pair 0: parity 1 of a new barrier, passes
                    if (c == 8 && (kFlags & kRot) && !(early8 && wg == 1)) {
                        rotate_chunk(wg, tab);
                        ptx::fence_proxy_async_smem();
                        ptx::named_bar_sync(kBarWg + wg, 128);
                    }
#pragma unroll
                    for (int kk = 0; kk < 4; ++kk)
                        ptx::wgmma_m64n64k16_ss(s, q_desc + (uint64_t)(c * (kChunkBytes >> 4)) + 2 * kk,
                                                kd0 + (uint64_t)(c * kChunkStep) + 2 * kk);
                }
                ptx::wgmma_commit();
            } else {
                issue_s(wg);
            }
            ptx::wgmma_wait<0>();
            if (early8 && (kFlags & kCopy) && wg == 1 && pair + 1 < npairs) reload(1, 8, pair + 1);  // read by S1: free
            float mx0, mx1;
            scores_max(mx0, mx1);
            mx_s[wg * 64 + r0] = mx0, mx_s[wg * 64 + r1] = mx1;
            __syncthreads();  // the maxima exchanged (and the previous pair's P·V of both warpgroups done)
            const float m0 = fmaxf(M0, fmaxf(mx_s[r0], mx_s[64 + r0])), m1 = fmaxf(M1, fmaxf(mx_s[r1], mx_s[64 + r1]));
            const float a0 = rescale(M0, m0), a1 = rescale(M1, m1);
            M0 = m0, M1 = m1;
            scale_o(a0, a1);
            float sum0, sum1;
            exp_store_from(s, wg, m0, m1, sum0, sum1, my_p_off);
            l0 = l0 * a0 + sum0, l1 = l1 * a1 + sum1;
            ptx::fence_proxy_async_smem();
            __syncthreads();  // both P visible; the maxima read
            issue_pv(wg, wg, early8 && wg == 1 ? kP1Off : 0);
            issue_pv(wg ^ 1, wg, early8 && wg == 0 ? kP1Off : 0);
            if (early8 && wg == 1 && pair + 1 < npairs) {  // the next tile 1's k_pe chunk, while the P·V run
                if (kFlags & kCopy) mbarrier_wait_asm(full_bar(1, 8), pair & 1);  // pair + 1's phase
                if (kFlags & kRot) {
                    rotate_chunk(1, tab);
                    ptx::fence_proxy_async_smem();
                    ptx::named_bar_sync(kBarWg + 1, 128);
                }
            }
            if ((kFlags & kFine) && pair + 1 < npairs) {
                // the own tile's P·V done first: its half of that buffer (WG0 chunks 0-3 of buffer 0, WG1 4-7 of 1)
                ptx::wgmma_wait<1>();
#pragma unroll
                for (int c = 0; c < 4; ++c) reload(wg, 4 * wg + c, pair + 1);
                ptx::wgmma_wait<0>();
#pragma unroll
                for (int c = 0; c < 4; ++c) reload(wg ^ 1, 4 * wg + c, pair + 1);
                if (wg == 0) {
                    ptx::named_bar_arrive(kBarRel, 256);
                } else {  // the chunks 8 (P) once both warpgroups' P·V are done
                    ptx::named_bar_sync(kBarRel, 256);
                    reload(0, 8, pair + 1);
                    if (!early8) reload(1, 8, pair + 1);
                }
            }
            ptx::wgmma_wait<0>();
            if ((kFlags & kCopy) && !(kFlags & kFine)) release(pair, wg);
            else if ((kFlags & kRot) && !(kFlags & kCopy)) __syncthreads();  // the other P·V done with P before this chunk 8 is rotated
        }
        // the row sums: each warpgroup summed its own tiles' P
        if (t4 == 0 && wg == 1) l_s[r0] = l0, l_s[r1] = l1;
        __syncthreads();
        if (wg == 0 && t4 == 0) l_s[r0] += l0, l_s[r1] += l1;
        __syncthreads();
    } else if (kMode == 4) {
        // wide: WG0 the pair's S over both tiles (B = 128 rows: tile 0's chunk c and tile 1's, 8 KB apart), all
        // scores and the rows' max; WG1 tile 1's softmax from WG0's rounded scores (and with kRot both rotations).
        uint32_t *mail = reinterpret_cast<uint32_t *>(smem + kMailOff);
        if (wg == 0) {
            float sw[64];
            for (int pair = 0; pair < npairs; ++pair) {
                ptx::wgmma_fence();
                const uint64_t kw = k_desc(0);
                const auto chunk_wgmma = [&](int c) {
#pragma unroll
                    for (int kk = 0; kk < 4; ++kk)
                        ptx::wgmma_m64n128k16_ss(sw, q_desc + (uint64_t)(c * (kChunkBytes >> 4)) + 2 * kk,
                                                 kw + (uint64_t)(c * kChunkStep) + 2 * kk, c + kk > 0);
                };
#pragma unroll
                for (int c = 0; c < 8; ++c) {
                    if (kFlags & kCopy) {  // pair 0: parity 1 of a new barrier, passes
                        mbarrier_wait_asm(full_bar(0, c), (pair + 1) & 1);
                        mbarrier_wait_asm(full_bar(1, c), (pair + 1) & 1);
                    }
                    chunk_wgmma(c);
                }
                // chunk 8: WG1's P·V of the last pair done (P1 read; P0 may be written after this S), with kRot both
                // chunks 8 rotated (WG1 waited for their copies)
                ptx::named_bar_sync(kBarRot, 256);
                if ((kFlags & kCopy) && !(kFlags & kRot)) {
                    mbarrier_wait_asm(full_bar(0, 8), (pair + 1) & 1);
                    mbarrier_wait_asm(full_bar(1, 8), (pair + 1) & 1);
                }
                chunk_wgmma(8);
                ptx::wgmma_commit();
                ptx::wgmma_wait<0>();
                // sw[0..31]: tile 0 (columns 8j + 2t4, j < 8), sw[32..63]: tile 1
                float mx0, mx1;
                scores64_max(sw, mx0, mx1);
                const float m0 = fmaxf(M0, mx0), m1 = fmaxf(M1, mx1);
                const float a0 = rescale_bf(M0, m0), a1 = rescale_bf(M1, m1);
                M0 = m0, M1 = m1;
                // tile 1's scores (bf16 values: exact as bf16x2) and the max, to WG1
#pragma unroll
                for (int i = 0; i < 16; ++i) {
                    const __nv_bfloat162 v = __floats2bfloat162_rn(sw[32 + 2 * i], sw[33 + 2 * i]);
                    mail[i * 128 + wtid] = *reinterpret_cast<const uint32_t *>(&v);
                }
                mx_s[r0] = m0, mx_s[r1] = m1;
                ptx::named_bar_arrive(kBarHand, 256);
                scale_o(a0, a1);
                float sum0, sum1;
                exp_store_from(*reinterpret_cast<const float(*)[32]>(sw), 0, m0, m1, sum0, sum1);
                l0 = l0 * a0 + sum0, l1 = l1 * a1 + sum1;
                ptx::fence_proxy_async_smem();
                ptx::named_bar_sync(kBarPVis, 256);  // both P visible
                issue_pv(0, 0);
                issue_pv(1, 0);
                if ((kFlags & kFine) && pair + 1 < npairs) {  // tile 0's chunks 0-3 once P0·V0_L is done, then tile 1's
                    ptx::wgmma_wait<1>();
#pragma unroll
                    for (int c = 0; c < 4; ++c) reload(0, c, pair + 1);
                    ptx::wgmma_wait<0>();
#pragma unroll
                    for (int c = 0; c < 4; ++c) reload(1, c, pair + 1);
                    ptx::named_bar_arrive(kBarRel, 256);
                }
                ptx::wgmma_wait<0>();
                if ((kFlags & kCopy) && !(kFlags & kFine)) release(pair, 0);
                else if ((kFlags & kRot) && !(kFlags & kCopy) && pair + 1 < npairs) ptx::named_bar_arrive(kBarRel, 256);  // WG1 may rotate
            }
        } else {
            uint4 tab[2][4];
            if (kFlags & kRot) make_tables(tab);
            for (int pair = 0; pair < npairs; ++pair) {
                if (kFlags & kRot) {
                    rotate_both(pair, tab);
                }
                ptx::named_bar_arrive(kBarRot, 256);
                ptx::named_bar_sync(kBarHand, 256);
                float sc[32];
#pragma unroll
                for (int i = 0; i < 16; ++i) {
                    const uint32_t w = mail[i * 128 + wtid];
                    sc[2 * i] = __uint_as_float(w << 16), sc[2 * i + 1] = __uint_as_float(w & 0xffff0000u);
                }
                const float m0 = mx_s[r0], m1 = mx_s[r1];
                const float a0 = rescale_bf(M0, m0), a1 = rescale_bf(M1, m1);
                M0 = m0, M1 = m1;
                scale_o(a0, a1);
                float sum0, sum1;
                exp_store_from(sc, 1, m0, m1, sum0, sum1);
                l0 = l0 * a0 + sum0, l1 = l1 * a1 + sum1;
                ptx::fence_proxy_async_smem();
                ptx::named_bar_sync(kBarPVis, 256);
                if (kFlags & kFine) {  // its own tile's P·V first: tile 1's chunks 4-7, then tile 0's, then both chunks 8
                    issue_pv(1, 1);
                    issue_pv(0, 1);
                    if (pair + 1 < npairs) {
                        ptx::wgmma_wait<1>();
#pragma unroll
                        for (int c = 4; c < 8; ++c) reload(1, c, pair + 1);
                        ptx::wgmma_wait<0>();
#pragma unroll
                        for (int c = 4; c < 8; ++c) reload(0, c, pair + 1);
                        ptx::named_bar_sync(kBarRel, 256);
                        reload(0, 8, pair + 1), reload(1, 8, pair + 1);
                    }
                } else {
                    issue_pv(0, 1);
                    issue_pv(1, 1);
                }
                ptx::wgmma_wait<0>();
                if ((kFlags & kCopy) && !(kFlags & kFine)) release(pair, 1);
                else if ((kFlags & kRot) && !(kFlags & kCopy) && pair + 1 < npairs) ptx::named_bar_sync(kBarRel, 256);  // WG0's P·V done
            }
        }
        if (t4 == 0 && wg == 1) l_s[r0] = l0, l_s[r1] = l1;
        __syncthreads();
        if (wg == 0 && t4 == 0) l_s[r0] += l0, l_s[r1] += l1;
        __syncthreads();
    } else if (kMode == 5) {
        // wide2: wide with Q's rope part in registers (RS wgmma for chunk 8), P0 in Q's chunk-8 slot and P1 in its own
        // region, so both tiles' chunks 8 are free once the S is done: with kCopy WG0 releases them right then, they
        // land during the softmax and P·V, and WG1 rotates them at the next pair's start while WG0 queues chunks 0-7.
        // Chunks 0-3 are read by WG0's P·V only, 4-7 by WG1's: each releases its own, no hand-off.
        // Its softmax and P·V repeat wide's in place on purpose: in a lambda shared by both orders (P's offsets chosen
        // at run time) the same operations ran 1-5% slower (bench/results/2026-11-25-wide-s-probe, call 6); the
        // scores' rounding and the rotation are shared (scores64_max, rotate_both: every row unchanged, call 11).
        constexpr uint32_t kP0Off = kQOff + 8 * kChunkBytes;
        if (wg == 0) {
            uint32_t qpe[4][4];  // Q's chunk 8 as RS A fragments: k-step kk, rows r0 / r1, dims 16kk + 2t4 (+8)
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                const unsigned char *qc = smem + kP0Off;
                qpe[kk][0] = *reinterpret_cast<const uint32_t *>(qc + r0 * 128 + (((2 * kk) ^ (r0 & 7)) << 4) + 4 * t4);
                qpe[kk][1] = *reinterpret_cast<const uint32_t *>(qc + r1 * 128 + (((2 * kk) ^ (r1 & 7)) << 4) + 4 * t4);
                qpe[kk][2] = *reinterpret_cast<const uint32_t *>(qc + r0 * 128 + (((2 * kk + 1) ^ (r0 & 7)) << 4) + 4 * t4);
                qpe[kk][3] = *reinterpret_cast<const uint32_t *>(qc + r1 * 128 + (((2 * kk + 1) ^ (r1 & 7)) << 4) + 4 * t4);
            }
            __syncwarp();
            ptx::named_bar_sync(kBarWg, 128);  // every Q fragment read before P0 overwrites the slot
            float sw[64];
            for (int pair = 0; pair < npairs; ++pair) {
                ptx::wgmma_fence();
                const uint64_t kw = k_desc(0);
#pragma unroll
                for (int c = 0; c < 8; ++c) {
                    if (kFlags & kCopy) {  // pair 0: parity 1 of a new barrier, passes
                        mbarrier_wait_asm(full_bar(0, c), (pair + 1) & 1);
                        mbarrier_wait_asm(full_bar(1, c), (pair + 1) & 1);
                    }
#pragma unroll
                    for (int kk = 0; kk < 4; ++kk)
                        ptx::wgmma_m64n128k16_ss(sw, q_desc + (uint64_t)(c * (kChunkBytes >> 4)) + 2 * kk,
                                                 kw + (uint64_t)(c * kChunkStep) + 2 * kk, c + kk > 0);
                }
                // chunk 8: WG1's P·V of the last pair done (P0's and P1's slots free), with kRot both chunks rotated
                ptx::named_bar_sync(kBarRot, 256);
                if ((kFlags & kCopy) && !(kFlags & kRot)) {
                    mbarrier_wait_asm(full_bar(0, 8), (pair + 1) & 1);
                    mbarrier_wait_asm(full_bar(1, 8), (pair + 1) & 1);
                }
#pragma unroll
                for (int kk = 0; kk < 4; ++kk) ptx::wgmma_m64n128k16_rs(sw, qpe[kk], kw + (uint64_t)(8 * kChunkStep) + 2 * kk);
                ptx::wgmma_commit();
                ptx::wgmma_wait<0>();
                if ((kFlags & kCopy) && pair + 1 < npairs) reload(0, 8, pair + 1), reload(1, 8, pair + 1);
                float mx0, mx1;
                scores64_max(sw, mx0, mx1);
                const float m0 = fmaxf(M0, mx0), m1 = fmaxf(M1, mx1);
                const float a0 = rescale_bf(M0, m0), a1 = rescale_bf(M1, m1);
                M0 = m0, M1 = m1;
                // tile 1's rounded scores (bf16) where WG1 writes P1 over them: the same fragment positions
                unsigned char *p1 = smem + kP1Off;
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    *reinterpret_cast<__nv_bfloat162 *>(p1 + r0 * 128 + ((j ^ (r0 & 7)) << 4) + 4 * t4) = __floats2bfloat162_rn(sw[32 + 4 * j], sw[33 + 4 * j]);
                    *reinterpret_cast<__nv_bfloat162 *>(p1 + r1 * 128 + ((j ^ (r1 & 7)) << 4) + 4 * t4) = __floats2bfloat162_rn(sw[34 + 4 * j], sw[35 + 4 * j]);
                }
                mx_s[r0] = m0, mx_s[r1] = m1;
                ptx::named_bar_arrive(kBarHand, 256);
                scale_o(a0, a1);
                float sum0, sum1;
                exp_store_from(*reinterpret_cast<const float(*)[32]>(sw), 0, m0, m1, sum0, sum1, kP0Off);
                l0 = l0 * a0 + sum0, l1 = l1 * a1 + sum1;
                ptx::fence_proxy_async_smem();
                ptx::named_bar_sync(kBarPVis, 256);  // both P visible
                issue_pv(0, 0, kP0Off);
                issue_pv(1, 0, kP1Off);
                ptx::wgmma_wait<0>();
                if ((kFlags & kCopy) && pair + 1 < npairs) {
#pragma unroll
                    for (int c = 0; c < 4; ++c) reload(0, c, pair + 1), reload(1, c, pair + 1);
                    if (kFlags & kOrder) ptx::named_bar_arrive(kBarRel, 256);
                }
            }
        } else {
            uint4 tab[2][4];
            if (kFlags & kRot) make_tables(tab);
            for (int pair = 0; pair < npairs; ++pair) {
                if (kFlags & kRot) {
                    rotate_both(pair, tab);  // wide2: both chunks 8 landed during the last softmax and P·V
                }
                ptx::named_bar_arrive(kBarRot, 256);
                ptx::named_bar_sync(kBarHand, 256);
                unsigned char *p1 = smem + kP1Off;
                float sc[32];
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    const uint32_t w0 = *reinterpret_cast<const uint32_t *>(p1 + r0 * 128 + ((j ^ (r0 & 7)) << 4) + 4 * t4);
                    const uint32_t w1 = *reinterpret_cast<const uint32_t *>(p1 + r1 * 128 + ((j ^ (r1 & 7)) << 4) + 4 * t4);
                    sc[4 * j] = __uint_as_float(w0 << 16), sc[4 * j + 1] = __uint_as_float(w0 & 0xffff0000u);
                    sc[4 * j + 2] = __uint_as_float(w1 << 16), sc[4 * j + 3] = __uint_as_float(w1 & 0xffff0000u);
                }
                const float m0 = mx_s[r0], m1 = mx_s[r1];
                const float a0 = rescale_bf(M0, m0), a1 = rescale_bf(M1, m1);
                M0 = m0, M1 = m1;
                scale_o(a0, a1);
                float sum0, sum1;
                exp_store_from(sc, 1, m0, m1, sum0, sum1, kP1Off);
                l0 = l0 * a0 + sum0, l1 = l1 * a1 + sum1;
                ptx::fence_proxy_async_smem();
                ptx::named_bar_sync(kBarPVis, 256);
                issue_pv(0, 1, kP0Off);
                issue_pv(1, 1, kP1Off);
                ptx::wgmma_wait<0>();
                if ((kFlags & kCopy) && pair + 1 < npairs) {
                    if (kFlags & kOrder) ptx::named_bar_sync(kBarRel, 256);  // after WG0's chunks 0-3, which the S reads first
#pragma unroll
                    for (int c = 4; c < 8; ++c) reload(0, c, pair + 1), reload(1, c, pair + 1);
                }
            }
        }
        if (t4 == 0 && wg == 1) l_s[r0] = l0, l_s[r1] = l1;
        __syncthreads();
        if (wg == 0 && t4 == 0) l_s[r0] += l0, l_s[r1] += l1;
        __syncthreads();
    } else if (kMode == 2) {
        // staggered (FlashMLA's order): WG0 exponentiates S0 against m0 = max(M, its rows' max) without waiting for
        // S1 and runs P0·V0_L at once; WG1 takes n = max(m0, its max), runs P0·V0_R, publishes P1 (against n); each
        // rescales its O half by e^(m0 − n) before P1·V_half, and issues its next S right behind that P·V.
        // One code path for both warpgroups, the roles in operands only: a wgmma or a barrier under `wg == 0` is a
        // divergent path to ptxas, which then serialized every wgmma (C7520). l0, l1: this warpgroup's own P sums.
        const uint32_t bar_dummy = bar_z + 8;  // arrivals nobody waits for
        ptx::mbarrier_arrive(wg == 0 ? bar_dummy : bar_z);  // WG1: P0's slot free before the first pair
        for (int pair = 0; pair < tiles / 2; ++pair) {
            const int par = pair & 1;
            // S_w right behind the last pair's P1·V_half (issued at the loop's top, not its end: an S pending across
            // the back edge made ptxas serialize the wgmma, C7515)
            float acc[32], sc[32];  // S's accumulators, new each pair; the scores apart
            // the last pair's P1·V1_half, then S_w right behind it: both issued here, at the loop's top, so that nothing
            // is pending across the back edge (ptxas serialized every wgmma otherwise, C7515). The first pair's is
            // garbage (P1's slot holds the initial data), wiped by O's rescale by e^(−inf) = 0 below.
            issue_pv(1, wg);
            issue_s_into(acc, wg);
            ptx::wgmma_wait<0>();  // S_w (and the last P1·V_half) done
            float mx0, mx1;
            scores_from_to(acc, sc, mx0, mx1);
            // WG0: P0's slot free (WG1's P0·V0_R of the last pair; pre-arrived once); WG1: m0 and P0 published
            ptx::mbarrier_wait(wg == 0 ? bar_z : bar_x, par);
            const float m0 = wg == 0 ? fmaxf(M0, mx0) : mx_s[par * 64 + r0];
            const float m1 = wg == 0 ? fmaxf(M1, mx1) : mx_s[par * 64 + r1];
            const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);  // WG0: = m0 (its own max is in it)
            float sum0, sum1;
            exp_store_from(sc, wg, n0, n1, sum0, sum1);  // P_w against its max
            (wg == 0 ? mx_s : alpha_s)[par * 64 + r0] = n0, (wg == 0 ? mx_s : alpha_s)[par * 64 + r1] = n1;
            ptx::fence_proxy_async_smem();
            ptx::mbarrier_arrive(wg == 0 ? bar_x : bar_y);
            const float a0 = rescale_bf(M0, m0), a1 = rescale_bf(M1, m1);
            scale_o(a0, a1);
            l0 = l0 * a0 + (wg == 0 ? sum0 : 0.f), l1 = l1 * a1 + (wg == 0 ? sum1 : 0.f);
            issue_pv(0, wg);         // P0·V0_half
            ptx::wgmma_wait<0>();
            ptx::mbarrier_arrive(wg == 0 ? bar_dummy : bar_z);  // WG1: P0 free
            ptx::mbarrier_wait(wg == 0 ? bar_y : bar_x, par);    // WG0: n and P1 (WG1: done already)
            const float f0 = wg == 0 ? alpha_s[par * 64 + r0] : n0, f1 = wg == 0 ? alpha_s[par * 64 + r1] : n1;
            const float b0 = rescale_bf(m0, f0), b1 = rescale_bf(m1, f1);
            scale_o(b0, b1);
            l0 = l0 * b0 + (wg == 1 ? sum0 : 0.f), l1 = l1 * b1 + (wg == 1 ? sum1 : 0.f);
            M0 = f0, M1 = f1;
        }
        issue_pv(1, wg);  // the last pair's P1·V1_half
        ptx::wgmma_wait<0>();
        if (wg == 1) l_s[r0] = l0, l_s[r1] = l1;
        __syncthreads();
        if (wg == 0) l_s[r0] += l0, l_s[r1] += l1;
        __syncthreads();
    } else {
        if (wg == 0) {
            // after S(n) is complete: scores, the rows' new max and factors, P(n) to WG1, O_L rescaled once
            // P(n−1)·V_L(n−1) is done
            const auto softmax_tile = [&](int n) {
                const int buf = n & 1;
                float mx0, mx1;
                scores_max(mx0, mx1);
                const float m0 = fmaxf(M0, mx0), m1 = fmaxf(M1, mx1);
                const float a0 = rescale(M0, m0), a1 = rescale(M1, m1);
                M0 = m0, M1 = m1;
                if (n >= 2) ptx::mbarrier_wait(bar_free0 + 8 * buf, ((n >> 1) - 1) & 1);  // WG1's P(n−2)·V_R done
                // every lane of the quad writes its rows' factors (the same value): a store under t4 == 0 is a
                // divergent path, where ptxas put a warpgroup.arrive and then serialized every wgmma (C7520)
                alpha_s[buf * 64 + r0] = a0, alpha_s[buf * 64 + r1] = a1;
                float sum0, sum1;
                exp_store(buf, m0, m1, sum0, sum1);  // S(n) has read chunk 8, P(n−2) in it is done with
                l0 = l0 * a0 + sum0, l1 = l1 * a1 + sum1;
                ptx::fence_proxy_async_smem();
                ptx::mbarrier_arrive(bar_ready);  // P(n) and its rows' factors, to WG1
                ptx::wgmma_wait<0>();             // P(n−1)·V_L(n−1) done: O_L may be rescaled
                scale_o(a0, a1);
            };
            issue_s(0);
            ptx::wgmma_wait<0>();
            softmax_tile(0);
            for (int n = 1; n < tiles; ++n) {
                issue_s(n & 1);
                issue_pv((n - 1) & 1, 0);  // P(n−1)·V_L(n−1), behind S(n)
                ptx::wgmma_wait<1>();      // S(n) done
                softmax_tile(n);
            }
            issue_pv((tiles - 1) & 1, 0);
            ptx::wgmma_wait<0>();
            if (t4 == 0) l_s[r0] = l0, l_s[r1] = l1;
        } else {
            for (int n = 0; n < tiles; ++n) {
                const int buf = n & 1;
                ptx::mbarrier_wait(bar_ready, n & 1);
                ptx::wgmma_wait<0>();  // P(n−1)·V_R(n−1) done
                if (n > 0) ptx::mbarrier_arrive(bar_free0 + 8 * (buf ^ 1));
                scale_o(alpha_s[buf * 64 + r0], alpha_s[buf * 64 + r1]);
                issue_pv(buf, 1);
            }
            ptx::wgmma_wait<0>();
        }
        __syncthreads();
    }
    const long long t_end = clock64();
    if (tid == 0) cycles[blockIdx.x] = (unsigned long long)(t_end - t_start);
    // O / l, this warpgroup's 256 columns, bf16 [cta][64][512]
    const float inv0 = 1.f / l_s[r0], inv1 = 1.f / l_s[r1];
    __nv_bfloat16 *ob = out + (size_t)blockIdx.x * kHeads * 512 + 256 * wg;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const int col = 8 * j + 2 * t4;
        *reinterpret_cast<__nv_bfloat162 *>(ob + (size_t)r0 * 512 + col) = __floats2bfloat162_rn(o[4 * j] * inv0, o[4 * j + 1] * inv0);
        *reinterpret_cast<__nv_bfloat162 *>(ob + (size_t)r1 * 512 + col) = __floats2bfloat162_rn(o[4 * j + 2] * inv1, o[4 * j + 3] * inv1);
    }
#else
    (void)tiles, (void)scale, (void)cycles, (void)out;
#endif
}

template <int kMode, int kFlags = 0>
static void run(const char *name, int tiles, int grid, int clock_khz, std::vector<float> &result, const unsigned char *img) {
    unsigned long long *d_cycles;
    __nv_bfloat16 *d_out;
    const size_t out_elems = (size_t)grid * kHeads * 512;
    CK(cudaMalloc(&d_cycles, grid * sizeof(unsigned long long)));
    CK(cudaMalloc(&d_out, out_elems * sizeof(__nv_bfloat16)));
    CK(cudaFuncSetAttribute(pair_probe<kMode, kFlags>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kSmemBytes));
    const float scale = 1.f / sqrtf(192.f);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ms;
    std::vector<unsigned long long> cyc(grid), all;
    for (int rep = 0; rep < 8; ++rep) {
        CK(cudaEventRecord(e0));
        pair_probe<kMode, kFlags><<<grid, 256, kSmemBytes>>>(tiles, scale, d_cycles, d_out, img);
        CK(cudaEventRecord(e1));
        CK(cudaGetLastError());
        CK(cudaEventSynchronize(e1));
        float t;
        CK(cudaEventElapsedTime(&t, e0, e1));
        if (rep > 0) {
            ms.push_back(t);
            CK(cudaMemcpy(cyc.data(), d_cycles, grid * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
            all.insert(all.end(), cyc.begin(), cyc.end());
        }
    }
    std::sort(ms.begin(), ms.end());
    std::sort(all.begin(), all.end());
    const double med_cyc = (double)all[all.size() / 2];
    printf("%-20s tiles %d, %d CTAs: kernel %.1f us (median of 7); loop %.0f cycles median over CTAs (min %llu, max %llu): "
           "%.0f cycles a tile, %.0f a pair; at the %.0f MHz clock %.1f us; tensor work a pair 4352 cycles\n",
           name, tiles, grid, ms[ms.size() / 2] * 1e3, med_cyc, all.front(), all.back(), med_cyc / tiles,
           2 * med_cyc / tiles, clock_khz / 1e3, med_cyc / (clock_khz * 1e-3));
    std::vector<__nv_bfloat16> h(out_elems);
    CK(cudaMemcpy(h.data(), d_out, out_elems * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
    result.resize(out_elems);
    for (size_t i = 0; i < out_elems; ++i) result[i] = __bfloat162float(h[i]);
    CK(cudaFree(d_cycles));
    CK(cudaFree(d_out));
}

#ifndef PROBE_MAIN_ONLY_COMPILE
// variant `b` of r[] against variant `a`, element by element; 1 where they disagree past P's rounding (or not finite)
static int compare_variants(const std::vector<float> *r, int a, int b) {
    const std::vector<float> &ref = r[a], &other = r[b];
    double sum_sq = 0, sum_sq_ref = 0, max_diff = 0;
    size_t nonfinite = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        if (!std::isfinite(ref[i]) || !std::isfinite(other[i])) { ++nonfinite; continue; }
        const double d = fabs((double)ref[i] - other[i]);
        max_diff = std::max(max_diff, d), sum_sq += d * d, sum_sq_ref += (double)ref[i] * ref[i];
    }
    const double rel = sqrt(sum_sq / std::max(sum_sq_ref, 1e-30));
    printf("variant %d against %d: max|diff| %.3g, rms diff / rms o %.3g, %zu non-finite\n", b, a, max_diff, rel, nonfinite);
    return nonfinite || rel > 1e-2 ? 1 : 0;
}

int main(int argc, char **argv) {
    const int tiles = argc > 1 ? atoi(argv[1]) : 96;
    if (tiles < 2 || tiles % 2) {
        fprintf(stderr, "tiles: an even number >= 2\n");
        return 2;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int clock_khz = 0;
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    printf("pair_order: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const int grid = prop.multiProcessorCount;
    // the copies' image: a copy of both tiles per CTA pair and pair (as many bytes as the kernel's cache at
    // 64 · tiles tokens for grid / 2 sequences)
    const size_t copies = (size_t)((grid + 1) / 2) * (tiles / 2), words = 2 * kTileBytes / 4;
    unsigned char *d_img;
    CK(cudaMalloc(&d_img, copies * words * 4));
    fill_image<<<1024, 256>>>(reinterpret_cast<uint32_t *>(d_img), words, copies);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    printf("image %.0f MB\n", copies * words * 4 / 1e6);
    if (argc > 2 && !strcmp(argv[2], "early8")) {  // WG1's k_pe chunk reloaded after S1 and rotated during the P·V
        std::vector<float> r[8];
        for (int round = 0; round < 3; ++round) {
            run<0, kRot>("seesaw+rot", tiles, grid, clock_khz, r[0], d_img);
            run<0, kRot | kEarly8>("seesaw+rot+early8", tiles, grid, clock_khz, r[1], d_img);
            run<0, kCopy | kFine>("copy+fine", tiles, grid, clock_khz, r[2], d_img);
            run<0, kCopy | kFine | kEarly8>("copy+fine+early8", tiles, grid, clock_khz, r[3], d_img);
            run<0, kRot | kCopy | kFine>("cal", tiles, grid, clock_khz, r[4], d_img);
            run<0, kRot | kCopy | kFine | kEarly8>("cal+early8", tiles, grid, clock_khz, r[5], d_img);
            run<0, kRot | kCopy | kFine | kL2>("cal+L2", tiles, grid, clock_khz, r[6], d_img);
            run<0, kRot | kCopy | kFine | kL2 | kEarly8>("cal+L2+early8", tiles, grid, clock_khz, r[7], d_img);
        }
        CK(cudaFree(d_img));
        // with copies the data flow is the same (every chunk reloaded; P only read): the outputs must agree
        int status = 0;
        const int pairs[][2] = {{2, 3}, {4, 5}, {6, 7}};
        for (const auto &pr : pairs) status |= compare_variants(r, pr[0], pr[1]);
        return status;
    }
    if (argc > 2 && !strcmp(argv[2], "softmax")) {  // the softmax's instruction mix, resident and calibrated
        std::vector<float> r[12];
        for (int round = 0; round < 2; ++round) {
            run<0>("seesaw", tiles, grid, clock_khz, r[0], d_img);
            run<0, kNoRnd>("seesaw-rnd", tiles, grid, clock_khz, r[1], d_img);
            run<0, kNoExp>("seesaw-exp", tiles, grid, clock_khz, r[2], d_img);
            run<0, kPoly>("seesaw+poly", tiles, grid, clock_khz, r[3], d_img);
            run<0, kIntRnd>("seesaw+intrnd", tiles, grid, clock_khz, r[4], d_img);
            run<0, kPoly | kIntRnd>("seesaw+poly+intrnd", tiles, grid, clock_khz, r[5], d_img);
            constexpr int kCal = kRot | kCopy | kFine;
            run<0, kCal>("cal", tiles, grid, clock_khz, r[6], d_img);
            run<0, kCal | kNoRnd>("cal-rnd", tiles, grid, clock_khz, r[7], d_img);
            run<0, kCal | kNoExp>("cal-exp", tiles, grid, clock_khz, r[8], d_img);
            run<0, kCal | kPoly>("cal+poly", tiles, grid, clock_khz, r[9], d_img);
            run<0, kCal | kIntRnd>("cal+intrnd", tiles, grid, clock_khz, r[10], d_img);
            run<0, kCal | kPoly | kIntRnd>("cal+poly+intrnd", tiles, grid, clock_khz, r[11], d_img);
        }
        CK(cudaFree(d_img));
        int status = 0;
        const int pairs[][2] = {{0, 3}, {0, 4}, {0, 5}, {6, 9}, {6, 10}, {6, 11}};
        for (const auto &pr : pairs) status |= compare_variants(r, pr[0], pr[1]);
        return status;
    }
    std::vector<float> seesaw, split, stagger, wide;
    std::vector<float> seesaw_r, wide_r, seesaw_c, wide_c, seesaw_rc, wide_rc, wide2, wide2_r, wide2_c, wide2_rc, wide2_co, wide2_rco;
    std::vector<float> seesaw_cl, wide_cl, seesaw_rcl, wide_rcl, seesaw_cf, seesaw_rcf, wide_cf, wide_rcf;
    for (int round = 0; round < 2; ++round) {
        run<0>("seesaw", tiles, grid, clock_khz, seesaw, d_img);
        run<4>("wide", tiles, grid, clock_khz, wide, d_img);
        run<0, kRot>("seesaw+rot", tiles, grid, clock_khz, seesaw_r, d_img);
        run<4, kRot>("wide+rot", tiles, grid, clock_khz, wide_r, d_img);
        run<0, kCopy>("seesaw+copy", tiles, grid, clock_khz, seesaw_c, d_img);
        run<4, kCopy>("wide+copy", tiles, grid, clock_khz, wide_c, d_img);
        run<0, kRot | kCopy>("seesaw+rot+copy", tiles, grid, clock_khz, seesaw_rc, d_img);
        run<4, kRot | kCopy>("wide+rot+copy", tiles, grid, clock_khz, wide_rc, d_img);
        run<5>("wide2", tiles, grid, clock_khz, wide2, d_img);
        run<5, kRot>("wide2+rot", tiles, grid, clock_khz, wide2_r, d_img);
        run<5, kCopy>("wide2+copy", tiles, grid, clock_khz, wide2_c, d_img);
        run<5, kRot | kCopy>("wide2+rot+copy", tiles, grid, clock_khz, wide2_rc, d_img);
        run<5, kCopy | kOrder>("wide2+copy+order", tiles, grid, clock_khz, wide2_co, d_img);
        run<5, kRot | kCopy | kOrder>("wide2+rot+copy+order", tiles, grid, clock_khz, wide2_rco, d_img);
        run<0, kCopy | kL2>("seesaw+copyL2", tiles, grid, clock_khz, seesaw_cl, d_img);
        run<4, kCopy | kL2>("wide+copyL2", tiles, grid, clock_khz, wide_cl, d_img);
        run<0, kRot | kCopy | kL2>("seesaw+rot+copyL2", tiles, grid, clock_khz, seesaw_rcl, d_img);
        run<4, kRot | kCopy | kL2>("wide+rot+copyL2", tiles, grid, clock_khz, wide_rcl, d_img);
        run<0, kCopy | kFine>("seesaw+copy+fine", tiles, grid, clock_khz, seesaw_cf, d_img);
        run<0, kRot | kCopy | kFine>("seesaw+rot+copy+fine", tiles, grid, clock_khz, seesaw_rcf, d_img);
        run<4, kCopy | kFine>("wide+copy+fine", tiles, grid, clock_khz, wide_cf, d_img);
        run<4, kRot | kCopy | kFine>("wide+rot+copy+fine", tiles, grid, clock_khz, wide_rcf, d_img);
    }
    run<1>("split", tiles, grid, clock_khz, split, d_img);
    run<2>("stagger", tiles, grid, clock_khz, stagger, d_img);
    std::vector<float> no_softmax;
    run<3>("no-smax", tiles, grid, clock_khz, no_softmax, d_img);
    CK(cudaFree(d_img));
    // each order against the seesaw with the same flags: the same function up to P's rounding against another running
    // max (split, stagger) or the S's summation order (wide)
    int status = 0;
    struct Cmp { const char *name; const std::vector<float> *ref, *other; };
    const Cmp cmps[] = {{"split", &seesaw, &split}, {"stagger", &seesaw, &stagger}, {"wide", &seesaw, &wide},
                        {"wide+rot", &seesaw_r, &wide_r}, {"wide+copy", &seesaw_c, &wide_c},
                        {"wide+rot+copy", &seesaw_rc, &wide_rc}, {"wide2+copy", &seesaw_c, &wide2_c},
                        {"wide2+rot+copy", &seesaw_rc, &wide2_rc}, {"wide2+copy+order", &seesaw_c, &wide2_co},
                        {"wide2+rot+copy+order", &seesaw_rc, &wide2_rco}, {"wide+copyL2", &seesaw_cl, &wide_cl},
                        {"wide+rot+copyL2", &seesaw_rcl, &wide_rcl}, {"seesaw+copy+fine", &seesaw_c, &seesaw_cf},
                        {"seesaw+rot+copy+fine", &seesaw_rc, &seesaw_rcf}, {"wide+copy+fine", &seesaw_cf, &wide_cf},
                        {"wide+rot+copy+fine", &seesaw_rcf, &wide_rcf}};
    // (wide2 without copies is not compared: its tiles' chunks 8 keep their keys where the others' hold P)
    for (const Cmp &cmp : cmps) {
        const std::vector<float> &ref = *cmp.ref, &other = *cmp.other;
        double max_ref = 0, max_diff = 0, sum_sq = 0, sum_sq_ref = 0;
        size_t bad = 0, nonfinite = 0;
        for (size_t i = 0; i < ref.size(); ++i) {
            const float b = other[i];
            if (!std::isfinite(ref[i]) || !std::isfinite(b)) {
                ++nonfinite;
                continue;
            }
            const double d = fabs((double)ref[i] - b);
            max_ref = std::max(max_ref, (double)fabs(ref[i]));
            max_diff = std::max(max_diff, d);
            sum_sq += d * d, sum_sq_ref += (double)ref[i] * ref[i];
            if (d > 2e-2 * fabs(ref[i]) + 2e-3) ++bad;
        }
        printf("%s against the seesaw: max|o| %.4g, max|diff| %.3g, rms diff / rms o %.3g, %zu of %zu past 2e-2·|o| + 2e-3, "
               "%zu non-finite\n", cmp.name, max_ref, max_diff, sqrt(sum_sq / std::max(sum_sq_ref, 1e-30)), bad, ref.size(),
               nonfinite);
        if (nonfinite || max_ref == 0 || sqrt(sum_sq / std::max(sum_sq_ref, 1e-30)) > 1e-2) status = 1;
    }
    return status;
}
#endif
