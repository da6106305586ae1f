// The MLA projections on Hopper: a weight-streaming GEMM with TMA and wgmma (sm_90a).
//
//   C[z][m][n] = Σ_k A[z][m][k] · B[z][n][k]      bf16 in, fp32 accumulation, one bf16 rounding at the store
//
// What and why: at decode the activations A have M = batch rows (128) and the weights B are read exactly once per
// step (374 MB for the layer): each projection is a stream of its weights, at 128 FLOP per weight byte, near the
// Hopper ridge. cuBLASLt streams these shapes at 0.7-3.2 TB/s (shared/anchors.md) against a ~3 TB/s (H100) /
// ~4.2 TB/s (H200) copy ceiling, and our mma.sync GEMM (gemm_bf16.cu) at less. The floor is the copy bandwidth.
//
// Reference: gemm_bf16.cu's gemm_simple_kernel computes the same function; tests/gpu_gemm_sm90.cu compares this kernel
// with a CPU product element by element (exact, on small integers) for every configuration.
//
// The kernel (one version; its ideas):
//   * tile = 128 rows of A (two consumer warpgroups, m64 each) × bn rows of B (bn 64 / 128 / 192 / 256); per
//     k-iteration of 64, both operands land in shared memory by TMA in the 128-byte swizzle (K-major, the layout
//     wgmma reads), and each consumer warpgroup issues 4 wgmma m64n{bn}k16 into its fp32 accumulators.
//   * a producer warp keeps a ring of stages full (4-8, ~192 KB): full[s] completes on the TMA bytes, empty[s] on one
//     arrival per consumer warp once its wgmma that read stage s are done. Weights carry an L2 evict-first policy
//     (read once), activations evict-last (every n-tile re-reads them).
//   * persistent: one CTA per SM. The work units (k-iterations for stream-K, whole tiles otherwise) are dealt in equal
//     contiguous ranges, CTA c taking [c·U/G, (c+1)·U/G); a range covers parts of one or a few tiles ("segments").
//     A tile covered by one CTA is stored directly. A tile shared by several: each contributor but the tile's owner
//     (the CTA with its first k-iterations, which finishes it last) writes its fp32 partial to its own workspace slot
//     (slot 0: the CTA's first segment, 1: its last), fences, and counts itself on the tile's counter; the owner
//     waits for the count, adds their slots to its accumulators in CTA order (bit-reproducible), stores, and zeroes
//     the counter for the next launch (a bounded wait: else the owner counts in too and the last to count sums).
//   * programmatic dependent launch: every CTA lets the next grid launch at once; the producer issues the weight
//     loads of its first stages before griddepcontrol.wait (weights never depend on the previous kernel) and the
//     activation loads after it; consumers wait too before their first store.
// Choosing bn and the mode is a cost model (gemm_sm90_choose) that latte_mla_plan_tune can overrule by timing.
#include "cuda/gemm_sm90.cuh"
#include "cuda/launch.cuh"
#include "cuda/ptx.cuh"
#include "cuda/smem_optin.cuh"
#include "cuda/tma.cuh"

#include <cuda_bf16.h>


namespace latte {
namespace {

constexpr int kBM = 128;                 // rows of A per tile
constexpr int kBK = 64;                  // k per iteration: one 128-byte swizzle row
constexpr int kConsumerWarps = 8;        // two warpgroups
constexpr int kThreads = 32 * kConsumerWarps + 32;  // + the producer warp
// registers: 9 warps put 3 on some SM sub-partition, so ptxas allots 168 per thread (16384 / 3 / 32, rounded down
// to 8); bn 256's 128 accumulators + the rest fit that with no spill (-warn-spills is an error in CI)

template <int BN>
struct Tile {
    static constexpr int kStages = BN == 64 ? 8 : BN == 128 ? 6 : BN == 192 ? 5 : 4;  // ~192-200 KB of stages
    static constexpr uint32_t kBBytes = BN * 128u;            // B (weights) first: a multiple of 1024
    static constexpr uint32_t kABytes = kBM * 128u;           // then A, two 8 KB halves (one per warpgroup)
    static constexpr uint32_t kStageBytes = kBBytes + kABytes;
    static constexpr uint32_t kStoreOff = kStages * kStageBytes;  // the epilogue's staging: 2 KB per consumer warp
    static constexpr uint32_t kBarOff = kStoreOff + kConsumerWarps * 2048u;  // full[], empty[], the fixup flag
    static constexpr size_t kSmemBytes = kBarOff + 16 * kStages + 16 + 1024;  // + slack to align the base
};
static_assert(Tile<256>::kSmemBytes <= 232448 && Tile<192>::kSmemBytes <= 232448 && Tile<128>::kSmemBytes <= 232448 &&
                  Tile<64>::kSmemBytes <= 232448,
              "stages fit the 227 KB a Hopper block may opt into");

struct GemmSm90Params {
    __nv_bfloat16 *C;
    int64_t ldc, batch_stride_c;
    int64_t M;
    int N;
    int m_tiles, n_tiles, k_iters;
    int iters_per_unit, units_per_tile;  // stream-K: 1 and k_iters; whole tiles: k_iters and 1
    int units;                           // tiles * units_per_tile (units * grid < 2^31: 32-bit unit arithmetic)
    int a_zm;                            // A's map is (k, z, m) [1] or (k, m, z) [0]
    int dev_flags;                       // GemmSm90Config::dev_flags
    int c_vec;                           // C, ldc and batch_stride_c allow 16-byte stores of 8 columns
    float *partial;                      // [grid][2][kBM * bn]
    int *counters;                       // [tiles]
    // GemmProblem::discard_a where the launcher found it honoured: A's base, row and batch strides in bytes (each
    // 64-column box row of A is one 128-byte line); null: A is left as it is
    const char *a_discard;
    int64_t a_row_bytes, a_batch_bytes;
};

#if LATTE_PTX_SM90A  // the device-only part (the sm_80 image and the host pass do not see it)
constexpr int kBarEpilogue = 1;  // named barrier of the 256 consumer threads
// a shared tile's owner polls its counter at most this many times (~64 ns apart) for the other contributors
constexpr int kOwnerSpins = 20000;

// The segments of a CTA's range of units, in order: a segment is the part of the range on one tile. (The schedule's
// sizes are read from the kernel parameters each time: constant-bank operands, no registers held for them.)
struct Segments {
    int u, u_end;
    __device__ __forceinline__ bool next(const GemmSm90Params &p, int &tile, int &k_lo, int &k_hi, bool &whole) {
        if (u >= u_end) return false;
        tile = u / p.units_per_tile;
        const int t0 = tile * p.units_per_tile, t1 = t0 + p.units_per_tile;
        const int e = u_end < t1 ? u_end : t1;
        k_lo = (u - t0) * p.iters_per_unit;
        k_hi = min((e - t0) * p.iters_per_unit, p.k_iters);
        whole = u == t0 && e == t1;
        u = e;
        return true;
    }
};

// The (tile, k) iterations of a CTA's range, one at a time.
struct Walk {
    Segments seg;
    int tile, k, k_lo, k_hi;
    bool whole;
    __device__ __forceinline__ explicit Walk(const Segments &s) : seg(s), tile(-1), k(0), k_lo(0), k_hi(0), whole(false) {}
    __device__ __forceinline__ bool next(const GemmSm90Params &p) {
        if (tile >= 0 && k + 1 < k_hi) {
            k++;
            return true;
        }
        if (!seg.next(p, tile, k_lo, k_hi, whole)) return false;
        k = k_lo;
        return true;
    }
};

template <int BN>
__device__ __forceinline__ void wgmma_tile(float (&acc)[BN / 2], uint64_t a_desc, uint64_t b_desc) {
    if constexpr (BN == 64) ptx::wgmma_m64n64k16_ss(acc, a_desc, b_desc);
    else if constexpr (BN == 128) ptx::wgmma_m64n128k16_ss(acc, a_desc, b_desc);
    else if constexpr (BN == 192) ptx::wgmma_m64n192k16_ss(acc, a_desc, b_desc);
    else ptx::wgmma_m64n256k16_ss(acc, a_desc, b_desc);
}

// first unit of CTA c, and the CTA whose range holds unit u (ranges [c·U/G, (c+1)·U/G)); 32-bit (a 64-bit division is
// a call, and its register save spilled the fixup)
__device__ __forceinline__ int range_begin(int c, int units, int grid) {
    return (int)((unsigned)c * (unsigned)units / (unsigned)grid);
}
__device__ __forceinline__ int cta_of(int u, int units, int grid) {
    return (int)((((unsigned)u + 1u) * (unsigned)grid - 1u) / (unsigned)units);
}
#endif  // LATTE_PTX_SM90A

template <int BN>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_sm90_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                     const GemmSm90Params p) {
#if LATTE_PTX_SM90A
    using T = Tile<BN>;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw_u32 = ptx::smem_u32(smem_raw);
    unsigned char *smem = smem_raw + (((raw_u32 + 1023u) & ~1023u) - raw_u32);
    const uint32_t base = ptx::smem_u32(smem);
    const uint32_t full0 = base + T::kBarOff, empty0 = full0 + 8u * T::kStages;
    volatile int *fixup_flag = reinterpret_cast<volatile int *>(smem + T::kBarOff + 16 * T::kStages);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

    if (tid == 0) {
        for (int s = 0; s < T::kStages; s++) {
            ptx::mbarrier_init(full0 + 8u * s, 1);                // the producer's arrive.expect_tx
            ptx::mbarrier_init(empty0 + 8u * s, kConsumerWarps);  // one arrival per consumer warp
        }
        ptx::fence_mbarrier_init();
    }
    __syncthreads();
    ptx::griddep_launch_dependents();

    const int grid = gridDim.x, cta = blockIdx.x;
    const Segments all{range_begin(cta, p.units, grid), range_begin(cta + 1, p.units, grid)};
    auto tile_coords = [&](int tile, int &m0, int &n0, int &z) {
        m0 = (tile % p.m_tiles) * kBM;
        n0 = (tile / p.m_tiles % p.n_tiles) * BN;
        z = tile / (p.m_tiles * p.n_tiles);
    };

    // the warpgroup index through a shuffle: ptxas then knows it is warp-uniform (the wgmma stay asynchronous)
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0);
    if (wg == kConsumerWarps / 4) {
        // ---- producer warp (the block's third warpgroup holds only it): one thread issues every copy ----
        if (lane == 0) {
            const bool hints = !(p.dev_flags & 1);
            const uint64_t pol_b = hints ? ptx::l2_policy_evict_first() : ptx::l2_policy_evict_normal();
            const uint64_t pol_a = hints ? ptx::l2_policy_evict_last() : ptx::l2_policy_evict_normal();
            auto load_b = [&](int n, int tile, int k) {
                int m0, n0, z;
                tile_coords(tile, m0, n0, z);
                ptx::tma_load_3d_hint(base + (uint32_t)(n % T::kStages) * T::kStageBytes, &b_map, k * kBK, n0, z,
                                      full0 + 8u * (n % T::kStages), pol_b);
            };
            auto load_a = [&](int n, int tile, int k) {
                int m0, n0, z;
                tile_coords(tile, m0, n0, z);
                const uint32_t dst = base + (uint32_t)(n % T::kStages) * T::kStageBytes + T::kBBytes;
                if (p.a_zm) ptx::tma_load_3d_hint(dst, &a_map, k * kBK, z, m0, full0 + 8u * (n % T::kStages), pol_a);
                else ptx::tma_load_3d_hint(dst, &a_map, k * kBK, m0, z, full0 + 8u * (n % T::kStages), pol_a);
            };
            const uint32_t stage_bytes = p.dev_flags & 32 ? T::kBBytes : T::kStageBytes;  // (32: no A loads)
            // the first stages' weights, before the previous grid is done
            Walk cur(all);
            int n = 0;
            for (; n < T::kStages && cur.next(p); n++) {
                ptx::mbarrier_arrive_expect_tx(full0 + 8u * n, stage_bytes);
                load_b(n, cur.tile, cur.k);
            }
            const int first = n;
            ptx::griddep_wait();
            {
                Walk w(all);
                for (int i = 0; i < first && w.next(p); i++)
                    if (!(p.dev_flags & 32)) load_a(i, w.tile, w.k);
            }
            for (; cur.next(p); n++) {  // wait for the consumers to free the stage, then refill it whole
                const int st = n % T::kStages;
                ptx::mbarrier_wait(empty0 + 8u * st, (uint32_t)((n / T::kStages - 1) & 1));
                ptx::mbarrier_arrive_expect_tx(full0 + 8u * st, stage_bytes);
                load_b(n, cur.tile, cur.k);
                if (!(p.dev_flags & 32)) load_a(n, cur.tile, cur.k);
            }
        }
    } else {
        // ---- consumers: two warpgroups, rows 64·wg .. 64·wg + 63 of the tile ----
        ptx::griddep_wait();  // nothing is stored before the previous grid is done
        const int q = warp % 4, g = lane / 4, t4 = lane % 4;
        float acc[BN / 2];
        Segments seg = all;
        int tile, k_lo, k_hi, n = 0;
        bool whole;
        while (seg.next(p, tile, k_lo, k_hi, whole)) {
#pragma unroll
            for (int i = 0; i < BN / 2; i++) acc[i] = 0.0f;
            // discard_a: lane l < 16 of the warp drops row 16q + l of its warpgroup's 64 (if below M), one line a stage
            const char *a_line = nullptr;
            if (p.a_discard && lane < 16) {
                int m0, n0, z;
                tile_coords(tile, m0, n0, z);
                const int64_t m = (int64_t)m0 + 64 * wg + 16 * q + lane;
                if (m < p.M) a_line = p.a_discard + (int64_t)z * p.a_batch_bytes + m * p.a_row_bytes;
            }
            for (int k = k_lo; k < k_hi; k++, n++) {
                const int s = n % T::kStages;
                ptx::mbarrier_wait(full0 + 8u * s, (uint32_t)((n / T::kStages) & 1));
                const uint32_t b_s = base + (uint32_t)s * T::kStageBytes, a_s = b_s + T::kBBytes + (uint32_t)wg * 8192u;
                ptx::wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < 4; kk++)
                    wgmma_tile<BN>(acc, ptx::wgmma_desc_sw128(a_s + 32u * kk, 16, 1024),
                                   ptx::wgmma_desc_sw128(b_s + 32u * kk, 16, 1024));
                ptx::wgmma_commit();
                // done with this stage as soon as its wgmma are: the stage is refilled at once (waiting only for the
                // previous iteration's, to keep one group in flight, held ~1.5 of 4 stages and cost 10-20% of the
                // stream: the arithmetic of a stage takes about half the time its bytes take to arrive)
                ptx::wgmma_wait<0>();
                if (lane == 0) ptx::mbarrier_arrive(empty0 + 8u * s);
                if (a_line) ptx::discard_l2(a_line + (int64_t)k * (kBK * 2));  // its bytes are in smem, read for good
            }

            if (!whole && !(p.dev_flags & 128)) {
                // A shared tile. Its owner is the CTA that computes its first k-iterations (c_first): in a stream-K
                // grid they are the end of that CTA's range, so it finishes the tile last, or about when the others
                // do. Each other contributor writes its fp32 partial to its own slot, fences, and counts itself on
                // the tile's counter; the owner waits for their count and adds their slots to its own accumulators, in
                // CTA order (the same order at every launch: bit-reproducible), stores, and zeroes the counter for the
                // next launch. The owner's partial never goes through memory (it used to: every contributor wrote
                // its slot and the last to count summed them all, its own read back; at the end of the grid that was
                // a 64 KB write, a fence and a read on the critical path). The wait is bounded (kOwnerSpins): should
                // the others not run (fewer SMs than CTAs, e.g. under MPS), the owner writes its slot and counts too,
                // and the last to count sums, as before; dev flag 256 takes that path always (tests check it).
                const int t0 = tile * p.units_per_tile;
                const int c_first = cta_of(t0, p.units, grid), c_last = cta_of(t0 + p.units_per_tile - 1, p.units, grid);
                auto slot = [&](int c) {
                    const int which = range_begin(c, p.units, grid) < t0 ? 1 : 0;  // this tile is c's last / first segment
                    return p.partial + (size_t)(c * 2 + which) * (kBM * BN);
                };
                bool owner_sums = false;
                if (cta == c_first && !(p.dev_flags & 256)) {
                    ptx::named_bar_sync(kBarEpilogue, 256);  // every thread has read the flag's last value
                    if (tid == 0) {
                        const volatile int *count = p.counters + tile;
                        int spins = 0;
                        while (*count != c_last - c_first && ++spins < kOwnerSpins) __nanosleep(64);
                        *fixup_flag = *count == c_last - c_first;
                        __threadfence();  // (acquire: the others fenced their slots before counting)
                    }
                    ptx::named_bar_sync(kBarEpilogue, 256);
                    owner_sums = *fixup_flag != 0;
                }
                if (!owner_sums) {
                    float4 *mine = reinterpret_cast<float4 *>(slot(cta));
#pragma unroll
                    for (int i = 0; i < BN / 8; i++)
                        mine[i * 256 + tid] = make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]);
                    __threadfence();
                    ptx::named_bar_sync(kBarEpilogue, 256);
                    if (tid == 0) {
                        *fixup_flag = atomicAdd(&p.counters[tile], 1) == c_last - c_first;
                        __threadfence();  // (acquire: the observing thread fences before the barrier passes it on)
                    }
                    ptx::named_bar_sync(kBarEpilogue, 256);
                    const bool last = *fixup_flag != 0;
                    if (!last) continue;
                    __threadfence();
                    // the first contributor's slot replaces acc (this CTA's own values are dead once in its slot: they
                    // must not stay live across the barriers, 128 accumulators fill the 168 registers ptxas allots)
                    const float4 *src = reinterpret_cast<const float4 *>(slot(c_first));
#pragma unroll
                    for (int i = 0; i < BN / 8; i++) {
                        const float4 v = __ldcg(src + i * 256 + tid);
                        acc[4 * i] = v.x, acc[4 * i + 1] = v.y, acc[4 * i + 2] = v.z, acc[4 * i + 3] = v.w;
                    }
                } else {
                    __threadfence();
                }
                // the others add, in CTA order; 4 float4 loads in flight at a time (the compiler barrier keeps them
                // from being hoisted)
                for (int c = c_first + 1; c <= c_last; c++) {
                    const float4 *src = reinterpret_cast<const float4 *>(slot(c));
#pragma unroll
                    for (int i0 = 0; i0 < BN / 8; i0 += 4) {
                        float4 v[4];
#pragma unroll
                        for (int u = 0; u < 4; u++) v[u] = __ldcg(src + (i0 + u) * 256 + tid);
#pragma unroll
                        for (int u = 0; u < 4; u++) {
                            float *a = acc + 4 * (i0 + u);
                            a[0] += v[u].x, a[1] += v[u].y, a[2] += v[u].z, a[3] += v[u].w;
                        }
                        asm volatile("" ::: "memory");
                    }
                }
                if (tid == 0) p.counters[tile] = 0;  // every contributor has counted: ready for the next launch
            }

            // store. The warp's fragment holds rows 16q + g and + 8 (of its warpgroup's 64), columns 8j + 2t4 and + 1:
            // written as is, a warp's store touches 8 rows × 16 bytes. So each 64-column chunk goes through the warp's
            // 2 KB of staging ([16 rows][128 B], 16-byte unit u of row r at u ^ (r % 8): conflict-free both ways) and
            // leaves as 16-byte stores, 4 full rows of 128 bytes per instruction.
            int m0, n0, z;
            tile_coords(tile, m0, n0, z);
            if (p.dev_flags & 4) continue;
            __nv_bfloat16 *C = p.C + (int64_t)z * p.batch_stride_c;
            const int64_t row0 = (int64_t)m0 + 64 * wg + 16 * q;  // the warp's first row
            unsigned char *stage = smem + T::kStoreOff + 2048u * warp;
#pragma unroll
            for (int ch = 0; ch < BN / 64; ch++) {
                __syncwarp();
#pragma unroll
                for (int jj = 0; jj < 8; jj++) {
                    const int j = 8 * ch + jj;
                    *reinterpret_cast<__nv_bfloat162 *>(stage + g * 128 + ((jj ^ g) << 4) + 4 * t4) =
                        __floats2bfloat162_rn(acc[4 * j], acc[4 * j + 1]);
                    *reinterpret_cast<__nv_bfloat162 *>(stage + (g + 8) * 128 + ((jj ^ g) << 4) + 4 * t4) =
                        __floats2bfloat162_rn(acc[4 * j + 2], acc[4 * j + 3]);
                }
                __syncwarp();
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int r = 4 * i + lane / 8, u = lane % 8;  // row of the warp's 16, 16-byte unit
                    const int64_t m = row0 + r;
                    const int col = n0 + 64 * ch + 8 * u;
                    const uint4 v = *reinterpret_cast<const uint4 *>(stage + r * 128 + ((u ^ (r & 7)) << 4));
                    if (m >= p.M || col >= p.N) continue;
                    __nv_bfloat16 *dst = C + m * p.ldc + col;
                    if (p.c_vec && col + 8 <= p.N) {
                        *reinterpret_cast<uint4 *>(dst) = v;
                    } else {  // N not a multiple of 8 here, or C not 16-byte aligned: pairs (N is even)
                        uint32_t *d32 = reinterpret_cast<uint32_t *>(dst);
                        d32[0] = v.x;
                        if (col + 2 < p.N) d32[1] = v.y;
                        if (col + 4 < p.N) d32[2] = v.z;
                        if (col + 6 < p.N) d32[3] = v.w;
                    }
                }
            }
        }
    }
#else
    (void)a_map, (void)b_map, (void)p;
#endif
}

// ---- host ------------------------------------------------------------------------------------------------------
constexpr int kBns[4] = {64, 128, 192, 256};

struct Schedule {
    int m_tiles, n_tiles, k_iters, iters_per_unit, units_per_tile;
    long long tiles, units;
    int grid;
};

Schedule schedule(int64_t M, int N, int K, int batch, const GemmSm90Config &c, int sm_count) {
    Schedule s;
    s.m_tiles = (int)((M + kBM - 1) / kBM);
    s.n_tiles = (N + c.bn - 1) / c.bn;
    s.k_iters = (K + kBK - 1) / kBK;
    s.iters_per_unit = c.stream_k ? 1 : s.k_iters;
    s.units_per_tile = c.stream_k ? s.k_iters : 1;
    s.tiles = (long long)s.m_tiles * s.n_tiles * batch;
    s.units = s.tiles * s.units_per_tile;
    const long long sms = sm_count > 0 ? sm_count : 1;
    s.grid = (int)(s.units < sms ? s.units : sms);
    return s;
}

// Estimated bytes the busiest CTA moves (weights at full weight, activations and fixup reads discounted: they come
// from L2), the quantity the choice minimizes.
double cost(int64_t M, int N, int K, int batch, const GemmSm90Config &c, int sm_count) {
    const Schedule s = schedule(M, N, K, batch, c, sm_count);
    const double rows_a = (double)(M < kBM ? M : kBM);
    const double per_iter = (double)(c.bn < N ? c.bn : N) * 128.0 + 0.3 * rows_a * 128.0;
    const long long per_cta_units = (s.units + s.grid - 1) / s.grid;
    double bytes = (double)per_cta_units * s.iters_per_unit * per_iter;
    if (c.stream_k && s.grid > s.tiles / 2) {  // partial tiles: each contributor writes its slot, the last reads all
        const double contributors = (double)s.grid / (double)s.tiles + 1.0;
        bytes += contributors * rows_a * c.bn * 4.0;
    }
    return bytes;
}

template <int BN>
cudaError_t prepare(int device) {
    return smem_optin_once<gemm_sm90_kernel<BN>>(Tile<BN>::kSmemBytes, device);
}

template <int BN>
cudaError_t launch(const CUtensorMap &a_map, const CUtensorMap &b_map, const GemmSm90Params &p, int grid, bool pdl,
                   cudaStream_t stream) {
    int device = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess) e = prepare<BN>(device);
    if (e != cudaSuccess) return e;
    return launch_maybe_pdl(gemm_sm90_kernel<BN>, dim3((unsigned)grid), dim3(kThreads), Tile<BN>::kSmemBytes, stream, pdl, a_map,
                            b_map, p);
}

bool is_mult(int64_t v, int64_t m) { return v % m == 0; }

}  // namespace

bool gemm_sm90_available(int device) {
#if defined(LATTE_HAVE_SM90A)
    return tma_hopper_device_ok(device, Tile<192>::kSmemBytes);
#else
    (void)device;
    return false;
#endif
}

bool gemm_sm90_supports(const GemmProblem &p, bool check_pointers) {
    const int64_t kMax = (int64_t)1 << 38;  // elements: strides in bytes stay < 2^39 < the unit's 2^40
    if (p.M < 1 || p.M > 0x7fffffff || p.N < 2 || p.K < 8 || p.batch < 1) return false;
    if (!is_mult(p.K, 8) || !is_mult(p.N, 2)) return false;
    if (check_pointers &&
        (p.A == nullptr || p.B == nullptr || p.C == nullptr || !is_mult((int64_t)reinterpret_cast<uintptr_t>(p.A), 16) ||
         !is_mult((int64_t)reinterpret_cast<uintptr_t>(p.B), 16) || !is_mult((int64_t)reinterpret_cast<uintptr_t>(p.C), 4)))
        return false;
    if (p.lda < p.K || p.ldb < p.K || p.ldc < p.N || !is_mult(p.lda, 8) || !is_mult(p.ldb, 8) || !is_mult(p.ldc, 2) ||
        p.lda > kMax || p.ldb > kMax || p.ldc > kMax)
        return false;
    if (p.batch > 1 && (!is_mult(p.batch_stride_a, 8) || !is_mult(p.batch_stride_b, 8) || !is_mult(p.batch_stride_c, 2) ||
                        p.batch_stride_a < 1 || p.batch_stride_b < 1 || p.batch_stride_c < 1 ||
                        p.batch_stride_a > kMax || p.batch_stride_b > kMax || p.batch_stride_c > kMax))
        return false;
    return true;
}

GemmSm90Config gemm_sm90_choose(int64_t M, int N, int K, int batch, int sm_count) {
    GemmSm90Config best = {256, true, 0};
    double best_cost = -1.0;
    for (int stream_k = 0; stream_k < 2; stream_k++)  // ties keep whole tiles (no fixup)
        for (int bn : kBns) {
            const GemmSm90Config c = {bn, stream_k != 0, 0};
            const double v = cost(M, N, K, batch, c, sm_count);
            if (best_cost < 0.0 || v < best_cost) best = c, best_cost = v;
        }
    return best;
}

int gemm_sm90_candidates(int64_t M, int N, int K, int batch, int sm_count, GemmSm90Config *out, int max) {
    const GemmSm90Config chosen = gemm_sm90_choose(M, N, K, batch, sm_count);
    const double limit = 1.5 * cost(M, N, K, batch, chosen, sm_count);  // no time on the hopeless ones
    int n = 0;
    if (n < max) out[n++] = chosen;
    for (int stream_k = 0; stream_k < 2; stream_k++)
        for (int bn : kBns) {
            const GemmSm90Config c = {bn, stream_k != 0, 0};
            if (n >= max || (c.bn == chosen.bn && c.stream_k == chosen.stream_k)) continue;
            if (cost(M, N, K, batch, c, sm_count) <= limit) out[n++] = c;
        }
    return n;
}

size_t gemm_sm90_partial_bytes(int sm_count) {
    return (size_t)(sm_count > 0 ? sm_count : 1) * 2 * kBM * 256 * sizeof(float);  // two slots a CTA, bn <= 256
}

size_t gemm_sm90_counter_count(int64_t M, int N, int batch) {
    return (size_t)((M + kBM - 1) / kBM) * (size_t)((N + 63) / 64) * (size_t)batch;  // tiles at the smallest bn
}

cudaError_t gemm_sm90_launch(const GemmProblem &p, const GemmSm90Config &cfg, int sm_count, float *partial, int *counters,
                             bool pdl, cudaStream_t stream) {
    if (!gemm_sm90_supports(p, true)) return cudaErrorNotSupported;
    const Schedule s = schedule(p.M, p.N, p.K, p.batch, cfg, sm_count);
    if (s.units <= 0 || s.units * s.grid >= (1ll << 31)) return cudaErrorNotSupported;  // 32-bit unit arithmetic
    if (cfg.stream_k && (partial == nullptr || counters == nullptr)) return cudaErrorInvalidValue;

    // A: (k, m, z), or (k, z, m) when the batch stride is the smaller one (the heads of one row of q / o_lat):
    // the unit wants each stride to cover the dimensions before it
    CUtensorMap a_map, b_map;
    const bool a_zm = p.batch > 1 && p.batch_stride_a < p.lda;
    const uint64_t a_rows = (uint64_t)p.M, z = (uint64_t)p.batch;
    const uint64_t a_dims_mz[3] = {(uint64_t)p.K, a_rows, z}, a_dims_zm[3] = {(uint64_t)p.K, z, a_rows};
    const uint64_t a_str_mz[2] = {(uint64_t)p.lda * 2,
                                  p.batch > 1 ? (uint64_t)p.batch_stride_a * 2 : (uint64_t)p.lda * 2 * a_rows};
    const uint64_t a_str_zm[2] = {(uint64_t)p.batch_stride_a * 2, (uint64_t)p.lda * 2};
    const uint32_t a_box_mz[3] = {kBK, kBM, 1}, a_box_zm[3] = {kBK, 1, kBM};
    const uint64_t b_dims[3] = {(uint64_t)p.K, (uint64_t)p.N, z};
    const uint64_t b_str[2] = {(uint64_t)p.ldb * 2,
                               p.batch > 1 ? (uint64_t)p.batch_stride_b * 2 : (uint64_t)p.ldb * 2 * (uint64_t)p.N};
    const uint32_t b_box[3] = {kBK, (uint32_t)cfg.bn, 1};
    if (!tma_encode_bf16_3d(&a_map, p.A, a_zm ? a_dims_zm : a_dims_mz, a_zm ? a_str_zm : a_str_mz,
                            a_zm ? a_box_zm : a_box_mz) ||
        !tma_encode_bf16_3d(&b_map, p.B, b_dims, b_str, b_box))
        return cudaErrorNotSupported;

    GemmSm90Params k;
    k.C = p.C;
    k.ldc = p.ldc;
    k.batch_stride_c = p.batch_stride_c;
    k.M = p.M;
    k.N = p.N;
    k.m_tiles = s.m_tiles;
    k.n_tiles = s.n_tiles;
    k.k_iters = s.k_iters;
    k.iters_per_unit = s.iters_per_unit;
    k.units_per_tile = s.units_per_tile;
    k.units = (int)s.units;
    k.a_zm = a_zm ? 1 : 0;
    k.dev_flags = cfg.dev_flags;
    k.c_vec = reinterpret_cast<uintptr_t>(p.C) % 16 == 0 && p.ldc % 8 == 0 && (p.batch == 1 || p.batch_stride_c % 8 == 0);
    k.partial = partial;
    k.counters = counters;
    // A's lines are discarded only where each is read by one CTA once: one n-tile (stream-K splits k, not lines),
    // whole 128-byte lines per box row (K a multiple of 64, A and its strides 128-byte aligned)
    const bool discard = p.discard_a && s.n_tiles == 1 && p.K % kBK == 0 && reinterpret_cast<uintptr_t>(p.A) % 128 == 0 &&
                         p.lda % 64 == 0 && (p.batch == 1 || p.batch_stride_a % 64 == 0);
    k.a_discard = discard ? reinterpret_cast<const char *>(p.A) : nullptr;
    k.a_row_bytes = p.lda * 2;
    k.a_batch_bytes = p.batch_stride_a * 2;
    switch (cfg.bn) {
        case 64: return launch<64>(a_map, b_map, k, s.grid, pdl, stream);
        case 128: return launch<128>(a_map, b_map, k, s.grid, pdl, stream);
        case 192: return launch<192>(a_map, b_map, k, s.grid, pdl, stream);
        case 256: return launch<256>(a_map, b_map, k, s.grid, pdl, stream);
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace latte
