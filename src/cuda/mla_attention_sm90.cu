// MLA decode: attention over the latent cache on Hopper (sm_90a), warpgroup MMA (wgmma) from shared memory.
//
// What: the same function as the kernels of mla_attention.cu (see there and shared/spec/mla-decode.md):
//   s[h][t] = bf16(bf16(q_lat[h]·c[t] + q_pe[h]·k_pe[t]) · scale),  p = softmax_t(s),  o_lat[h] = Σ_t bf16(p)·c[t] / l,
// one block per (sequence, split, 64 heads), the same split-KV schedule, partial format and combine.
// Why a second kernel: the mma.sync kernel runs at ~200 TFLOP/s (its fragments pass through ldmatrix and registers,
// 3 barriers per tile with 8 warps); wgmma reads both operands straight from shared memory, asynchronously, at the
// Hopper tensor rate, and a warpgroup's 64×256 accumulator tile takes 128 registers per thread.
//
// Layout (dynamic smem, 1024-byte aligned): every operand is stored in the 128-byte-swizzle layout wgmma reads:
// a [64 rows][576] bf16 tile is 9 chunks of 64 columns, each chunk [64 rows][128 B] (8 KB), the 16-byte unit u of
// row r at unit u ^ (r % 8).
//   Q     [64 heads][576]    72 KB, loaded once (head rows beyond n_heads zero-filled)
//   KV    [2][64 tokens][576] 144 KB, cp.async double buffer, rows ≥ T zero-filled (never read from global)
//   P     [64 heads][64 tokens] bf16, 8 KB (one chunk)
//   stats tile row max [2 warpgroups][64], row sums [2][64]
// Work: 2 warpgroups (256 threads).
//   S = Q·Kᵀ: warpgroup w → all 64 heads × tokens 32w..32w+31 of the tile: 36 × wgmma m64n32k16 (K = 576).
//             Both operands K-major; the B operand is the KV tile itself (rows = tokens).
//   softmax: tile row max exchanged through smem (one barrier), the running max m in registers (both warpgroups
//            compute the same m from the same values), P = exp2(s − m) rounded to bf16 into smem (a second barrier).
//   O += P·V: warpgroup w → 64 heads × latent columns 256w..256w+255: 4 × wgmma m64n256k16 (K = 64 tokens), A = P
//             (K-major), B = the KV tile's latent chunks 4w..4w+3 read MN-major (rows = tokens, columns contiguous).
//   The keys' rope (reference convention) is applied in smem before the S barrier: thread (row 8·warp + lane%8,
//   unit lane/8) copies both halves of its k_pe unit pair itself, so after its own cp.async wait it rotates them
//   (packed bf16, the reference's rounding: rotate_pair) with no barrier of its own; its table rows for the next
//   tile are loaded into registers during the current one.
// Versions (H100, batch 128, 128 heads, attention phase at length 6144; the mma.sync kernel: 1167 µs):
//   v1: per tile [wait own copies, rotate, fence] barrier [next tile's cp.async, S, wait, tile max] barrier [P, fence]
//       barrier [rescale O, P·V, wait]: no overlap of the phases inside a block (one block per SM). 766 µs.
//   v2: S(i+1) issued right behind P·V(i) (both on the tensor cores at once); tile i+2 copied into tile i's buffer once
//       every warpgroup's P·V(i) is done. 790 µs: no gain, so the phases were not the limit.
//   v2.1 (this): the copy loop without per-copy index math (683 µs), descriptors advanced by adding to them rather
//       than rebuilt per wgmma, the O rescale skipped when no row max moved (667-677 µs = 1.75x the mma.sync kernel,
//       ~325 TFLOP/s). Leaving one stage out (LATTE_DEV_EXPERIMENTS) saves: S 196 µs, the KV copies 78-105, the rotation
//       with its table loads ~74, P·V ~62 (measured on v2/v2.1): no single stage dominates; the kernel issues
//       ~1.5 K instructions per warp and tile with 2 warps per scheduler (ncu: issue slots 45% busy, no eligible warp
//       52% of cycles). Next: FlashMLA-style "seesaw" (each warpgroup computes S of alternate tiles at m64n64 and its
//       own P·V from registers) and TMA copies; see docs/NOTES.md.
#include "cuda/mla_attention.cuh"
#include "cuda/mla_attention_common.cuh"
#include "cuda/ptx.cuh"
#include "cuda/smem_optin.cuh"

#include <cstdlib>

namespace latte {
namespace {

using namespace attention_detail;

constexpr int kHeads = 64;                       // heads per block: the wgmma M
constexpr int kThreads = 256;                    // 2 warpgroups
constexpr int kChunks = kMlaRow / 64;            // 9 chunks of 64 bf16 (128 bytes) per row
constexpr uint32_t kChunkBytes = 64 * 128;       // a 64-row chunk (Q, KV and P tiles all have 64 rows)
constexpr uint32_t kTileBytes = kChunks * kChunkBytes;  // 72 KB
constexpr uint32_t kPOff = 3 * kTileBytes;
constexpr uint32_t kStatOff = kPOff + kChunkBytes;
constexpr uint32_t kStatBytes = 4 * kHeads * sizeof(float);  // tile_max[2][64], row_sum[2][64]
constexpr size_t kSmemBytes = kStatOff + kStatBytes + 1024;  // + slack to align the base to 1024 bytes
static_assert(kSmemBytes <= 232448, "fits the 227 KB a Hopper block may opt into");

#if LATTE_PTX_SM90A  // the device-only part (the sm_80 image and the host pass do not see it)
constexpr int kTile = 64;                        // tokens per KV tile
constexpr uint32_t kQOff = 0;
constexpr uint32_t kKvOff = kTileBytes;          // [2] tiles

// Byte offset of the 16-byte unit u (0..7) of chunk c, row r in a swizzled 64-row tile.
__device__ __forceinline__ uint32_t unit_offset(int r, int c, int u) {
    return (uint32_t)c * kChunkBytes + (uint32_t)r * 128u + ((uint32_t)(u ^ (r & 7)) << 4);
}
#endif

// kExp: timing experiments that leave one stage out (wrong results; built only with -DLATTE_DEV_EXPERIMENTS, chosen by
// LATTE_MLA_WGMMA_EXPERIMENT): 1 no KV copies after the first two tiles, 2 no S wgmma, 3 no P·V wgmma, 4 no rotation.
template <int kExp>
__global__ void __launch_bounds__(kThreads, 1) mla_attention_wgmma_kernel(const MlaAttentionParams p) {
#if LATTE_PTX_SM90A
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    // the swizzle is a function of the address bits: every operand chunk must start on a 1024-byte boundary
    const uint32_t raw_u32 = ptx::smem_u32(smem_raw);
    unsigned char *smem = smem_raw + (((raw_u32 + 1023u) & ~1023u) - raw_u32);
    const uint32_t base = ptx::smem_u32(smem);
    float *tile_max = reinterpret_cast<float *>(smem + kStatOff);  // [2][64]
    float *row_sum = tile_max + 2 * kHeads;                        // [2][64]

    const int n_groups = (p.n_heads + kHeads - 1) / kHeads;
    const int group = blockIdx.x % n_groups;
    const int split = (blockIdx.x / n_groups) % p.n_splits;
    const int b = blockIdx.x / n_groups / p.n_splits;
    const int head0 = group * kHeads;
    const int heads = min(kHeads, p.n_heads - head0);
    const int tid = threadIdx.x;

    const int len = p.cache_lens[b];
    if (!length_is_valid(len, p.max_cache_len)) {  // read nothing; NaN rows (the combine writes them if it runs)
        if (p.n_splits == 1) {
            const uint4 nan8 = make_uint4(0x7fc07fc0u, 0x7fc07fc0u, 0x7fc07fc0u, 0x7fc07fc0u);  // 8 bf16 NaN
            uint4 *out = reinterpret_cast<uint4 *>(p.o_lat + ((size_t)b * p.n_heads + head0) * kMlaLatent);
            for (int i = tid; i < heads * kMlaLatent / 8; i += kThreads) out[i] = nan8;
        }
        return;
    }
    const int T = len + 1;
    const int tok_begin = split * p.split_len;
    const int tok_end = min(T, tok_begin + p.split_len);
    if (tok_begin >= tok_end) {  // empty split: the combine never reads its o_partial
        if (tid < heads) p.lse_partial[((size_t)split * p.batch + b) * p.n_heads + head0 + tid] = -INFINITY;
        return;
    }
    const int n_tiles = (tok_end - tok_begin + kTile - 1) / kTile;
    const __nv_bfloat16 *seq = p.kv_cache + (size_t)b * p.cache_batch_stride;

    const int warp = tid / 32, lane = tid % 32;
    const int wg = tid / 128;                     // warpgroup
    const int g = lane / 4, t4 = lane % 4;
    const int r0 = 16 * (warp % 4) + g, r1 = r0 + 8;  // the two head rows of this thread's accumulator fragments

    // ---- Q, once (its own cp.async group, committed with tile 0) ----
    {
        const __nv_bfloat16 *q_seq = p.q + (size_t)b * p.q_batch_stride;
#pragma unroll 1
        for (int i = tid; i < kHeads * kChunks * 8; i += kThreads) {
            const int r = i / (kChunks * 8), cu = i % (kChunks * 8);
            const bool valid = r < heads;
            const __nv_bfloat16 *src = q_seq + (size_t)(valid ? head0 + r : head0) * p.q_head_stride + 8 * cu;
            ptx::cp_async_16(base + kQOff + unit_offset(r, cu / 8, cu % 8), src, valid);
        }
    }
    // k_pe unit pair of this thread: row pe_row, rope dims 8·pe_u..+8 (unit pe_u of chunk 8) and their rotate_half
    // partners 32 + 8·pe_u..+8 (unit pe_u + 4)
    const int pe_row = 8 * warp + lane % 8, pe_u = lane / 8;
    const bool rotate = p.rope_cos != nullptr;
    // latent part: thread tid copies unit cu = tid % 64 (chunk cu / 8, unit cu % 8) of rows tid / 64 + 4j, j < 16 (a
    // warp reads 512 contiguous bytes of a row). Row r + 4 has the swizzle r & 7 ^ 4, so the destination alternates
    // between two unit positions and advances 512 bytes per row step: two precomputed offsets, no per-copy index math.
    const int ld_row0 = tid / 64, ld_cu = tid % 64;
    const uint32_t ld_dst0 = (uint32_t)(ld_cu / 8) * kChunkBytes + (uint32_t)ld_row0 * 128u;
    const uint32_t ld_even = (uint32_t)((ld_cu % 8) ^ ld_row0) << 4, ld_odd = (uint32_t)((ld_cu % 8) ^ (ld_row0 + 4)) << 4;
    auto load_tile = [&](int tile, int stage) {
        const int t_first = tok_begin + tile * kTile;
        const uint32_t dst = base + kKvOff + (uint32_t)stage * kTileBytes + ld_dst0;
        const int rows_left = T - t_first - ld_row0;  // rows ld_row0 + 4j with 4j < rows_left exist (< T)
        const int64_t step = 4 * p.cache_row_stride;
        const __nv_bfloat16 *src = seq + (int64_t)(t_first + ld_row0) * p.cache_row_stride + 8 * ld_cu;
#pragma unroll 2
        for (int j = 0; j < kTile / 4; j += 2) {
            const bool v0 = 4 * j < rows_left, v1 = 4 * j + 4 < rows_left;
            ptx::cp_async_16(dst + 512u * j + ld_even, v0 ? src : seq, v0);  // rows ≥ T: zero-filled, nothing read
            ptx::cp_async_16(dst + 512u * j + 512u + ld_odd, v1 ? src + step : seq, v1);
            src += 2 * step;
        }
        const bool valid = t_first + pe_row < T;
        const __nv_bfloat16 *pe_src = seq + (size_t)(valid ? t_first + pe_row : 0) * p.cache_row_stride + kMlaLatent;
        ptx::cp_async_16(dst - ld_dst0 + unit_offset(pe_row, 8, pe_u), pe_src + 8 * pe_u, valid);
        ptx::cp_async_16(dst - ld_dst0 + unit_offset(pe_row, 8, pe_u + 4), pe_src + 32 + 8 * pe_u, valid);
        ptx::cp_async_commit();
    };
    // this thread's rope table pieces for a tile (cos/sin of dims 8·pe_u.. and 32 + 8·pe_u..)
    uint4 cos_lo = make_uint4(0, 0, 0, 0), cos_hi = cos_lo, sin_lo = cos_lo, sin_hi = cos_lo;
    auto load_tables = [&](int tile) {
        const int t = tok_begin + tile * kTile + pe_row;
        if (rotate && t < T) {
            const uint4 *c = reinterpret_cast<const uint4 *>(p.rope_cos + (size_t)t * kMlaRope) + pe_u;
            const uint4 *s = reinterpret_cast<const uint4 *>(p.rope_sin + (size_t)t * kMlaRope) + pe_u;
            cos_lo = __ldg(c), cos_hi = __ldg(c + 4), sin_lo = __ldg(s), sin_hi = __ldg(s + 4);
        }
    };
    // tables are loaded with their tile's copies; tile 1 goes into the second buffer at once
    load_tile(0, 0);
    load_tables(0);

    float o[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) o[i] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY;  // running row max (log2 domain) of rows r0, r1
    float l0 = 0.f, l1 = 0.f;              // this thread's share of the running row sums
    float s[16];                           // S of the tile in flight

    const uint32_t q_base = base + kQOff, p_base = base + kPOff;
    // S: A = Q (K-major), B = the tile's token rows 32·wg..+32 (K-major); P·V: A = P (K-major), B = the tile's latent
    // chunks 4·wg..+4 (MN-major: 8 KB between blocks of 64 columns, 1 KB between groups of 8 token rows)
    const uint64_t q_desc0 = ptx::wgmma_desc_sw128(q_base, 16, 1024);
    const uint64_t kv_desc0 = ptx::wgmma_desc_sw128(base + kKvOff + 32 * wg * 128, 16, 1024);
    const uint64_t p_desc0 = ptx::wgmma_desc_sw128(p_base, 16, 1024);
    const uint64_t v_desc0 = ptx::wgmma_desc_sw128(base + kKvOff + 4 * wg * kChunkBytes, kChunkBytes, 1024);
    unsigned char *p_tile = smem + kPOff;

    // Wait for this thread's copies of `tile`, rotate its k_pe unit pair, hand the tile to wgmma (barrier).
    // The caller has made sure the only cp.async group still in flight is this tile's.
    auto tile_ready = [&](int tile) {
        ptx::cp_async_wait<0>();
        const int stage = tile & 1;
        if (kExp != 4 && rotate && tok_begin + tile * kTile + pe_row < T) {
            uint4 *lo_ptr = reinterpret_cast<uint4 *>(smem + kKvOff + stage * kTileBytes + unit_offset(pe_row, 8, pe_u));
            uint4 *hi_ptr =
                reinterpret_cast<uint4 *>(smem + kKvOff + stage * kTileBytes + unit_offset(pe_row, 8, pe_u + 4));
            uint4 x_lo = *lo_ptr, x_hi = *hi_ptr;
            rotate_pair(x_lo.x, x_hi.x, cos_lo.x, cos_hi.x, sin_lo.x, sin_hi.x);
            rotate_pair(x_lo.y, x_hi.y, cos_lo.y, cos_hi.y, sin_lo.y, sin_hi.y);
            rotate_pair(x_lo.z, x_hi.z, cos_lo.z, cos_hi.z, sin_lo.z, sin_hi.z);
            rotate_pair(x_lo.w, x_hi.w, cos_lo.w, cos_hi.w, sin_lo.w, sin_hi.w);
            *lo_ptr = x_lo;
            *hi_ptr = x_hi;
        }
        ptx::fence_proxy_async_smem();  // the copies and the rotation, visible to wgmma
        __syncthreads();
    };
    // S = Q·Kᵀ of `tile` for 64 heads × tokens 32·wg..+32: 36 wgmma, committed as one group (not waited here)
    auto issue_s = [&](int tile) {
        // descriptors advance by adding (bytes >> 4) to the start-address field (stays below 2^14: smem < 256 KB),
        // so each wgmma costs one add instead of rebuilding its descriptors
        const uint64_t q_desc = q_desc0;
        const uint64_t kv_desc = kv_desc0 + (uint64_t)((tile & 1) * (kTileBytes >> 4));
#pragma unroll
        for (int i = 0; i < 16; ++i) s[i] = 0.f;
        ptx::wgmma_fence();
        // not unrolled over the chunks: unrolled, the 36 loop-invariant descriptors are hoisted into registers
#pragma unroll 1
        for (int c = 0; c < kChunks; ++c) {
            const uint64_t qd = q_desc + (uint64_t)(c * (kChunkBytes >> 4));
            const uint64_t kd = kv_desc + (uint64_t)(c * (kChunkBytes >> 4));
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
                if (kExp != 2) ptx::wgmma_m64n32k16_ss(s, qd + 2 * kk, kd + 2 * kk);  // + 32 bytes per k-step
        }
        ptx::wgmma_commit();
    };

    tile_ready(0);
    if (n_tiles > 1) {
        load_tile(1, 1);
        load_tables(1);
    }
    issue_s(0);

    // Pipeline (v2): S(i+1) runs on the tensor cores together with P·V(i); tile i+2 is copied into tile i's buffer as
    // soon as every warpgroup's P·V(i) has finished, i.e. about one S + softmax ahead of its use.
    for (int tile = 0; tile < n_tiles; ++tile) {
        const int t_first = tok_begin + tile * kTile;
        ptx::wgmma_wait<0>();  // S(tile) (P·V(tile − 1) was waited for before)

        // ---- softmax step 1: scores as the reference rounds them (log2 domain), tokens ≥ T masked; tile max ----
        float mx0 = -INFINITY, mx1 = -INFINITY;
        const int tok0 = t_first + 32 * wg + 2 * t4;
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const bool valid = tok0 + 8 * j + e < T;
                s[4 * j + e] = valid ? score_log2(s[4 * j + e], p.softmax_scale) : -INFINITY;
                s[4 * j + 2 + e] = valid ? score_log2(s[4 * j + 2 + e], p.softmax_scale) : -INFINITY;
                mx0 = fmaxf(mx0, s[4 * j + e]);
                mx1 = fmaxf(mx1, s[4 * j + 2 + e]);
            }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        if (t4 == 0) {
            tile_max[wg * kHeads + r0] = mx0;
            tile_max[wg * kHeads + r1] = mx1;
        }
        __syncthreads();

        // ---- step 2: new running max (the same in both warpgroups), P = exp2(s − m) in bf16 into smem ----
        const float mn0 = fmaxf(m0, fmaxf(tile_max[r0], tile_max[kHeads + r0]));
        const float mn1 = fmaxf(m1, fmaxf(tile_max[r1], tile_max[kHeads + r1]));
        const float alpha0 = mn0 == -INFINITY ? 1.f : exp2f(m0 - mn0);  // m = −inf before the first valid score
        const float alpha1 = mn1 == -INFINITY ? 1.f : exp2f(m1 - mn1);
        const float sub0 = mn0 == -INFINITY ? 0.f : mn0, sub1 = mn1 == -INFINITY ? 0.f : mn1;  // masked rows: p = 0
        m0 = mn0, m1 = mn1;
        float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const __nv_bfloat162 p0 = __floats2bfloat162_rn(exp2f(s[4 * j] - sub0), exp2f(s[4 * j + 1] - sub0));
            const __nv_bfloat162 p1 = __floats2bfloat162_rn(exp2f(s[4 * j + 2] - sub1), exp2f(s[4 * j + 3] - sub1));
            sum0 += __low2float(p0) + __high2float(p0);
            sum1 += __low2float(p1) + __high2float(p1);
            const int unit = 4 * wg + j;  // tokens 32·wg + 8j + 2·t4, +1 of the P row: 16-byte unit 4·wg + j
            *reinterpret_cast<__nv_bfloat162 *>(p_tile + r0 * 128 + ((unit ^ (r0 & 7)) << 4) + 4 * t4) = p0;
            *reinterpret_cast<__nv_bfloat162 *>(p_tile + r1 * 128 + ((unit ^ (r1 & 7)) << 4) + 4 * t4) = p1;
        }
        l0 = l0 * alpha0 + sum0;
        l1 = l1 * alpha1 + sum1;
        ptx::fence_proxy_async_smem();  // P, visible to wgmma
        __syncthreads();

        // ---- step 3: O = O·alpha + P·V for latent columns 256·wg..+256, issued, not waited for ----
        // once the running max has settled it rarely moves: skip the 128 multiplies when no row of the warp changed
        if (__any_sync(0xffffffffu, alpha0 != 1.f || alpha1 != 1.f)) {
#pragma unroll
            for (int j = 0; j < 32; ++j) {
                o[4 * j] *= alpha0, o[4 * j + 1] *= alpha0;
                o[4 * j + 2] *= alpha1, o[4 * j + 3] *= alpha1;
            }
        }
        ptx::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)  // k-step kk: P + 32 bytes, V + 16 token rows (2 KB)
            if (kExp != 3)
                ptx::wgmma_m64n256k16_ss_tb(o, p_desc0 + 2 * kk,
                                            v_desc0 + (uint64_t)((tile & 1) * (kTileBytes >> 4) + kk * (2048 >> 4)));
        ptx::wgmma_commit();

        if (tile + 1 < n_tiles) {
            tile_ready(tile + 1);  // tile + 1's copies are the only group in flight
            issue_s(tile + 1);
            ptx::wgmma_wait<1>();  // P·V(tile) done; S(tile + 1) may still run
            __syncthreads();       // every warpgroup's P·V(tile) done: its buffer and P are free
            if (tile + 2 < n_tiles) {
                if (kExp != 1) load_tile(tile + 2, tile & 1);
                load_tables(tile + 2);
            }
        } else {
            ptx::wgmma_wait<0>();
        }
    }

    // ---- row sums: this thread's share → quad → both warpgroups ----
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    if (t4 == 0) {
        row_sum[wg * kHeads + r0] = l0;
        row_sum[wg * kHeads + r1] = l1;
    }
    __syncthreads();
    const float lt0 = row_sum[r0] + row_sum[kHeads + r0], lt1 = row_sum[r1] + row_sum[kHeads + r1];

    // ---- output. One split per sequence: the normalized o_lat in bf16. Else the split's normalized partial
    //      output (fp32) and its natural-log LSE (the combine merges them). ----
    const int col0 = 256 * wg + 2 * t4;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
        const int r = hh == 0 ? r0 : r1;
        if (r >= heads) continue;
        const float inv_l = 1.f / (hh == 0 ? lt0 : lt1);
        if (p.n_splits == 1) {
            __nv_bfloat16 *dst = p.o_lat + ((size_t)b * p.n_heads + head0 + r) * kMlaLatent + col0;
#pragma unroll
            for (int j = 0; j < 32; ++j)
                *reinterpret_cast<__nv_bfloat162 *>(dst + 8 * j) =
                    __floats2bfloat162_rn(o[4 * j + 2 * hh] * inv_l, o[4 * j + 2 * hh + 1] * inv_l);
        } else {
            const size_t row_out = ((size_t)split * p.batch + b) * p.n_heads + head0 + r;
            float *dst = p.o_partial + row_out * kMlaLatent + col0;
#pragma unroll
            for (int j = 0; j < 32; ++j)
                *reinterpret_cast<float2 *>(dst + 8 * j) =
                    make_float2(o[4 * j + 2 * hh] * inv_l, o[4 * j + 2 * hh + 1] * inv_l);
            if (wg == 0 && t4 == 0)
                p.lse_partial[row_out] = ((hh == 0 ? m0 : m1) + log2f(hh == 0 ? lt0 : lt1)) * kLn2;
        }
    }
#endif  // LATTE_PTX_SM90A
}

}  // namespace

bool mla_attention_wgmma_available(int device) {
#if defined(LATTE_HAVE_SM90A)
    // the sm_90a code exists only in this build's sm_90a image, which the driver runs on compute capability 9.0 only
    int major = 0, minor = 0, smem_optin = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
        return false;
    return major == 9 && minor == 0 && (size_t)smem_optin >= kSmemBytes;
#else
    (void)device;
    return false;
#endif
}

template <int kExp>
cudaError_t launch_wgmma(const MlaAttentionParams &p, int device, cudaStream_t stream) {
    if (const cudaError_t e = smem_optin_once<mla_attention_wgmma_kernel<kExp>>(kSmemBytes, device)) return e;
    const long long blocks = (long long)p.n_splits * p.batch * ((p.n_heads + kHeads - 1) / kHeads);
    if (blocks > 0x7fffffffLL) return cudaErrorInvalidValue;
    mla_attention_wgmma_kernel<kExp><<<(unsigned)blocks, kThreads, kSmemBytes, stream>>>(p);
    return cudaGetLastError();
}

cudaError_t mla_attention_wgmma_launch(const MlaAttentionParams &p, int device, cudaStream_t stream) {
#if defined(LATTE_DEV_EXPERIMENTS)
    static const int exp = [] {
        const char *v = getenv("LATTE_MLA_WGMMA_EXPERIMENT");
        return v ? atoi(v) : 0;
    }();
    switch (exp) {
        case 1: return launch_wgmma<1>(p, device, stream);
        case 2: return launch_wgmma<2>(p, device, stream);
        case 3: return launch_wgmma<3>(p, device, stream);
        case 4: return launch_wgmma<4>(p, device, stream);
        default: break;
    }
#endif
    return launch_wgmma<0>(p, device, stream);
}

}  // namespace latte
