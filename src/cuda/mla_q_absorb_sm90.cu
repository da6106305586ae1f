// The query side of the MLA decode step on Hopper: up projection + query rope + W_UK absorption in one kernel.
//
// What and why: unfused, this is three launches (mla_plan.cu b, c, d): the up projection streams Wq_up (75.5 MB) into
// q [batch][H·192], a small kernel ropes q_pe into q_attn, and a GEMM batched over the heads multiplies each head's
// q_nope by W_UK[h] (16.8 MB). On an H200 the three took ~38 µs (cuBLASLt tuned: 23.4 + 13.2, plus the rope) against
// ~22 µs for their 92 MB of weights at copy bandwidth: the W_UK GEMM moves 128 KB of weights per head, too little per
// CTA to stream well (1.3 TB/s), and q makes a round trip through memory. Here one CTA owns a (head, 128 sequences)
// tile from end to end: the up projection's 192 columns of the head, whose fp32 accumulators, rounded to bf16 (the
// spec's rounding of q), are already the register A operand of the W_UK product; the rope is done in registers (a
// column's partner i ^ 32 sits in the same thread); W_UK[h]ᵀ arrives through the same ring of stages as Wq_up, so its
// loads overlap the up projection. The floor is the weights at copy bandwidth.
//
// Reference: the unfused path (gemm_sm90 / cuBLASLt for the products, mla_q_rope_kernel in mla_small_kernels.cu for
// the rope, the same bf16 roundings); tests/gpu_mla.c checks the layer against the CPU backend with this kernel on
// (the default on Hopper) and off (LATTE_MLA_Q_FUSED=0).
//
// The kernel (one version):
//   * tile = 128 rows of q_lora (two consumer warpgroups of 64) × one head. Phase 1, per k-iteration of 64: Wq_up's
//     192 rows of the head (24 KB) and the q_lora tile (16 KB) land by TMA in the 128-byte swizzle, each warpgroup
//     issues 4 wgmma m64n192k16. Phase 2, four stages of W_UK[h]ᵀ (128 latent rows × the 128 nope columns, 32 KB
//     each): 8 wgmma m64n128k16 with A = q_nope from registers.
//   * a producer warp keeps 5 stages of 40 KB in flight across tiles and phases (full[s]: the TMA bytes; empty[s]: one
//     arrival per consumer warp once its wgmma on s are done). Weights evict-first in L2, q_lora evict-last.
//   * stores: each warp stages 16 rows × 64 columns in the 128-byte swizzle and writes them by one TMA store (rows
//     past the batch are clipped by the unit); 9 chunks per warp and tile (8 of q_lat, 1 of rotated q_pe).
//   * persistent: CTA c takes tiles [c·T/G, (c+1)·T/G), tile = head · m_tiles + m_tile (a CTA with two tiles of one
//     head re-reads its weights from L2). PDL: the first stages' weights are requested before griddepcontrol.wait.
//   * the cache append (optional, kv_row set): CTA c's consumer threads write the rows of sequences c, c + G, ... right
//     after griddepcontrol.wait, while the first stages are still landing (the layer's down epilogue kernel is then not
//     launched: one launch fewer, and q_lora is read in place from the down projection's output).
#include "cuda/mla_q_absorb_sm90.cuh"
#include "cuda/launch.cuh"
#include "cuda/mla_small_kernels.cuh"
#include "cuda/ptx.cuh"
#include "cuda/smem_optin.cuh"
#include "cuda/tma.cuh"


namespace latte {
namespace {

constexpr int kBM = 128;                            // q_lora rows per tile
constexpr int kBK = 64;                             // k per phase-1 stage: one 128-byte swizzle row
constexpr int kQHead = 192, kNope = 128, kR = 512, kP = 64, kRow = kR + kP;
constexpr int kUkChunks = kR / 128;                 // phase-2 stages per tile: 128 latent rows each
constexpr int kConsumerWarps = 8;
constexpr int kThreads = 32 * kConsumerWarps + 32;  // + the producer warp
constexpr int kStages = 5;
constexpr uint32_t kBBytes = kQHead * 128u;         // Wq_up rows of the head × 64 k (24 KB)
constexpr uint32_t kABytes = kBM * 128u;            // q_lora rows × 64 k (16 KB)
constexpr uint32_t kStageBytes = kBBytes + kABytes; // 40 KB, a multiple of 1024
constexpr uint32_t kUkHalfBytes = 128 * 128u;       // W_UK[h]ᵀ: 128 latent rows × 64 nope columns (16 KB)
constexpr uint32_t kUkBytes = 2 * kUkHalfBytes;
constexpr uint32_t kStoreOff = kStages * kStageBytes;              // 2 KB of store staging per consumer warp
constexpr uint32_t kBarOff = kStoreOff + kConsumerWarps * 2048u;   // full[], empty[]
constexpr size_t kSmemBytes = kBarOff + 16 * kStages + 1024;       // + slack to align the base
static_assert(kSmemBytes <= 232448, "stages fit the 227 KB a Hopper block may opt into");
static_assert(kUkBytes <= kStageBytes && kUkChunks * 128 == kR, "a W_UK stage fits a stage; the stages cover W_UK[h]");

struct QAbsorbParams {
    int64_t M;
    int H, k_iters, m_tiles, tiles;
    int uk_chunks;  // kUkChunks (dev flag 8: 0, the up projection alone)
    const int32_t *cache_lens;
    int64_t max_cache_len;
    const __nv_bfloat16 *rope_cos, *rope_sin;
    int dev_flags;
    // the cache append (kv_row null: none); see MlaQAbsorbArgs
    const __nv_bfloat16 *kv_row;
    int64_t kv_row_stride;
    __nv_bfloat16 *kv_cache;
    int64_t cache_batch_stride, cache_row_stride;
    int rotate_keys;
    unsigned long long *bad_lengths;
    int tile_grid;  // CTAs that take tiles; a CTA beyond them writes the attention's list (attn.list set)
    MlaScheduleArgs attn;
};

#if LATTE_PTX_SM90A
// The CTA's stream of stages: per tile, k_iters of (Wq_up, q_lora), then kUkChunks of W_UK[h]ᵀ.
struct StageWalk {
    int tile, tile_end, i;
    __device__ __forceinline__ bool next(const QAbsorbParams &p) {
        if (++i == p.k_iters + p.uk_chunks) i = 0, ++tile;
        return tile < tile_end;
    }
};

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t *>(&v);
}
__device__ __forceinline__ float bf16_round(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

// The spare CTA's work (MlaQAbsorbArgs::attn): the attention's list. Out of line: nothing of it enters the tiles'
// register allocation. `key`: shared memory of kMlaScheduleSmemInts ints.
__device__ __noinline__ void write_attention_schedule(const QAbsorbParams &p, int *key) { mla_schedule_write(p.attn, key); }
static_assert(kSmemBytes >= kMlaScheduleSmemInts * sizeof(int) + 1024, "the list's writer fits the CTA's shared memory");
#endif

__global__ void __launch_bounds__(kThreads, 1)
    mla_q_absorb_sm90_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                             const __grid_constant__ CUtensorMap u_map, const __grid_constant__ CUtensorMap o_map,
                             const __grid_constant__ QAbsorbParams p) {
#if LATTE_PTX_SM90A
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw_u32 = ptx::smem_u32(smem_raw);
    unsigned char *smem = smem_raw + (((raw_u32 + 1023u) & ~1023u) - raw_u32);
    const uint32_t base = ptx::smem_u32(smem);
    const uint32_t full0 = base + kBarOff, empty0 = full0 + 8u * kStages;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    if ((int)blockIdx.x >= p.tile_grid) {  // the attention's schedule (this CTA is launched only with attn.list set)
        write_attention_schedule(p, reinterpret_cast<int *>(smem));
        return;
    }

    if (tid == 0) {
        for (int s = 0; s < kStages; s++) {
            ptx::mbarrier_init(full0 + 8u * s, 1);                // the producer's arrive.expect_tx
            ptx::mbarrier_init(empty0 + 8u * s, kConsumerWarps);  // one arrival per consumer warp
        }
        ptx::fence_mbarrier_init();
    }
    __syncthreads();
    ptx::griddep_launch_dependents();

    const int grid = p.tile_grid, cta = blockIdx.x;
    const int t_begin = (int)((unsigned)cta * (unsigned)p.tiles / (unsigned)grid);
    const int t_end = (int)((unsigned)(cta + 1) * (unsigned)p.tiles / (unsigned)grid);
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0);  // warp-uniform for ptxas (the wgmma stay asynchronous)

    if (wg == kConsumerWarps / 4) {
        // ---- producer warp: one thread issues every copy ----
        if (lane == 0) {
            const uint64_t pol_w = ptx::l2_policy_evict_first(), pol_a = ptx::l2_policy_evict_last();
            auto bytes = [&](const StageWalk &w) { return w.i < p.k_iters ? kStageBytes : kUkBytes; };
            auto load_weights = [&](int n, const StageWalk &w) {
                const uint32_t dst = base + (uint32_t)(n % kStages) * kStageBytes, bar = full0 + 8u * (n % kStages);
                const int h = w.tile / p.m_tiles;
                if (w.i < p.k_iters) {
                    ptx::tma_load_3d_hint(dst, &b_map, w.i * kBK, h * kQHead, 0, bar, pol_w);
                } else {
                    const int c = w.i - p.k_iters;
                    ptx::tma_load_3d_hint(dst, &u_map, 0, 128 * c, h, bar, pol_w);
                    ptx::tma_load_3d_hint(dst + kUkHalfBytes, &u_map, 64, 128 * c, h, bar, pol_w);
                }
            };
            auto load_a = [&](int n, const StageWalk &w) {
                if (w.i >= p.k_iters) return;
                const uint32_t dst = base + (uint32_t)(n % kStages) * kStageBytes + kBBytes;
                ptx::tma_load_3d_hint(dst, &a_map, w.i * kBK, (w.tile % p.m_tiles) * kBM, 0, full0 + 8u * (n % kStages),
                                      pol_a);
            };
            // the first stages' weights before the previous grid is done (they never depend on it), q_lora after
            StageWalk cur{t_begin, t_end, -1};
            int n = 0;
            for (; n < kStages && cur.next(p); n++) {
                ptx::mbarrier_arrive_expect_tx(full0 + 8u * n, bytes(cur));
                load_weights(n, cur);
            }
            const int first = n;
            ptx::griddep_wait();
            {
                StageWalk w{t_begin, t_end, -1};
                for (int i = 0; i < first && w.next(p); i++) load_a(i, w);
            }
            for (; cur.next(p); n++) {  // wait for the consumers to free the stage, then refill it
                const int st = n % kStages;
                ptx::mbarrier_wait(empty0 + 8u * st, (uint32_t)((n / kStages - 1) & 1));
                ptx::mbarrier_arrive_expect_tx(full0 + 8u * st, bytes(cur));
                load_weights(n, cur);
                load_a(n, cur);
            }
        }
        return;
    }

    // ---- consumers: warpgroup wg owns rows 64·wg .. 64·wg + 63 of the tile; warp q of it rows 16q .. 16q + 15 ----
    ptx::griddep_wait();  // q_lora and nothing stored before the previous grid is done
    if (p.kv_row) {
        // the cache append of sequences cta, cta + grid, ...: 576 elements a row over the 256 consumer threads (the
        // first stages are landing meanwhile; nothing of this stays live into the tiles)
#pragma unroll 1
        for (int64_t b = cta; b < p.M; b += grid) {
            const int32_t len = __ldg(p.cache_lens + b);
            if (len < 0 || (int64_t)len > p.max_cache_len) {  // invalid: nothing appended, nothing read from the tables
                if (tid == 0) atomicAdd(p.bad_lengths, 1ull);
                continue;
            }
            const __nv_bfloat16 *row = p.kv_row + b * p.kv_row_stride;
            __nv_bfloat16 *dst = p.kv_cache + b * p.cache_batch_stride + (int64_t)len * p.cache_row_stride;
#pragma unroll 1
            for (int j = tid; j < kRow; j += 32 * kConsumerWarps) {
                __nv_bfloat16 v = row[j];
                if (p.rotate_keys && j >= kR) {
                    const int i = j - kR;
                    v = mla_rope_elem(__bfloat162float(v), __bfloat162float(row[kR + (i ^ 32)]), i,
                                      p.rope_cos + (int64_t)len * kP, p.rope_sin + (int64_t)len * kP);
                }
                dst[j] = v;
            }
        }
    }
    const int q = warp % 4, g = lane / 4, t4 = lane % 4;
    unsigned char *stage_smem = smem + kStoreOff + 2048u * warp;
    const uint32_t stage_u32 = base + kStoreOff + 2048u * warp;
    const bool stores = !(p.dev_flags & 4);
    // one 16 × 64 chunk of the warp's rows to the q_attn box at column col0 of head h: the two bf16x2 of each
    // 8-column group j (rows g and g + 8) from v[4j..4j+3], through the staging (16-byte unit u of row r at u ^ (r % 8):
    // the TMA 128-byte swizzle, conflict-free for these writes), then one TMA store by lane 0
    auto store_chunk = [&](const uint32_t (&v)[16], int col0, int h, int row0) {
        if (lane == 0) ptx::bulk_wait_read();  // the previous chunk's store has read the staging
        __syncwarp();
#pragma unroll
        for (int j = 0; j < 8; j++) {
            *reinterpret_cast<uint32_t *>(stage_smem + g * 128 + ((j ^ g) << 4) + 4 * t4) = v[2 * j];
            *reinterpret_cast<uint32_t *>(stage_smem + (g + 8) * 128 + ((j ^ g) << 4) + 4 * t4) = v[2 * j + 1];
        }
        ptx::fence_proxy_async_smem();
        __syncwarp();
        if (lane == 0 && stores && row0 < p.M) {
            ptx::tma_store_3d(&o_map, col0, h, row0, stage_u32);
            ptx::bulk_commit();
        }
    };

    int n = 0;  // stages consumed
    for (int tile = t_begin; tile < t_end; tile++) {
        const int h = tile / p.m_tiles;
        const int64_t m0 = (int64_t)(tile % p.m_tiles) * kBM;
        const int row0 = (int)(m0 + 64 * wg + 16 * q);  // the warp's first row (< 2^31: batch is)

        // phase 1: q[rows][0:192] of head h in fp32
        float acc[96];
#pragma unroll
        for (int i = 0; i < 96; i++) acc[i] = 0.0f;
        for (int k = 0; k < p.k_iters; k++, n++) {
            const int s = n % kStages;
            ptx::mbarrier_wait(full0 + 8u * s, (uint32_t)((n / kStages) & 1));
            const uint32_t b_s = base + (uint32_t)s * kStageBytes, a_s = b_s + kBBytes + (uint32_t)wg * 8192u;
            ptx::wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                ptx::wgmma_m64n192k16_ss(acc, ptx::wgmma_desc_sw128(a_s + 32u * kk, 16, 1024),
                                         ptx::wgmma_desc_sw128(b_s + 32u * kk, 16, 1024));
            ptx::wgmma_commit();
            ptx::wgmma_wait<0>();
            if (lane == 0) ptx::mbarrier_arrive(empty0 + 8u * s);
        }

        // q rounded to bf16 (the spec's rounding). q_nope (columns 0..127, groups j = 0..15) becomes the register A
        // operand of phase 2: for k-step kk, a0..a3 = (row g, cols 16kk + 2t4), (g + 8, same), (g, + 8), (g + 8, + 8)
        uint32_t qa[32];
#pragma unroll
        for (int kk = 0; kk < 8; kk++) {
            qa[4 * kk + 0] = pack_bf16(acc[8 * kk + 0], acc[8 * kk + 1]);
            qa[4 * kk + 1] = pack_bf16(acc[8 * kk + 2], acc[8 * kk + 3]);
            qa[4 * kk + 2] = pack_bf16(acc[8 * kk + 4], acc[8 * kk + 5]);
            qa[4 * kk + 3] = pack_bf16(acc[8 * kk + 6], acc[8 * kk + 7]);
        }
        // q_pe (columns 128..191, groups j = 16..23): rope at each row's position. Element i = 8(j-16) + 2t4 + e
        // pairs with i ^ 32, i.e. group j ^ 4 of the same thread. rope_bf16(x)[i] = bf16(bf16(x_i·cos_i) +
        // bf16(rot_i·sin_i)), rot_i = -x_{i+32} (i < 32) or x_{i-32}, as mla_q_rope_kernel (no FMA contraction).
        {
            uint32_t pe[16];
#pragma unroll
            for (int half = 0; half < 2; half++) {  // row g, then row g + 8
                const int64_t m = (int64_t)row0 + g + 8 * half;
                int64_t pos = 0;
                if (m < p.M) {
                    const int32_t len = __ldg(p.cache_lens + m);
                    pos = len >= 0 && (int64_t)len <= p.max_cache_len ? len : 0;  // invalid: the attention makes it NaN
                }
                const __nv_bfloat162 *cos_row = reinterpret_cast<const __nv_bfloat162 *>(p.rope_cos + pos * kP);
                const __nv_bfloat162 *sin_row = reinterpret_cast<const __nv_bfloat162 *>(p.rope_sin + pos * kP);
#pragma unroll
                for (int jj = 0; jj < 8; jj++) {  // group 16 + jj, elements i = 8jj + 2t4 + e
                    const float2 cs = __bfloat1622float2(__ldg(cos_row + 4 * jj + t4));
                    const float2 sn = __bfloat1622float2(__ldg(sin_row + 4 * jj + t4));
                    const float *x = acc + 4 * (16 + jj) + 2 * half, *xp = acc + 4 * (16 + (jj ^ 4)) + 2 * half;
                    float r[2];
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const float xi = bf16_round(x[e]), xpi = bf16_round(xp[e]);
                        const float rot = jj < 4 ? -xpi : xpi;
                        const float a = bf16_round(__fmul_rn(xi, e ? cs.y : cs.x));
                        const float b = bf16_round(__fmul_rn(rot, e ? sn.y : sn.x));
                        r[e] = __fadd_rn(a, b);
                    }
                    pe[2 * jj + half] = pack_bf16(r[0], r[1]);
                }
            }
            store_chunk(pe, kR, h, row0);
        }

        // phase 2: q_lat[rows][128c .. 128c + 127] = q_nope · W_UK[h][:, 128c ..], one stage of W_UK[h]ᵀ each
#pragma unroll 1
        for (int c = 0; c < p.uk_chunks; c++, n++) {
            const int s = n % kStages;
            ptx::mbarrier_wait(full0 + 8u * s, (uint32_t)((n / kStages) & 1));
            const uint32_t u_s = base + (uint32_t)s * kStageBytes;
            float o[64];
#pragma unroll
            for (int i = 0; i < 64; i++) o[i] = 0.0f;
            ptx::wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 8; kk++) {
                const uint32_t a[4] = {qa[4 * kk], qa[4 * kk + 1], qa[4 * kk + 2], qa[4 * kk + 3]};
                ptx::wgmma_m64n128k16_rs(o, a, ptx::wgmma_desc_sw128(u_s + (uint32_t)(kk / 4) * kUkHalfBytes + 32u * (kk % 4),
                                                                     16, 1024));
            }
            ptx::wgmma_commit();
            ptx::wgmma_wait<0>();
            if (lane == 0) ptx::mbarrier_arrive(empty0 + 8u * s);
#pragma unroll
            for (int half = 0; half < 2; half++) {  // columns 64·half .. + 63 of the chunk
                uint32_t v[16];
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    v[2 * j] = pack_bf16(o[4 * (8 * half + j)], o[4 * (8 * half + j) + 1]);
                    v[2 * j + 1] = pack_bf16(o[4 * (8 * half + j) + 2], o[4 * (8 * half + j) + 3]);
                }
                store_chunk(v, 128 * c + 64 * half, h, row0);
            }
        }
    }
    if (lane == 0) ptx::bulk_wait();  // the stores have completed before the CTA (and its shared memory) goes
#else
    (void)a_map, (void)b_map, (void)u_map, (void)o_map, (void)p;
#endif
}

cudaError_t prepare(int device) { return smem_optin_once<mla_q_absorb_sm90_kernel>(kSmemBytes, device); }

bool aligned16(const void *ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

}  // namespace

bool mla_q_absorb_sm90_available(int device) {
#if defined(LATTE_HAVE_SM90A)
    return tma_hopper_device_ok(device, kSmemBytes);
#else
    (void)device;
    return false;
#endif
}

bool mla_q_absorb_sm90_supports(const MlaQAbsorbArgs &a, bool check_pointers) {
    if (a.batch < 1 || a.batch > (int64_t)1 << 30 || a.n_heads < 1 || a.n_heads > 65535 || a.dq < kBK || a.dq % kBK)
        return false;
    if ((int64_t)((a.batch + kBM - 1) / kBM) * a.n_heads > 0x7fffffff / 2) return false;  // 32-bit tile arithmetic
    if (a.q_lora_stride != 0 && (a.q_lora_stride < a.dq || a.q_lora_stride % 8 || a.q_lora_stride > (int64_t)1 << 36))
        return false;
    if (!check_pointers) return true;
    if (a.kv_row && (!a.kv_cache || !a.bad_lengths)) return false;
    return a.q_lora && a.wq_up && a.w_uk_t && a.q_attn && a.cache_lens && a.rope_cos && a.rope_sin &&
           aligned16(a.q_lora) && aligned16(a.wq_up) && aligned16(a.w_uk_t) && aligned16(a.q_attn);
}

bool mla_q_absorb_sm90_spare_sm(const MlaQAbsorbArgs &a, int sm_count) {
    const int64_t tiles = (a.batch + kBM - 1) / kBM * a.n_heads;
    return sm_count > 0 && tiles < sm_count;
}

cudaError_t mla_q_absorb_sm90_launch(const MlaQAbsorbArgs &a, int sm_count, bool pdl, cudaStream_t stream) {
    if (!mla_q_absorb_sm90_supports(a, true)) return cudaErrorNotSupported;
    const uint64_t M = (uint64_t)a.batch, H = (uint64_t)a.n_heads, dq = (uint64_t)a.dq;
    const uint64_t ld_q = a.q_lora_stride ? (uint64_t)a.q_lora_stride : dq;
    CUtensorMap a_map, b_map, u_map, o_map;
    {  // q_lora (k, m), Wq_up (k, n), W_UKᵀ (nope, latent, h), q_attn (col, h, m)
        const uint64_t a_dims[3] = {dq, M, 1}, a_str[2] = {ld_q * 2, ld_q * 2 * M};
        const uint32_t a_box[3] = {kBK, kBM, 1};
        const uint64_t b_dims[3] = {dq, H * kQHead, 1}, b_str[2] = {dq * 2, dq * 2 * H * kQHead};
        const uint32_t b_box[3] = {kBK, kQHead, 1};
        const uint64_t u_dims[3] = {kNope, kR, H}, u_str[2] = {kNope * 2, (uint64_t)kR * kNope * 2};
        const uint32_t u_box[3] = {64, 128, 1};
        const uint64_t o_dims[3] = {kRow, H, M}, o_str[2] = {kRow * 2, H * kRow * 2};
        const uint32_t o_box[3] = {64, 1, 16};
        if (!tma_encode_bf16_3d(&a_map, a.q_lora, a_dims, a_str, a_box) ||
            !tma_encode_bf16_3d(&b_map, a.wq_up, b_dims, b_str, b_box) ||
            !tma_encode_bf16_3d(&u_map, a.w_uk_t, u_dims, u_str, u_box) ||
            !tma_encode_bf16_3d(&o_map, a.q_attn, o_dims, o_str, o_box))
            return cudaErrorNotSupported;
    }
    QAbsorbParams k;
    k.M = a.batch;
    k.H = a.n_heads;
    k.k_iters = a.dq / kBK;
    k.m_tiles = (int)((a.batch + kBM - 1) / kBM);
    k.tiles = k.m_tiles * a.n_heads;
    k.cache_lens = a.cache_lens;
    k.max_cache_len = a.max_cache_len;
    k.rope_cos = a.rope_cos;
    k.rope_sin = a.rope_sin;
    k.dev_flags = a.dev_flags;
    k.uk_chunks = a.dev_flags & 8 ? 0 : kUkChunks;
    k.kv_row = a.kv_row;
    k.kv_row_stride = a.kv_row_stride;
    k.kv_cache = a.kv_cache;
    k.cache_batch_stride = a.cache_batch_stride;
    k.cache_row_stride = a.cache_row_stride;
    k.rotate_keys = a.rotate_keys;
    k.bad_lengths = a.bad_lengths;
    const int sms = sm_count > 0 ? sm_count : 1;
    k.tile_grid = k.tiles < sms ? k.tiles : sms;
    k.attn = a.attn;
    const bool prep_cta = a.attn.list && mla_q_absorb_sm90_spare_sm(a, sm_count);
    if (!prep_cta) k.attn.list = nullptr;
    const int grid = k.tile_grid + (prep_cta ? 1 : 0);

    int device = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess) e = prepare(device);
    if (e != cudaSuccess) return e;
    return launch_maybe_pdl(mla_q_absorb_sm90_kernel, dim3((unsigned)grid), dim3(kThreads), kSmemBytes, stream, pdl, a_map,
                            b_map, u_map, o_map, k);
}

}  // namespace latte
