// MLA decode: attention over the latent cache (the absorbed form), split-KV + combine.
//
// What: for each sequence b and head h, with T = len[b] + 1 cached rows c[t] | k_pe[t] (576 bf16),
//   s[h][t]  = (q_lat[h]·c[t] + q_pe[h]·k_pe[t]) · scale,   p = softmax_t(s),   o_lat[h] = Σ_t p[h][t]·c[t].
// Why split-KV: one block per (sequence, 64 heads) is too few blocks for small batches / long caches, so each
// sequence's tokens are cut into splits of split_len tokens; every split writes its own softmax-normalized partial
// output and its log-sum-exp, and the combine kernel merges them (flash-decoding).
// Reference (spec, shared/spec/mla-decode.md): keys are rotated at read time when rope_cos != nullptr, with the
// reference rounding k_pe' = bf16( bf16(x·cos[t]) + bf16(rotate_half(x)·sin[t]) ).
//
// Kernel versions:
//   simple  CUDA cores, fp32, one warp per head, token-by-token online softmax: obviously correct, slow.
//           Selected with LATTE_MLA_SIMPLE_ATTENTION=1 (read once), the reference when debugging on a GPU.
//   fast    mma.sync m16n8k16 bf16 (sm_80+): a block = 64 heads × one split, Q in smem once, KV tiles of
//           TILE_T tokens through a cp.async double buffer, online softmax, P rounded to bf16 for P·V.
//           v2: each thread rotates the k_pe chunk pair it copied itself (tables requested before the tile wait and
//           prefetched into L1 one tile ahead), so the rotation has no barrier and no serialized table loads;
//           running row max in smem (registers are at the limit); with one split per sequence it writes o_lat
//           itself (no fp32 partials, no combine).
//           v3: the rotation in packed bf16 arithmetic (bitwise the reference's rounding, no fp32 conversions) with
//           all of a thread's tables in 4 16-byte loads; the last tile of a sequence skips the S pairs and P·V
//           k-steps of 16 tokens that are all ≥ T (T = 513: 1 valid token of 64).
//   wgmma   Hopper warpgroup MMA from shared memory, chosen on compute capability 9.0 when the build has sm_90a code:
//           v3 (mla_attention_sm90_seesaw.cu, seesaw warpgroups fed by TMA) where the cache can be described as a
//           TMA tensor map, else v2.1 (mla_attention_sm90.cu, cp.async). LATTE_MLA_ATTENTION=wgmma2 forces v2.1,
//           =mma the mma.sync kernel.
//   combine o_lat = Σ_s w_s·o_s, w_s = exp(lse_s − max) / Σ; NaN rows for invalid lengths. v2: the splits' loads in
//           flight together (a batch of 1 at 4096 has 65 splits; v1's chain of loads took 26 µs there).
#include "cuda/mla_attention.cuh"
#include "cuda/mla_attention_common.cuh"
#include "cuda/mla_attention_schedule.cuh"
#include "cuda/ptx.cuh"
#include "cuda/smem_optin.cuh"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace latte {
namespace {

using namespace attention_detail;  // kLog2e, kLn2, length_is_valid, score_log2, rope_reference, rotate_pair

constexpr int kThreads = 256;
// ============================================================================================================
// simple: block = (split, sequence, 8 heads), warp w = head; every lane keeps 16 of the 512 output columns.
// Tokens arrive 8 at a time in smem as fp32 (roped), each token updates the online softmax on its own.
// ============================================================================================================
constexpr int kSimpleHeads = 8;   // one warp per head
constexpr int kSimpleTokens = 8;  // tokens staged in smem per step

__global__ void __launch_bounds__(kThreads) mla_attention_simple_kernel(const MlaAttentionParams p) {
    __shared__ float q_s[kSimpleHeads][kMlaRow];
    __shared__ float kv_s[kSimpleTokens][kMlaRow];

    const int n_groups = p.n_heads / kSimpleHeads;
    const int group = blockIdx.x % n_groups;
    const int split = (blockIdx.x / n_groups) % p.n_splits;
    const int b = blockIdx.x / n_groups / p.n_splits;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int h = group * kSimpleHeads + warp;

    const int len = p.cache_lens[b];
    if (!length_is_valid(len, p.max_cache_len)) return;  // the combine writes NaN; read nothing
    const int T = len + 1;
    const int tok_begin = split * p.split_len;
    const int tok_end = min(T, tok_begin + p.split_len);
    const size_t row_out = ((size_t)split * p.batch + b) * p.n_heads + h;
    if (tok_begin >= tok_end) {  // empty split
        if (lane == 0) p.lse_partial[row_out] = -INFINITY;
        return;
    }

    for (int i = threadIdx.x; i < kSimpleHeads * kMlaRow; i += kThreads) {
        const int hh = i / kMlaRow, e = i % kMlaRow;
        q_s[hh][e] = __bfloat162float(p.q[(size_t)b * p.q_batch_stride + (size_t)(group * kSimpleHeads + hh) * p.q_head_stride + e]);
    }
    const __nv_bfloat16 *seq = p.kv_cache + (size_t)b * p.cache_batch_stride;

    float m = -INFINITY, l = 0.f;
    float acc[kMlaLatent / 32];
    for (int j = 0; j < kMlaLatent / 32; ++j) acc[j] = 0.f;

    for (int t0 = tok_begin; t0 < tok_end; t0 += kSimpleTokens) {
        const int n_tok = min(kSimpleTokens, tok_end - t0);
        __syncthreads();  // q_s written / previous tokens consumed
        for (int i = threadIdx.x; i < n_tok * kMlaRow; i += kThreads) {
            const int r = i / kMlaRow, e = i % kMlaRow, t = t0 + r;
            const __nv_bfloat16 *row = seq + (size_t)t * p.cache_row_stride;
            const float x = __bfloat162float(row[e]);
            if (e < kMlaLatent || p.rope_cos == nullptr) {
                kv_s[r][e] = x;
            } else {
                const int i_pe = e - kMlaLatent, half = kMlaRope / 2;
                const float rot = i_pe < half ? -__bfloat162float(row[e + half]) : __bfloat162float(row[e - half]);
                const float c = __bfloat162float(p.rope_cos[(size_t)t * kMlaRope + i_pe]);
                const float s = __bfloat162float(p.rope_sin[(size_t)t * kMlaRope + i_pe]);
                kv_s[r][e] = __bfloat162float(rope_reference(x, rot, c, s));
            }
        }
        __syncthreads();
        for (int r = 0; r < n_tok; ++r) {
            float dot = 0.f;
            for (int e = lane; e < kMlaRow; e += 32) dot += q_s[warp][e] * kv_s[r][e];
            for (int o = 16; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o);
            const float s = score_reference(dot, p.softmax_scale);
            const float m_new = fmaxf(m, s);
            const float alpha = expf(m - m_new);  // m = -inf on the first token: alpha = 0
            const float pw = expf(s - m_new);
            l = l * alpha + pw;
            for (int j = 0; j < kMlaLatent / 32; ++j) acc[j] = acc[j] * alpha + pw * kv_s[r][lane + 32 * j];
            m = m_new;
        }
    }
    float *o = p.o_partial + row_out * kMlaLatent;
    for (int j = 0; j < kMlaLatent / 32; ++j) o[lane + 32 * j] = acc[j] / l;
    if (lane == 0) p.lse_partial[row_out] = m + logf(l);
}

// ============================================================================================================
// fast: mma.sync m16n8k16 bf16 → fp32. Block = (split, sequence, group of up to 64 heads), 8 warps.
//   smem: Q [64][576] (loaded once; head rows beyond n_heads are zero), KV [2][TILE_T][576] (cp.async double
//   buffer; rows ≥ T zero-filled by cp.async src-size 0, never loaded), both with the 16-byte chunk of each row
//   XOR-swizzled by (row & 7) so ldmatrix is conflict-free without padding (padding would not fit 227 KB);
//   P [64][TILE_T + 8] bf16 (padded), per-tile row max / row sum [2 halves][64], running row max [2][64].
//   S = Q·Kᵀ:  warp w → head rows 16·(w%4)..+16, tokens (TILE_T/2)·(w/4)..+TILE_T/2, K = 576 (36 k-steps).
//   O += P·V: warp w → head rows 32·(w%2)..+32, latent columns 128·(w/2)..+128 (V = the tile's latent part,
//             ldmatrix.trans), 2 × 16 m16n8 accumulators = 128 fp32 per thread.
//   The running row max lives in smem (double-buffered by tile parity); the PV warps keep the row sum l.
//   Scores are kept in the log2 domain (scale · log2 e) for exp2f.
//   Per tile: [table loads, wait own copies, rotate own k_pe pair] barrier [next tile's cp.async and table
//   prefetch, S, tile max] barrier [P, tile sums] barrier [rescale, O += P·V]: 3 barriers (v1 had a 4th after the
//   rotation). The tile of the sequence's end skips the S and P·V work on 16-token groups that are all ≥ T
//   (warp-uniform branches between the same barriers; the softmax bookkeeping is unchanged: masked scores).
// ============================================================================================================
constexpr int kFastHeads = 64;
constexpr int kChunksPerRow = kMlaRow / 8;  // 72 chunks of 16 bytes

template <int TILE_T>
struct FastLayout {
    static constexpr int kPStride = TILE_T + 8;  // 16-byte pad: ldmatrix rows on distinct banks
    static constexpr size_t kQBytes = (size_t)kFastHeads * kMlaRow * 2;
    static constexpr size_t kKvBytes = (size_t)TILE_T * kMlaRow * 2;
    static constexpr size_t kPBytes = (size_t)kFastHeads * kPStride * 2;
    // tile max [2 halves][64], tile sum [2 halves][64], running max [2 tile parities][64]
    static constexpr size_t kStatBytes = 6 * kFastHeads * sizeof(float);
    static constexpr size_t kSmemBytes = kQBytes + 2 * kKvBytes + kPBytes + kStatBytes;
};

// Element offset of (row, col) in a swizzled [rows][576] tile: chunk c of row r sits at chunk c ^ (r & 7)
// (stays inside its aligned group of 8 chunks since 72 = 9·8). A row is 1152 B = 9·128 B, so the 8 rows an
// ldmatrix reads (consecutive, 8-aligned) land on 8 different 16-byte bank groups.
__device__ __forceinline__ int swizzled(int row, int col) {
    return row * kMlaRow + ((((col >> 3) ^ (row & 7)) << 3) | (col & 7));
}

// the PTX wrappers (src/cuda/ptx.cuh)
using ptx::cp_async_16;
using ptx::cp_async_commit;
using ptx::ldmatrix_x4;
using ptx::ldmatrix_x4_trans;
using ptx::mma_bf16_16816;
using ptx::prefetch_l1;
__device__ __forceinline__ uint32_t smem_addr(const void *ptr) { return ptx::smem_u32(ptr); }
__device__ __forceinline__ void cp_async_wait_all() { ptx::cp_async_wait<0>(); }

// S += Q·Kᵀ for one warp: 16 head rows × the first N_PAIRS pairs of m16n8 token tiles of its S half, K = 576.
// k-step ks reads chunk 2·ks + half of each row; 4 k-steps cover one swizzle group of 8 chunks, so the swizzled
// chunk is 8·group + ((2·j + half) ^ (row & 7)) with j = ks % 4: per-lane constants.
template <int N_PAIRS, int S_NTILES>
__device__ __forceinline__ void s_product(float (&s_acc)[S_NTILES][4], uint32_t q_base, uint32_t kv_base, int s_row0,
                                          int s_tok0, int lane) {
    static_assert(N_PAIRS >= 1 && 2 * N_PAIRS <= S_NTILES, "token tile pairs of the warp's half");
    const int a_row = s_row0 + (lane % 16), a_half = lane / 16;
    const int b_row = s_tok0 + 8 * (lane / 16) + (lane % 8), b_half = (lane / 8) % 2;
    const uint32_t a_addr = q_base + 2 * a_row * kMlaRow;
    const uint32_t b_addr = kv_base + 2 * b_row * kMlaRow;
#pragma unroll 1
    for (int grp = 0; grp < kChunksPerRow / 8; ++grp) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            uint32_t a[4];
            ldmatrix_x4(a, a_addr + 16 * (8 * grp + ((2 * j + a_half) ^ (a_row & 7))));
#pragma unroll
            for (int np = 0; np < N_PAIRS; ++np) {
                uint32_t bb[4];  // n-tile 2np: bb[0], bb[1]; n-tile 2np+1: bb[2], bb[3]
                // rows b_row + 16·np have the same (row & 7) as b_row
                ldmatrix_x4(bb, b_addr + 2 * 16 * np * kMlaRow + 16 * (8 * grp + ((2 * j + b_half) ^ (b_row & 7))));
                mma_bf16_16816(s_acc[2 * np], a, bb[0], bb[1]);
                mma_bf16_16816(s_acc[2 * np + 1], a, bb[2], bb[3]);
            }
        }
    }
}

// O += P·V for one warp and one k-step of 16 tokens (ks): head rows o_row0..+32, latent columns o_col0..+128.
// p_lane / v_lane: the lane's byte offsets for k-step 0 (P rows o_row0 + lane%16, V n-tile pairs np); k-step ks adds
// 32·ks bytes to P and 16 rows to V (16 rows keep row & 7, so the swizzle does not change).
template <int P_STRIDE, int O_NTILES>
__device__ __forceinline__ void pv_kstep(float (&o_acc)[2][O_NTILES][4], uint32_t p_lane, uint32_t kv_base,
                                         const uint32_t (&v_lane)[O_NTILES / 2], int ks) {
    uint32_t a[2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) ldmatrix_x4(a[mt], p_lane + 2 * (16 * mt * P_STRIDE + 16 * ks));
#pragma unroll
    for (int np = 0; np < O_NTILES / 2; ++np) {
        uint32_t bb[4];  // n-tile 2np: bb[0], bb[1]; n-tile 2np+1: bb[2], bb[3]
        ldmatrix_x4_trans(bb, kv_base + v_lane[np] + 2 * 16 * ks * kMlaRow);
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
            mma_bf16_16816(o_acc[mt][2 * np], a[mt], bb[0], bb[1]);
            mma_bf16_16816(o_acc[mt][2 * np + 1], a[mt], bb[2], bb[3]);
        }
    }
}

template <int TILE_T>
__device__ __forceinline__ void fast_attention(const MlaAttentionParams &p) {
    using L = FastLayout<TILE_T>;
    constexpr int kSTokens = TILE_T / 2;     // tokens of the S tile per warp
    constexpr int kSNTiles = kSTokens / 8;   // m16n8 tiles of S per warp
    constexpr int kONTiles = 128 / 8;        // m16n8 tiles of O per warp and m-tile (128 columns)
    constexpr int kPS = L::kPStride;

    extern __shared__ __align__(128) unsigned char smem[];
    __nv_bfloat16 *q_s = reinterpret_cast<__nv_bfloat16 *>(smem);
    __nv_bfloat16 *kv_s = reinterpret_cast<__nv_bfloat16 *>(smem + L::kQBytes);  // [2][TILE_T][576]
    __nv_bfloat16 *p_s = reinterpret_cast<__nv_bfloat16 *>(smem + L::kQBytes + 2 * L::kKvBytes);
    float *tile_max = reinterpret_cast<float *>(smem + L::kQBytes + 2 * L::kKvBytes + L::kPBytes);  // [2][64]
    float *tile_sum = tile_max + 2 * kFastHeads;                                                    // [2][64]
    // running row max (log2 domain) in smem rather than registers (registers are at the limit): before tile i it is
    // row_max[i % 2]; tile i's S warps write the new one into row_max[(i + 1) % 2] (read by its PV warps after the
    // P barrier; overwritten two tiles later, after everyone passed the next tile's barriers).
    float *row_max = tile_sum + 2 * kFastHeads;  // [2][64]

    const int n_groups = (p.n_heads + kFastHeads - 1) / kFastHeads;
    const int group = blockIdx.x % n_groups;
    const int split = (blockIdx.x / n_groups) % p.n_splits;
    const int b = blockIdx.x / n_groups / p.n_splits;
    const int head0 = group * kFastHeads;
    const int heads = min(kFastHeads, p.n_heads - head0);

    const int len = p.cache_lens[b];
    if (!length_is_valid(len, p.max_cache_len)) {  // read nothing; NaN rows (the combine writes them if it runs)
        if (p.n_splits == 1) {
            const uint4 nan8 = make_uint4(0x7fc07fc0u, 0x7fc07fc0u, 0x7fc07fc0u, 0x7fc07fc0u);  // 8 bf16 NaN
            uint4 *out = reinterpret_cast<uint4 *>(p.o_lat + ((size_t)b * p.n_heads + head0) * kMlaLatent);
            for (int i = threadIdx.x; i < heads * kMlaLatent / 8; i += kThreads) out[i] = nan8;
        }
        return;
    }
    const int T = len + 1;
    const int tok_begin = split * p.split_len;
    const int tok_end = min(T, tok_begin + p.split_len);
    if (tok_begin >= tok_end) {  // empty split (never with one split: T >= 1): the combine never reads its o_partial
        if ((int)threadIdx.x < heads)
            p.lse_partial[((size_t)split * p.batch + b) * p.n_heads + head0 + threadIdx.x] = -INFINITY;
        return;
    }
    const int n_tiles = (tok_end - tok_begin + TILE_T - 1) / TILE_T;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t4 = lane % 4;
    const __nv_bfloat16 *seq = p.kv_cache + (size_t)b * p.cache_batch_stride;

    // ---- async loads: Q once, KV tiles with rows ≥ T zero-filled ----
    {
        const __nv_bfloat16 *q_seq = p.q + (size_t)b * p.q_batch_stride;
        for (int i = tid; i < kFastHeads * kChunksPerRow; i += kThreads) {
            const int r = i / kChunksPerRow, c = i % kChunksPerRow;
            const bool valid = r < heads;
            const __nv_bfloat16 *src = q_seq + (size_t)(valid ? head0 + r : head0) * p.q_head_stride + c * 8;
            cp_async_16(smem_addr(q_s + swizzled(r, c * 8)), src, valid);
        }
    }
    // A thread copies latent chunks (row tid/64 + 4j, chunk tid%64) and, for the rotation, BOTH halves of one row's
    // k_pe chunk pair (pe_row, rope d 8·pe_k..+8 and d + 32..): after its own cp.async.wait_group those 2 chunks are
    // visible to it, so it rotates them before the tile's barrier and the rotation needs no barrier of its own.
    // pe mapping: lane%8 → row, lane/8 → k, so the 8 lanes of an ldmatrix-like phase hit 8 distinct bank groups.
    const int pe_row = 8 * warp + (lane % 8), pe_k = lane / 8;
    const bool pe_owner = pe_row < TILE_T;  // TILE_T = 32: warps 4..7 own no pe chunks
    const bool rotate = p.rope_cos != nullptr;
    auto load_tile = [&](int tile, int stage) {
        const int t_first = tok_begin + tile * TILE_T;
        __nv_bfloat16 *dst = kv_s + (size_t)stage * TILE_T * kMlaRow;
        const int c = tid % (kMlaLatent / 8);
        // not unrolled: unrolled, the compiler keeps all the row addresses live across the tile loop
#pragma unroll 1
        for (int j = 0; j < TILE_T * (kMlaLatent / 8) / kThreads; ++j) {
            const int r = tid / (kMlaLatent / 8) + j * (kThreads / (kMlaLatent / 8));
            const bool valid = t_first + r < T;
            const __nv_bfloat16 *src = seq + (size_t)(valid ? t_first + r : 0) * p.cache_row_stride + c * 8;
            cp_async_16(smem_addr(dst + swizzled(r, c * 8)), src, valid);
        }
        if (pe_owner) {
            const bool valid = t_first + pe_row < T;
            const __nv_bfloat16 *src = seq + (size_t)(valid ? t_first + pe_row : 0) * p.cache_row_stride + kMlaLatent;
            cp_async_16(smem_addr(dst + swizzled(pe_row, kMlaLatent + 8 * pe_k)), src + 8 * pe_k, valid);
            cp_async_16(smem_addr(dst + swizzled(pe_row, kMlaLatent + kMlaRope / 2 + 8 * pe_k)),
                        src + kMlaRope / 2 + 8 * pe_k, valid);
        }
        cp_async_commit();
    };
    static_assert(TILE_T * (kMlaLatent / 8) % kThreads == 0, "tile load is not uniform over the threads");
    static_assert(TILE_T <= 8 * (kThreads / 32), "one k_pe row per lane%8 and warp");
    load_tile(0, 0);  // one group with Q

    // ---- per-warp roles ----
    const int s_row0 = 16 * (warp % 4), s_tok0 = kSTokens * (warp / 4), s_half = warp / 4;
    const int o_row0 = 32 * (warp % 2), o_col0 = 128 * (warp / 2);

    float l_o[2][2];  // running sum of O rows o_row0 + 16·mt + g + 8·hh
    if (tid < kFastHeads) row_max[tid] = -INFINITY;  // visible after the first tile's barrier
    float o_acc[2][kONTiles][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) l_o[mt][hh] = 0.f;
#pragma unroll
        for (int nt = 0; nt < kONTiles; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) o_acc[mt][nt][e] = 0.f;
    }

    const uint32_t q_base = smem_addr(q_s);
    const uint32_t p_base = smem_addr(p_s);
    const uint32_t p_lane = p_base + 2 * ((o_row0 + lane % 16) * kPS + 8 * (lane / 16));
    uint32_t v_lane[kONTiles / 2];
#pragma unroll
    for (int np = 0; np < kONTiles / 2; ++np)
        v_lane[np] = 2 * swizzled(8 * ((lane / 8) % 2) + (lane % 8), o_col0 + 16 * np + 8 * (lane / 16));

    for (int tile = 0; tile < n_tiles; ++tile) {
        const int stage = tile & 1;
        const int m_old_at = stage * kFastHeads, m_new_at = (stage ^ 1) * kFastHeads;  // row_max halves
        const int t_first = tok_begin + tile * TILE_T;
        __nv_bfloat16 *kv = kv_s + (size_t)stage * TILE_T * kMlaRow;
        const uint32_t kv_base = smem_addr(kv);

        // ---- rotate this thread's own k_pe pair of this tile; its tables were prefetched into L1 during the
        //      previous tile. ptxas issues the 4 table loads right after the wait: in steady state the tile landed
        //      during the previous tile, so the wait returns at once and an L1 hit is the exposed latency ----
        const int t_pe = t_first + pe_row;
        const bool rotate_here = rotate && pe_owner && t_pe < T;  // rows ≥ T: zero-filled, tables not read
        if (rotate_here) {
            // one block from the loads to the stores: the 16 table registers are live only here (loaded under one
            // `if` and used under another, they would stay live around the loop and spill)
            const uint4 *cos_t = reinterpret_cast<const uint4 *>(p.rope_cos + (size_t)t_pe * kMlaRope) + pe_k;
            const uint4 *sin_t = reinterpret_cast<const uint4 *>(p.rope_sin + (size_t)t_pe * kMlaRope) + pe_k;
            // rope dims 8·pe_k..+8 (16-byte piece pe_k) and their partners 32 + 8·pe_k..+8 (piece pe_k + 4)
            const uint4 cos_lo = __ldg(cos_t), cos_hi = __ldg(cos_t + kMlaRope / 16);
            const uint4 sin_lo = __ldg(sin_t), sin_hi = __ldg(sin_t + kMlaRope / 16);
            cp_async_wait_all();  // this thread's copies of this tile (and Q) landed and are visible to it
            // rotate this thread's own k_pe pair in place (reference rounding, packed bf16: see rotate_pair).
            // 16-byte accesses: the 8 lanes of a quarter-warp read rows 8·warp + 0..7 at chunk 64 + pe_k swizzled by
            // the row, i.e. 8 distinct 16-byte bank groups
            uint4 *lo_ptr = reinterpret_cast<uint4 *>(kv + swizzled(pe_row, kMlaLatent + 8 * pe_k));
            uint4 *hi_ptr = reinterpret_cast<uint4 *>(kv + swizzled(pe_row, kMlaLatent + kMlaRope / 2 + 8 * pe_k));
            uint4 x_lo = *lo_ptr, x_hi = *hi_ptr;
            rotate_pair(x_lo.x, x_hi.x, cos_lo.x, cos_hi.x, sin_lo.x, sin_hi.x);
            rotate_pair(x_lo.y, x_hi.y, cos_lo.y, cos_hi.y, sin_lo.y, sin_hi.y);
            rotate_pair(x_lo.z, x_hi.z, cos_lo.z, cos_hi.z, sin_lo.z, sin_hi.z);
            rotate_pair(x_lo.w, x_hi.w, cos_lo.w, cos_hi.w, sin_lo.w, sin_hi.w);
            *lo_ptr = x_lo;
            *hi_ptr = x_hi;
        } else {
            cp_async_wait_all();
        }
        __syncthreads();  // this tile (and Q) landed and rotated for everyone; everyone is done with the previous tile
        if (tile + 1 < n_tiles) load_tile(tile + 1, stage ^ 1);
        // the next tile's table rows into L1 (this tile's were read above, so L1 holds one tile's 16 KB of them)
        if (rotate && tile + 1 < n_tiles && tid < 4 * TILE_T) {
            // 2 tables × TILE_T rows × (first and last byte: a 16-byte aligned row may straddle two 128-byte lines)
            const int t = t_first + TILE_T + tid % TILE_T;
            if (t < T) {
                const __nv_bfloat16 *table = (tid / TILE_T) % 2 == 0 ? p.rope_cos : p.rope_sin;
                prefetch_l1(reinterpret_cast<const char *>(table + (size_t)t * kMlaRope) +
                            (tid / (2 * TILE_T)) * (2 * kMlaRope - 1));
            }
        }

        // ---- S = Q·Kᵀ for 16 heads × kSTokens tokens. The tile's tokens ≥ T are masked below whatever S holds, so
        //      the m16n8 pairs of 16 tokens that are all ≥ T are skipped (warp-uniform; the last tile of a
        //      sequence, e.g. T = 513: one valid token, one pair of 4 computed) ----
        float s_acc[kSNTiles][4];
#pragma unroll
        for (int nt = 0; nt < kSNTiles; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) s_acc[nt][e] = 0.f;
        {
            const int s_valid = T - (t_first + s_tok0);  // tokens of this warp's half below T (≤ 0: none)
            const int s_pairs = s_valid <= 0 ? 0 : min(kSNTiles / 2, (s_valid + 15) / 16);
            if (s_pairs == kSNTiles / 2) {
                s_product<kSNTiles / 2>(s_acc, q_base, kv_base, s_row0, s_tok0, lane);
            } else if constexpr (kSNTiles / 2 == 2) {
                if (s_pairs == 1) s_product<1>(s_acc, q_base, kv_base, s_row0, s_tok0, lane);
            }
            static_assert(kSNTiles / 2 <= 2, "TILE_T is 32 or 64");
        }

        // ---- online softmax, step 1: mask tokens ≥ T, tile row max per half ----
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int nt = 0; nt < kSNTiles; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int t = t_first + s_tok0 + nt * 8 + 2 * t4 + (e % 2);
                const float v = t < T ? score_log2(s_acc[nt][e], p.softmax_scale) : -INFINITY;
                s_acc[nt][e] = v;
                mx[e / 2] = fmaxf(mx[e / 2], v);
            }
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(0xffffffffu, mx[hh], 1));
            mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(0xffffffffu, mx[hh], 2));
            if (t4 == 0) tile_max[s_half * kFastHeads + s_row0 + g + 8 * hh] = mx[hh];
        }
        __syncthreads();

        // ---- step 2: new row max, P = exp2(s - m) rounded to bf16 into smem, tile row sums of the rounded P ----
        {
            float m_sub[2], sum[2] = {0.f, 0.f};
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
                const int r = s_row0 + g + 8 * hh;
                const float m_new = fmaxf(row_max[m_old_at + r], fmaxf(tile_max[r], tile_max[kFastHeads + r]));
                if (s_half == 0 && t4 == 0) row_max[m_new_at + r] = m_new;
                m_sub[hh] = m_new == -INFINITY ? 0.f : m_new;  // a fully masked row gives p = 0, not NaN
            }
#pragma unroll
            for (int nt = 0; nt < kSNTiles; ++nt)
#pragma unroll
                for (int hh = 0; hh < 2; ++hh) {
                    const __nv_bfloat162 pp = __floats2bfloat162_rn(exp2f(s_acc[nt][2 * hh] - m_sub[hh]),
                                                                    exp2f(s_acc[nt][2 * hh + 1] - m_sub[hh]));
                    sum[hh] += __low2float(pp) + __high2float(pp);
                    *reinterpret_cast<__nv_bfloat162 *>(p_s + (s_row0 + g + 8 * hh) * kPS + s_tok0 + nt * 8 + 2 * t4) =
                        pp;
                }
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
                sum[hh] += __shfl_xor_sync(0xffffffffu, sum[hh], 1);
                sum[hh] += __shfl_xor_sync(0xffffffffu, sum[hh], 2);
                if (t4 == 0) tile_sum[s_half * kFastHeads + s_row0 + g + 8 * hh] = sum[hh];
            }
        }
        __syncthreads();

        // ---- step 3: rescale O by exp2(m_old - m_new), update l, O += P·V ----
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
                const int r = o_row0 + 16 * mt + g + 8 * hh;
                const float m_old = row_max[m_old_at + r], m_new = row_max[m_new_at + r];
                const float alpha = m_new == -INFINITY ? 1.f : exp2f(m_old - m_new);
                l_o[mt][hh] = l_o[mt][hh] * alpha + tile_sum[r] + tile_sum[kFastHeads + r];
#pragma unroll
                for (int nt = 0; nt < kONTiles; ++nt) {
                    o_acc[mt][nt][2 * hh] *= alpha;
                    o_acc[mt][nt][2 * hh + 1] *= alpha;
                }
            }
        {
            // k-steps of 16 tokens that are all ≥ T are skipped: their P columns are 0 and their V rows zero-filled,
            // so they add exactly nothing (warp-uniform: every warp skips the same k-steps)
            const int pv_steps = min(TILE_T / 16, (T - t_first + 15) / 16);
            if (pv_steps == TILE_T / 16) {
#pragma unroll
                for (int ks = 0; ks < TILE_T / 16; ++ks)
                    pv_kstep<kPS>(o_acc, p_lane, kv_base, v_lane, ks);
            } else {
#pragma unroll 1
                for (int ks = 0; ks < pv_steps; ++ks) pv_kstep<kPS>(o_acc, p_lane, kv_base, v_lane, ks);
            }
        }
    }

    // ---- output. One split per sequence: the normalized o_lat in bf16 (what the combine would write: its weight
    //      is exactly 1). Else this split's normalized partial output (fp32) and its natural-log LSE. ----
    const float *m_final = row_max + (n_tiles % 2) * kFastHeads;
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            const int r = o_row0 + 16 * mt + g + 8 * hh;
            if (r >= heads) continue;
            const float inv_l = 1.f / l_o[mt][hh];
            if (p.n_splits == 1) {
                __nv_bfloat16 *dst = p.o_lat + ((size_t)b * p.n_heads + head0 + r) * kMlaLatent + o_col0 + 2 * t4;
#pragma unroll
                for (int nt = 0; nt < kONTiles; ++nt)
                    *reinterpret_cast<__nv_bfloat162 *>(dst + nt * 8) =
                        __floats2bfloat162_rn(o_acc[mt][nt][2 * hh] * inv_l, o_acc[mt][nt][2 * hh + 1] * inv_l);
            } else {
                const size_t row_out = ((size_t)split * p.batch + b) * p.n_heads + head0 + r;
                float *dst = p.o_partial + row_out * kMlaLatent + o_col0 + 2 * t4;
#pragma unroll
                for (int nt = 0; nt < kONTiles; ++nt)
                    *reinterpret_cast<float2 *>(dst + nt * 8) =
                        make_float2(o_acc[mt][nt][2 * hh] * inv_l, o_acc[mt][nt][2 * hh + 1] * inv_l);
                if (o_col0 == 0 && t4 == 0) p.lse_partial[row_out] = (m_final[r] + log2f(l_o[mt][hh])) * kLn2;
            }
        }
}

template <int TILE_T>
__global__ void __launch_bounds__(kThreads, 1) mla_attention_fast_kernel(const MlaAttentionParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    constexpr bool kBuilt = TILE_T <= 32;  // 64-token tiles need Hopper's 227 KB of smem: sm_8x never launches them
#else
    constexpr bool kBuilt = true;
#endif
    if constexpr (kBuilt) fast_attention<TILE_T>(p);
}

// ============================================================================================================
// combine: o_lat[b][h] = Σ_s w_s·o_s (s ascending, fp32), w_s = exp(lse_s − max) / Σ exp(lse − max), then bf16.
// v1 (a warp per head, 16 columns a lane, one split after the other) is a serial chain of two dependent loads per
// split (lse_s, then o_s): ~0.4 µs a split, 26 µs of the layer's 45 µs attention at batch 1 and 4096 (65 splits of
// one tile each). v2: SLICES warps a head (512 / SLICES columns each), so a small batch has more warps, and the splits
// CHUNK at a time: their lse in one load (a lane each), then all their o_s rows in flight together, summed in the
// same order with the same expression (bit-identical to v1). Many warps need none of that: <1, 1> is v1's schedule
// (a split at a time); the launcher picks the most slices whose warps all fit on the GPU at once (more slices with
// more warps than fit lost: batch 16 went from 26 to 32 µs with <4, 16>, its 1,024 blocks of 120 registers a thread
// in four waves; the launch bounds now hold every variant to kCombineBlocksPerSm blocks an SM, 56-64 registers).
// Splits past T are not read; an empty split (lse = −inf) was never written and is not read either.
// ============================================================================================================
constexpr int kCombineBlocksPerSm = 4;  // forced by the launch bounds (≤ 64 registers a thread): what the launcher counts on

template <int SLICES, int CHUNK>
__global__ void __launch_bounds__(kThreads, kCombineBlocksPerSm) mla_attention_combine_kernel(const MlaAttentionParams p) {
    constexpr int kHeadsPerBlock = kThreads / 32 / SLICES;
    constexpr int kF4 = kMlaLatent / 4 / 32 / SLICES;  // float4s a lane holds of each split's row
    static_assert(kF4 * 4 * 32 * SLICES == kMlaLatent && CHUNK <= 32, "the row over the slices' lanes");
    const int groups = p.n_heads / kHeadsPerBlock;
    const int b = blockIdx.x / groups;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int h = (blockIdx.x % groups) * kHeadsPerBlock + warp / SLICES;
    const int f4 = (warp % SLICES) * 32 * kF4 + lane;  // this lane's first float4 of the row; then every 32
    __nv_bfloat16 *out = p.o_lat + ((size_t)b * p.n_heads + h) * kMlaLatent;

    // the rows to merge: the static splits (row s · batch + b, those T reaches), or the sequence's run-time pieces
    // (rows slot0 + s; none where it ran whole: the attention wrote its o_lat, NaN rows for an invalid length too)
    int n_valid, row0, row_step;
    if (p.seq_pieces) {
        const int sp = p.seq_pieces[b];
        if (sp == 0) return;
        row0 = mla_piece_slot0(sp), n_valid = mla_piece_count(sp), row_step = 1;
    } else {
        const int len = p.cache_lens[b];
        if (!length_is_valid(len, p.max_cache_len)) {
            const __nv_bfloat16 nan = __float2bfloat16(NAN);
            for (int j = 0; j < kF4; j++)
                for (int c = 0; c < 4; c++) out[4 * (f4 + 32 * j) + c] = nan;
            return;
        }
        row0 = b, n_valid = (len + 1 + p.split_len - 1) / p.split_len, row_step = p.batch;
    }
    auto lse_of = [&](int s) { return p.lse_partial[((size_t)s * row_step + row0) * p.n_heads + h]; };

    float mx = -INFINITY;
    for (int s = lane; s < n_valid; s += 32) mx = fmaxf(mx, lse_of(s));
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float den = 0.f;
    for (int s = lane; s < n_valid; s += 32) den += expf(lse_of(s) - mx);
    for (int o = 16; o > 0; o /= 2) den += __shfl_xor_sync(0xffffffffu, den, o);
    const float inv_den = 1.f / den;

    const float4 *src = reinterpret_cast<const float4 *>(p.o_partial + ((size_t)row0 * p.n_heads + h) * kMlaLatent) + f4;
    const size_t split_stride4 = (size_t)row_step * p.n_heads * kMlaLatent / 4;  // float4s from one row to the next
    float4 acc[kF4];
    for (int j = 0; j < kF4; j++) acc[j] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s0 = 0; s0 < n_valid; s0 += CHUNK) {
        const float lse_lane = lane < CHUNK && s0 + lane < n_valid ? lse_of(s0 + lane) : -INFINITY;
        float lse[CHUNK];
        float4 v[CHUNK][kF4];
#pragma unroll
        for (int u = 0; u < CHUNK; u++) {
            lse[u] = __shfl_sync(0xffffffffu, lse_lane, u);  // −inf past n_valid
#pragma unroll
            for (int j = 0; j < kF4; j++)
                v[u][j] = lse[u] == -INFINITY ? make_float4(0.f, 0.f, 0.f, 0.f)
                                              : src[(size_t)(s0 + u) * split_stride4 + 32 * j];
        }
#pragma unroll
        for (int u = 0; u < CHUNK; u++) {
            if (lse[u] == -INFINITY) continue;
            const float w = expf(lse[u] - mx) * inv_den;
#pragma unroll
            for (int j = 0; j < kF4; j++)
                acc[j].x += w * v[u][j].x, acc[j].y += w * v[u][j].y, acc[j].z += w * v[u][j].z,
                    acc[j].w += w * v[u][j].w;
        }
    }
    for (int j = 0; j < kF4; j++) {
        const __nv_bfloat162 lo = __floats2bfloat162_rn(acc[j].x, acc[j].y);
        const __nv_bfloat162 hi = __floats2bfloat162_rn(acc[j].z, acc[j].w);
        uint2 packed;
        memcpy(&packed.x, &lo, 4);
        memcpy(&packed.y, &hi, 4);
        *reinterpret_cast<uint2 *>(out + 4 * (f4 + 32 * j)) = packed;
    }
    // discard_partial: the rows are read for good; a line (8 float4) is this warp's, read by 8 of its lanes in one load
    // instruction, so its first lane drops it. After the stores above: they waited for every load (a warp issues in
    // order), and __syncwarp has every lane past its own. Empty splits' rows were neither written nor read: dropped too.
    if (p.discard_partial) {
        __syncwarp();
        if (lane % 8 == 0)
            for (int s = 0; s < n_valid; s++)
                for (int j = 0; j < kF4; j++) ptx::discard_l2(src + (size_t)s * split_stride4 + 32 * j);
    }
}

// Launch the combine: the most slices (4, 2, 1) whose warps the GPU holds at once (kCombineBlocksPerSm blocks an SM).
// A plain launch: with programmatic dependent launch (its CTAs waiting on the SMs the attention leaves) it gained
// ≤ 0.5 µs, and lost 9 µs at batch 1 and 4096 where the attention triggers its dependents at its start (the layer's
// early W_UV launch; bench/results/2026-11-28-h200-batches, call 4).
template <int SLICES, int CHUNK>
void combine_launch(const MlaAttentionParams &p, cudaStream_t stream) {
    const unsigned blocks = (unsigned)((long long)p.batch * (p.n_heads / (kThreads / 32 / SLICES)));
    MlaAttentionParams pc = p;
    pc.discard_partial = p.discard_partial && reinterpret_cast<uintptr_t>(p.o_partial) % 128 == 0;  // whole lines
    mla_attention_combine_kernel<SLICES, CHUNK><<<blocks, kThreads, 0, stream>>>(pc);
}

cudaError_t mla_attention_combine_launch(const MlaAttentionParams &p, int device, cudaStream_t stream) {
    int sms = 0;
    const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (e != cudaSuccess) return e;
    const long long warps_per_slice = (long long)p.batch * p.n_heads;
    const long long resident = (long long)sms * kCombineBlocksPerSm * (kThreads / 32);
    if (warps_per_slice * 4 <= resident) combine_launch<4, 8>(p, stream);
    else if (warps_per_slice * 2 <= resident) combine_launch<2, 4>(p, stream);
    else combine_launch<1, 1>(p, stream);
    return cudaGetLastError();
}

// LATTE_MLA_ATTENTION (a benchmark, test and bisection knob; read once): "mma" the mma.sync kernel even where the wgmma
// ones run; "wgmma2" the v2.1 wgmma kernel instead of v3 (seesaw + TMA); "wgmma3" v3 or an error (no fallback to v2.1
// where the cache cannot be described as a TMA map: the tests use it to know which kernel they checked).
constexpr int kChoiceAuto = 0, kChoiceMma = 1, kChoiceWgmma2 = 2, kChoiceWgmma3 = 3;
int attention_kernel_choice() {
    static const int choice = [] {
        const char *v = std::getenv("LATTE_MLA_ATTENTION");
        if (v == nullptr) return kChoiceAuto;
        if (std::strcmp(v, "mma") == 0) return kChoiceMma;
        if (std::strcmp(v, "wgmma2") == 0) return kChoiceWgmma2;
        if (std::strcmp(v, "wgmma3") == 0) return kChoiceWgmma3;
        return kChoiceAuto;
    }();
    return choice;
}

bool simple_attention_requested() {
    static const bool requested = [] {
        const char *v = std::getenv("LATTE_MLA_SIMPLE_ATTENTION");
        return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
    }();
    return requested;
}

// A fast kernel's dynamic smem limit, raised once per device.
template <int TILE_T>
cudaError_t prepare_fast_kernel(int device) {
    return smem_optin_once<mla_attention_fast_kernel<TILE_T>>(FastLayout<TILE_T>::kSmemBytes, device);
}

}  // namespace

// The schedule minimizes a cost model in units of one 64-token tile of the fast kernel (≈ 5–6 µs on an H100/H200 SM):
//   cost(n) = waves(n) · (kFixedTiles + tiles per split) + (n > 1 ? combine(n) : 0),
//   waves(n) = ⌈blocks·n / SMs⌉ (one block per SM: the fast kernel takes ~227 KB of smem),
//   kFixedTiles = 1 (Q, 72 KB, is loaded with the first tile and not overlapped; the output is written at the end),
//   combine(n) = 0.5 (a launch) + the o_partial round trip (written by the split kernel, read by the combine:
//               2·n·batch·heads·2 KB) at ≈ 160 KB per SM per tile time (≈ 3.5 TB/s over 132 SMs at ~6 µs a tile).
// E.g. batch 128 × 2 head groups on 132 SMs: no split (2 waves, no combine, no fp32 partials) at every length;
// batch 1: ~one split per SM. Ties keep fewer splits. Deterministic: a function of the arguments only.
void mla_attention_schedule(int batch, int n_heads, int max_cache_len, int sm_count, int *n_splits, int *split_len) {
    constexpr long long kTile = 64;
    constexpr double kFixedTiles = 1.0, kCombineLaunchTiles = 0.5, kBytesPerSmTile = 160.0 * 1024;
    const long long tokens = (long long)(max_cache_len > 0 ? max_cache_len : 0) + 1;
    const long long tiles = (tokens + kTile - 1) / kTile;
    const long long groups = n_heads > kFastHeads ? (n_heads + kFastHeads - 1) / kFastHeads : 1;
    const long long blocks = (long long)(batch > 0 ? batch : 1) * groups;
    const long long sms = sm_count > 0 ? sm_count : 132;
    const long long heads = n_heads > 0 ? n_heads : 1;
    long long best_tiles = tiles;  // tiles per split
    double best_cost = -1.0;
    for (long long n = 1; n <= tiles; ++n) {
        const long long per_split = (tiles + n - 1) / n;
        const long long splits = (tiles + per_split - 1) / per_split;  // what n really gives
        if (splits != n) continue;
        const long long waves = (blocks * n + sms - 1) / sms;
        double cost = (double)waves * (kFixedTiles + (double)per_split);
        if (n > 1)
            cost += kCombineLaunchTiles + 2.0 * (double)n * (double)(batch > 0 ? batch : 1) * (double)heads *
                                              kMlaLatent * sizeof(float) / ((double)sms * kBytesPerSmTile);
        if (best_cost < 0.0 || cost < best_cost) best_cost = cost, best_tiles = per_split;
    }
    *split_len = (int)(best_tiles * kTile);
    *n_splits = (int)((tokens + *split_len - 1) / *split_len);
}

size_t mla_attention_schedule_offset(int batch, int n_heads, int n_splits) {
    const size_t rows = (size_t)n_splits * batch * n_heads;
    return (rows * kMlaLatent * sizeof(float) + rows * sizeof(float) + 255) & ~(size_t)255;
}

size_t mla_attention_workspace_bytes(int batch, int n_heads, int n_splits) {
    // the list, then the run-time pieces, their counters and each sequence's pieces (mla_schedule_pieces)
    const size_t groups = (size_t)(n_heads + kMlaScheduleGroupHeads - 1) / kMlaScheduleGroupHeads;
    return mla_attention_schedule_offset(batch, n_heads, n_splits) +
           (size_t)kMlaScheduleCtasMax * kMlaScheduleRounds * sizeof(int) + (size_t)kMlaScheduleUnitsMax * sizeof(MlaPiece) +
           (size_t)batch * groups * sizeof(int) + (size_t)batch * sizeof(int);
}

cudaError_t mla_attention_launch(const MlaAttentionParams &p, cudaStream_t stream, MlaCombineDeferred *deferred) {
    if (deferred) *deferred = MlaCombineDeferred();
    if (p.batch <= 0) return cudaSuccess;
    if (p.n_heads <= 0 || p.n_heads % 16 != 0 || p.n_heads > 128 || p.n_splits <= 0 || p.split_len <= 0 ||
        p.split_len % 64 != 0 || (long long)p.n_splits * p.split_len < (long long)p.max_cache_len + 1)
        return cudaErrorInvalidValue;
    // cp.async moves 16-byte chunks; o_partial is written as float2 and read as float4
    const auto misaligned = [](const void *ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 != 0; };
    // the fast kernel reads the rope tables in 16-byte pieces (the API layer requires 16-byte aligned tables)
    if (misaligned(p.q) || misaligned(p.kv_cache) || misaligned(p.o_partial) || misaligned(p.o_lat) ||
        misaligned(p.rope_cos) || misaligned(p.rope_sin) ||
        p.q_batch_stride % 8 != 0 || p.q_head_stride % 8 != 0 || p.cache_batch_stride % 8 != 0 ||
        p.cache_row_stride % 8 != 0)
        return cudaErrorMisalignedAddress;

    int device = 0, smem_optin = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess) return e;
    e = cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (e != cudaSuccess) return e;

    const long long groups_simple = p.n_heads / kSimpleHeads;
    const long long groups_fast = (p.n_heads + kFastHeads - 1) / kFastHeads;
    const long long per_split = (long long)p.n_splits * p.batch;
    if (per_split * groups_simple > 0x7fffffffLL) return cudaErrorInvalidValue;

    // 64-token tiles need ~227 KB of smem (Hopper); 32-token tiles ~150 KB (A100); else the simple kernel.
    // With one split per sequence the fast kernel writes o_lat itself and there is no combine.
    bool combine = true;
    if (!simple_attention_requested() && attention_kernel_choice() != kChoiceMma && mla_attention_wgmma_available(device)) {
        int piece_slots = 0;
        e = attention_kernel_choice() == kChoiceWgmma2 ? cudaErrorNotSupported
                                                       : mla_attention_seesaw_launch(p, device, stream, &piece_slots);
        // the seesaw kernel may have run the static splits as one split with run-time pieces: the combine merges those
        if (e == cudaSuccess && piece_slots > 0) {
            MlaAttentionParams pc = p;
            pc.seq_pieces = mla_schedule_seq_pieces(p.schedule, p.batch, (p.n_heads + kMlaScheduleGroupHeads - 1) / kMlaScheduleGroupHeads);
            if (deferred) {
                deferred->needed = 1;
                deferred->seq_pieces = pc.seq_pieces;
                return cudaSuccess;
            }
            return mla_attention_combine_launch(pc, device, stream);
        }
        if (e == cudaErrorNotSupported && attention_kernel_choice() != kChoiceWgmma3)
            e = mla_attention_wgmma_launch(p, device, stream);  // v2.1: no TMA map needed
        if (e != cudaSuccess) return e;
        combine = p.n_splits > 1;
    } else if (!simple_attention_requested() && (size_t)smem_optin >= FastLayout<64>::kSmemBytes) {
        if ((e = prepare_fast_kernel<64>(device)) != cudaSuccess) return e;
        mla_attention_fast_kernel<64>
            <<<(unsigned)(per_split * groups_fast), kThreads, FastLayout<64>::kSmemBytes, stream>>>(p);
        combine = p.n_splits > 1;
    } else if (!simple_attention_requested() && (size_t)smem_optin >= FastLayout<32>::kSmemBytes) {
        if ((e = prepare_fast_kernel<32>(device)) != cudaSuccess) return e;
        mla_attention_fast_kernel<32>
            <<<(unsigned)(per_split * groups_fast), kThreads, FastLayout<32>::kSmemBytes, stream>>>(p);
        combine = p.n_splits > 1;
    } else {
        mla_attention_simple_kernel<<<(unsigned)(per_split * groups_simple), kThreads, 0, stream>>>(p);
    }
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
    if (!combine) return cudaSuccess;
    if (deferred) {
        deferred->needed = 1;
        return cudaSuccess;
    }
    return mla_attention_combine_launch(p, device, stream);
}

}  // namespace latte
