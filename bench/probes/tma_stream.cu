// Probe: how fast can one kernel stream a buffer from HBM into the SMs, by plain vector loads and by TMA bulk copies
// into a ring of shared-memory stages (the projection GEMM's shape, gemm_sm90.cu, without its arithmetic)?
//
// Question it settles: the GEMM's weight stream alone (no wgmma, no activations, no stores) reached ~2.2 TB/s on an
// H100 while its copy ceiling is ~3.0 TB/s (read + write). Is that the memory system's rate for a read-only stream,
// or the way the kernel streams (stage size, ring depth, CTAs per SM)?
//
// Method: read `bytes` (default 235 MB, the size of Wo) once per launch; before every timed launch, a read-only flush
// of 3x L2 (a memset flush leaves dirty lines that the next kernel must write back); median of 15 launches.
//   ldg      grid-stride uint4 loads, 8 warps per CTA, 8 CTAs per SM
//   tma S×X/c  persistent, c CTAs per SM, each a producer thread issuing 1-D bulk copies of X KB into S stages and one
//            consumer warp that waits for each stage and frees it (each CTA streams one contiguous share)
//   tile     (argv[2] = "tile"): the GEMMs' weight stream, 2-D boxes in their order and in wider-per-row orders
//   ring     (argv[2] = "ring"): the fused query kernel's ring (weights + activations per stage, a consumer holding
//            each stage a while), one shared ring against separate rings for the weights and the activations
//   kv       (argv[2] = "kv"): the attention's KV stream (two 72 KB tile buffers, a CTA per SM, sequences shared by
//            two CTAs or not, multicast over a cluster of 2), with a hold per tile for the arithmetic
//   mcast    (argv[2] = "mcast"): the out projection's stream (R weight rows a CTA, K 16384, the activations' 16 KB
//            box every k-iteration), the activations read by every CTA or multicast over clusters of 2 or 4
//   split    (argv[2] = "split", argv[3] = A MB): A MB then the rest as two launches (eager and from a graph) against
//            one launch of it all: what a kernel boundary costs a weight stream
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DLATTE_HAVE_SM90A=1 -Isrc bench/probes/tma_stream.cu
//        src/cuda/tma.cu -o tma_stream
#include "../../tests/cuda_test_util.cuh"  // CK

#include "cuda/ptx.cuh"
#include "cuda/tma.cuh"

#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

using namespace latte;

__global__ void ldg_kernel(const uint4 *__restrict__ p, size_t n16, unsigned *out) {
    unsigned x = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = __ldcs(p + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x12345678u) out[0] = x;  // keeps the loads
}

#if LATTE_PTX_SM90A
// the consumer of a ring: waits for each stage to land and frees it at once (no arithmetic)
__device__ void consume(uint32_t full0, uint32_t empty0, int iters, int stages) {
    for (int n = 0; n < iters; n++) {
        const int s = n % stages;
        ptx::mbarrier_wait(full0 + 8u * s, (uint32_t)((n / stages) & 1));
        ptx::mbarrier_arrive(empty0 + 8u * s);
    }
}
#endif

// stages of `stage` bytes, CTA c streams bytes [c·share, (c+1)·share)
__global__ void __launch_bounds__(64, 1) tma_kernel(const char *__restrict__ src, size_t share, uint32_t stage, int stages,
                                                   int evict_first) {
#if LATTE_PTX_SM90A
    extern __shared__ __align__(1024) unsigned char smem[];
    const uint32_t base = ptx::smem_u32(smem);
    const uint32_t full0 = base + (uint32_t)stages * stage, empty0 = full0 + 8u * stages;
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; s++) ptx::mbarrier_init(full0 + 8u * s, 1), ptx::mbarrier_init(empty0 + 8u * s, 1);
        ptx::fence_mbarrier_init();
    }
    __syncthreads();
    const char *my = src + (size_t)blockIdx.x * share;
    const int iters = (int)(share / stage);
    if (threadIdx.x == 32) {  // producer
        const uint64_t pol = evict_first ? ptx::l2_policy_evict_first() : ptx::l2_policy_evict_normal();
        for (int n = 0; n < iters; n++) {
            const int s = n % stages;
            if (n >= stages) ptx::mbarrier_wait(empty0 + 8u * s, (uint32_t)((n / stages - 1) & 1));
            ptx::mbarrier_arrive_expect_tx(full0 + 8u * s, stage);
            ptx::bulk_load_hint(base + (uint32_t)s * stage, my + (size_t)n * stage, stage, full0 + 8u * s, pol);
        }
    } else if (threadIdx.x == 0) {
        consume(full0, empty0, iters, stages);
    }
#endif
}

// The weight stream of the fused query kernel (mla_q_absorb_sm90.cu) and of gemm_sm90.cu: CTA c owns rows
// [c·R, (c+1)·R) of a row-major [rows][K] bf16 matrix and reads them in boxes of 64 columns (128 bytes, the swizzle's
// width) × box_rows rows by a 3-D tensor map; a stage is kb such boxes, the same rows at kb consecutive column
// offsets. kb 1, box_rows R is the kernels' order (each stage visits every row for 128 bytes); larger kb with fewer
// rows per stage visits each row for kb × 128 bytes at a time (as many bytes a stage).
__global__ void __launch_bounds__(64, 1) tile_kernel(const __grid_constant__ CUtensorMap map, int rows_per_cta, int k_boxes,
                                                    int box_rows, int kb, int stages) {
#if LATTE_PTX_SM90A
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = ptx::smem_u32(smem_raw);
    const uint32_t base = (raw + 1023u) & ~1023u;
    const uint32_t stage = (uint32_t)(kb * box_rows * 128);
    const uint32_t full0 = base + (uint32_t)stages * stage, empty0 = full0 + 8u * stages;
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; s++) ptx::mbarrier_init(full0 + 8u * s, 1), ptx::mbarrier_init(empty0 + 8u * s, 1);
        ptx::fence_mbarrier_init();
    }
    __syncthreads();
    const int row_blocks = rows_per_cta / box_rows, iters = k_boxes / kb * row_blocks;
    if (threadIdx.x == 32) {  // producer
        const uint64_t pol = ptx::l2_policy_evict_first();
        for (int n = 0; n < iters; n++) {
            const int s = n % stages, kg = n / row_blocks, rb = n % row_blocks;
            if (n >= stages) ptx::mbarrier_wait(empty0 + 8u * s, (uint32_t)((n / stages - 1) & 1));
            ptx::mbarrier_arrive_expect_tx(full0 + 8u * s, stage);
            for (int j = 0; j < kb; j++)
                ptx::tma_load_3d_hint(base + (uint32_t)s * stage + (uint32_t)(j * box_rows * 128), &map, (kg * kb + j) * 64,
                                      (int)blockIdx.x * rows_per_cta + rb * box_rows, 0, full0 + 8u * s, pol);
        }
    } else if (threadIdx.x == 0) {
        consume(full0, empty0, iters, stages);
    }
#endif
}

// The fused query kernel's ring (mla_q_absorb_sm90.cu): per k-iteration a weight box (64 columns × R rows of the big
// matrix, CTA c's rows) and an activation box (64 columns × 128 rows of a small [128][K] matrix that stays in L2).
// a_stages 0: one ring of (weights + activations) stages, as the kernel has it; else two rings, the weights w_stages
// deep and the activations a_stages deep, each with its own producer warp. The consumer holds each iteration's stages
// `hold` cycles after they landed (the kernel's wgmma on them) before freeing them. use_a 0: no activations.
__global__ void __launch_bounds__(96, 1) ring_kernel(const __grid_constant__ CUtensorMap wmap,
                                                    const __grid_constant__ CUtensorMap amap, int R, int k_iters,
                                                    int w_stages, int a_stages, int hold, int use_a, int kb, int free_first) {
#if LATTE_PTX_SM90A
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = ptx::smem_u32(smem_raw);
    const uint32_t base = (raw + 1023u) & ~1023u;
    const uint32_t wbytes = (uint32_t)(kb * R) * 128u, abytes = use_a ? 128u * 128u : 0u;
    const bool shared_ring = a_stages == 0;
    const uint32_t wstage = shared_ring ? wbytes + abytes : wbytes;
    const uint32_t a_base = base + (uint32_t)w_stages * wstage;
    const int an = shared_ring ? 0 : a_stages;
    const uint32_t bars = a_base + (uint32_t)an * abytes;
    const uint32_t full_w = bars, empty_w = full_w + 8u * w_stages, full_a = empty_w + 8u * w_stages,
                   empty_a = full_a + 8u * an;
    if (threadIdx.x == 0) {
        for (int s = 0; s < w_stages; s++) ptx::mbarrier_init(full_w + 8u * s, 1), ptx::mbarrier_init(empty_w + 8u * s, 1);
        for (int s = 0; s < an; s++) ptx::mbarrier_init(full_a + 8u * s, 1), ptx::mbarrier_init(empty_a + 8u * s, 1);
        ptx::fence_mbarrier_init();
    }
    __syncthreads();
    const uint64_t pol_w = ptx::l2_policy_evict_first(), pol_a = ptx::l2_policy_evict_last();
    if (threadIdx.x == 32) {  // weights (and, in one ring, the activations)
        for (int n = 0; n < k_iters / kb; n++) {
            const int s = n % w_stages;
            if (n >= w_stages) ptx::mbarrier_wait(empty_w + 8u * s, (uint32_t)((n / w_stages - 1) & 1));
            ptx::mbarrier_arrive_expect_tx(full_w + 8u * s, shared_ring ? wbytes + abytes : wbytes);
            for (int j = 0; j < kb; j++)
                ptx::tma_load_3d_hint(base + (uint32_t)s * wstage + (uint32_t)(j * R * 128), &wmap, (n * kb + j) * 64,
                                      (int)blockIdx.x * R, 0, full_w + 8u * s, pol_w);
            if (shared_ring && use_a)
                ptx::tma_load_3d_hint(base + (uint32_t)s * wstage + wbytes, &amap, n * 64, 0, 0, full_w + 8u * s, pol_a);
        }
    } else if (threadIdx.x == 64 && !shared_ring && use_a) {  // activations in their own ring
        for (int n = 0; n < k_iters; n++) {
            const int s = n % an;
            if (n >= an) ptx::mbarrier_wait(empty_a + 8u * s, (uint32_t)((n / an - 1) & 1));
            ptx::mbarrier_arrive_expect_tx(full_a + 8u * s, abytes);
            ptx::tma_load_3d_hint(a_base + (uint32_t)s * abytes, &amap, n * 64, 0, 0, full_a + 8u * s, pol_a);
        }
    } else if (threadIdx.x == 0) {  // consumer
        for (int n = 0; n < k_iters / kb; n++) {
            const int s = n % w_stages;
            ptx::mbarrier_wait(full_w + 8u * s, (uint32_t)((n / w_stages) & 1));
            if (!shared_ring && use_a) ptx::mbarrier_wait(full_a + 8u * (n % an), (uint32_t)((n / an) & 1));
            if (free_first) ptx::mbarrier_arrive(empty_w + 8u * s);
            const long long t0 = clock64();
            while (clock64() - t0 < hold) {
            }
            if (!free_first) ptx::mbarrier_arrive(empty_w + 8u * s);
            if (!shared_ring && use_a) ptx::mbarrier_arrive(empty_a + 8u * (n % an));
        }
    }
#endif
}

// The out projection's stream (gemm_sm90.cu on Wo: M = 128 rows of activations, K = 16384): CTA c streams rows
// [c·R, (c+1)·R) of the weights, and every k-iteration also needs the activations' box (128 rows × 64 columns, 16 KB,
// L2-resident). Each CTA reads all of it, so L2 sends the SMs ~2× the weight bytes at R = 64. With clusters of C CTAs
// (adjacent row blocks, the same k-iterations), each CTA reads 128/C of the rows and multicasts them to the cluster:
// L2 sends each activation byte once per cluster. use_a 0: no activations. The consumer (one thread) holds each
// stage `hold` cycles, then frees it in every CTA of the cluster (the stage's activation rows came from all of them).
__global__ void __launch_bounds__(64, 1) mcast_kernel(const __grid_constant__ CUtensorMap wmap,
                                                     const __grid_constant__ CUtensorMap amap, int R, int k_iters,
                                                     int stages, int use_a, int csize, int hold, int arrive) {
#if LATTE_PTX_SM90A
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = ptx::smem_u32(smem_raw);
    const uint32_t base = (raw + 1023u) & ~1023u;
    const uint32_t wbytes = (uint32_t)R * 128u, abytes = use_a ? 128u * 128u : 0u, stage = wbytes + abytes;
    const uint32_t full0 = base + (uint32_t)stages * stage, empty0 = full0 + 8u * stages;
    const uint32_t rank = csize > 1 ? ptx::cluster_ctarank() : 0u;
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; s++)
            ptx::mbarrier_init(full0 + 8u * s, 1), ptx::mbarrier_init(empty0 + 8u * s, arrive ? (uint32_t)csize : 1u);
        ptx::fence_mbarrier_init();
    }
    __syncthreads();
    if (csize > 1) ptx::cluster_sync();  // every CTA's barriers are initialized before any copy reaches them
    const uint64_t pol_w = ptx::l2_policy_evict_first(), pol_a = ptx::l2_policy_evict_last();
    const int a_rows = 128 / csize;
    if (threadIdx.x == 32) {  // producer
        for (int n = 0; n < k_iters; n++) {
            const int s = n % stages;
            if (n >= stages) ptx::mbarrier_wait(empty0 + 8u * s, (uint32_t)((n / stages - 1) & 1));
            ptx::mbarrier_arrive_expect_tx(full0 + 8u * s, stage);  // own weights + the whole activation box
            ptx::tma_load_3d_hint(base + (uint32_t)s * stage, &wmap, n * 64, (int)blockIdx.x * R, 0, full0 + 8u * s, pol_w);
            if (!use_a) continue;
            const uint32_t a_dst = base + (uint32_t)s * stage + wbytes + rank * (uint32_t)a_rows * 128u;
            if (csize > 1)
                ptx::tma_load_3d_multicast(a_dst, &amap, n * 64, (int)rank * a_rows, 0, full0 + 8u * s,
                                           (uint16_t)((1u << csize) - 1u), pol_a);
            else
                ptx::tma_load_3d_hint(a_dst, &amap, n * 64, 0, 0, full0 + 8u * s, pol_a);
        }
    } else if (threadIdx.x < 32 && arrive == 3) {  // consumer warp: lane r frees the stage in the CTA of rank r
        const int lane = (int)threadIdx.x;
        for (int n = 0; n < k_iters; n++) {
            const int s = n % stages;
            ptx::mbarrier_wait(full0 + 8u * s, (uint32_t)((n / stages) & 1));
            const long long t0 = clock64();
            while (clock64() - t0 < hold) {
            }
            __syncwarp();
            if (lane < csize) ptx::mbarrier_arrive_cluster(ptx::mapa_shared(empty0 + 8u * s, (uint32_t)lane));
        }
    } else if (threadIdx.x == 0) {  // consumer
        for (int n = 0; n < k_iters; n++) {
            const int s = n % stages;
            ptx::mbarrier_wait(full0 + 8u * s, (uint32_t)((n / stages) & 1));
            const long long t0 = clock64();
            while (clock64() - t0 < hold) {
            }
            // arrive 0: this CTA's own barrier only (no multicast: nothing of a peer's in this stage); 1: every
            // CTA's, 2: every CTA's with release at cluster scope; 3 (above): a lane for each CTA, at once; 4: the
            // own barrier by its local address, the peers' by cluster addresses
            if (csize > 1 && arrive == 4) {
                ptx::mbarrier_arrive(empty0 + 8u * s);
                for (int r = 1; r < csize; r++)
                    ptx::mbarrier_arrive_cluster(ptx::mapa_shared(empty0 + 8u * s, (rank + (uint32_t)r) % (uint32_t)csize));
            } else if (csize > 1 && arrive)
                for (int r = 0; r < csize; r++) {
                    const uint32_t bar = ptx::mapa_shared(empty0 + 8u * s, (uint32_t)r);
                    if (arrive == 2) ptx::mbarrier_arrive_cluster_release(bar);
                    else ptx::mbarrier_arrive_cluster(bar);
                }
            else
                ptx::mbarrier_arrive(empty0 + 8u * s);
        }
    }
    if (csize > 1) ptx::cluster_sync();  // no peer still copies into this CTA or arrives on its barriers
#endif
}

// The attention's KV stream (mla_attention_sm90_seesaw.cu without its arithmetic): a CTA per SM streams its
// sequence's tiles of 64 cache rows × 576 bf16 (9 boxes of 64 × 64, 128-byte swizzle, one mbarrier a box) through two
// 72 KB buffers; a tile's buffer is refilled with tile n + 2 once the tile is consumed. One thread a CTA, as in the
// kernel (its consumers issue the copies): it waits for a tile, holds it `hold` cycles (the pair's arithmetic), then
// refills its buffer. pairwise: two tiles at a time, both buffers in phase (the seesaw order: both S, then both P·V),
// held 2·hold. CTA c reads sequence c / seq_div: 1 every CTA its own (all from DRAM), 2 the kernel's two head groups
// of a sequence (half the reads hit L2), ≥ grid one sequence for all (L2-resident: the L2 → SM path alone).
// csize 2 (with seq_div 2): the two CTAs of a sequence are a cluster; each copies half the boxes of a tile and
// multicasts them to both, and refills a buffer once both have consumed it (each consumer arrives on the buffer's
// `empty` barrier in both CTAs). cycles[c]: clock64 over the CTA's tiles.
__global__ void __launch_bounds__(64, 1) kv_kernel(const __grid_constant__ CUtensorMap kv_map, int n_tiles, int seq_div,
                                                  int csize, int hold, int pairwise, long long *cycles) {
#if LATTE_PTX_SM90A
    constexpr int kChunks = 9;
    constexpr uint32_t kChunk = 64 * 128, kTileBytes = kChunks * kChunk;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = ptx::smem_u32(smem_raw);
    const uint32_t base = (raw + 1023u) & ~1023u;
    const uint32_t full0 = base + 2 * kTileBytes, empty0 = full0 + 8u * 2 * kChunks;
    const uint32_t rank = csize > 1 ? ptx::cluster_ctarank() : 0u;
    if (threadIdx.x == 0) {
        for (int i = 0; i < 2 * kChunks; i++) ptx::mbarrier_init(full0 + 8u * i, 1);
        for (int b = 0; b < 2; b++) ptx::mbarrier_init(empty0 + 8u * b, (uint32_t)csize);
        ptx::fence_mbarrier_init();
    }
    __syncthreads();
    if (csize > 1) ptx::cluster_sync();  // the peer's barriers are initialized before a multicast reaches them
    if (threadIdx.x == 0) {
        const int seq = (int)blockIdx.x / seq_div;
        const uint64_t pol = ptx::l2_policy_evict_first();
        const auto issue = [&](int tile, int buf) {
            for (int c = 0; c < kChunks; c++) {
                const uint32_t bar = full0 + 8u * (uint32_t)(buf * kChunks + c);
                const uint32_t dst = base + (uint32_t)buf * kTileBytes + (uint32_t)c * kChunk;
                ptx::mbarrier_arrive_expect_tx(bar, kChunk);
                if (csize == 1) ptx::tma_load_3d_hint(dst, &kv_map, 64 * c, 64 * tile, seq, bar, pol);
                else if ((uint32_t)c % 2u == rank)
                    ptx::tma_load_3d_multicast(dst, &kv_map, 64 * c, 64 * tile, seq, bar, (uint16_t)3u, pol);
            }
        };
        const auto wait_tile = [&](int tile) {
            for (int c = 0; c < kChunks; c++)
                ptx::mbarrier_wait(full0 + 8u * (uint32_t)((tile & 1) * kChunks + c), (uint32_t)((tile >> 1) & 1));
        };
        const auto refill = [&](int tile) {  // tile is consumed: its buffer takes tile + 2
            const int buf = tile & 1;
            if (csize > 1) {
                ptx::mbarrier_arrive(empty0 + 8u * buf);
                ptx::mbarrier_arrive_cluster(ptx::mapa_shared(empty0 + 8u * buf, rank ^ 1u));
                if (tile + 2 < n_tiles) ptx::mbarrier_wait(empty0 + 8u * buf, (uint32_t)((tile >> 1) & 1));
            }
            if (tile + 2 < n_tiles) issue(tile + 2, buf);
        };
        const long long t0 = clock64();
        issue(0, 0);
        if (n_tiles > 1) issue(1, 1);
        const int step = pairwise ? 2 : 1;
        for (int n = 0; n < n_tiles; n += step) {
            wait_tile(n);
            if (pairwise && n + 1 < n_tiles) wait_tile(n + 1);
            const long long h0 = clock64();
            while (clock64() - h0 < (long long)hold * step) {
            }
            refill(n);
            if (pairwise && n + 1 < n_tiles) refill(n + 1);
        }
        cycles[blockIdx.x] = clock64() - t0;
    }
    __syncthreads();
    if (csize > 1) ptx::cluster_sync();  // no peer still copies into this CTA or arrives on its barriers
#endif
}

// The tensor maps of the ring and mcast modes: the weights, `ctas`·R rows of K bf16 in `buf` (boxes of 64 columns ×
// R rows), and a new [128][K] activation matrix (boxes of 64 columns × a_box_rows[i] rows, one map each)
static bool stream_maps(char *buf, int R, int K, int ctas, CUtensorMap *wmap, CUtensorMap *amaps, const uint32_t *a_box_rows,
                        int n_amaps) {
    const uint64_t dims[3] = {(uint64_t)K, (uint64_t)ctas * R, 1}, str[2] = {(uint64_t)K * 2, (uint64_t)K * 2 * ctas * R};
    const uint32_t box[3] = {64, (uint32_t)R, 1};
    char *act;
    CK(cudaMalloc(&act, (size_t)128 * K * 2));
    CK(cudaMemset(act, 0x3c, (size_t)128 * K * 2));
    const uint64_t adims[3] = {(uint64_t)K, 128, 1}, astr[2] = {(uint64_t)K * 2, (uint64_t)K * 2 * 128};
    bool ok = tma_encode_bf16_3d(wmap, buf, dims, str, box);
    for (int i = 0; i < n_amaps; i++) {
        const uint32_t abox[3] = {64, a_box_rows[i], 1};
        ok = ok && tma_encode_bf16_3d(&amaps[i], act, adims, astr, abox);
    }
    return ok;
}

// `kernel` on `ctas` CTAs of 64 threads with `smem` bytes each, in clusters of `csize` CTAs
template <typename... Params, typename... Args>
static void launch_clusters(int ctas, size_t smem, int csize, void (*kernel)(Params...), Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)ctas);
    cfg.blockDim = dim3(64);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = (unsigned)csize, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

int main(int argc, char **argv) {
    const size_t bytes = argc > 1 ? (size_t)atof(argv[1]) * 1e6 : 235ull << 20;
    int sms = 0, l2 = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    char *buf, *flush;
    unsigned *out;
    const size_t flush_bytes = (size_t)l2 * 3;
    CK(cudaMalloc(&buf, bytes + (1 << 20)));
    CK(cudaMalloc(&flush, flush_bytes));
    CK(cudaMalloc(&out, 64));
    CK(cudaMemset(buf, 0x3c, bytes));
    CK(cudaMemset(flush, 0x5a, flush_bytes));
    CK(cudaDeviceSynchronize());
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("tma_stream: %s, %d SMs, L2 %d MB, streaming %.1f MB per launch (read-only flush of %zu MB before each)\n",
           prop.name, sms, l2 >> 20, bytes / 1e6, flush_bytes >> 20);
    auto time_it = [&](const char *name, size_t streamed, auto launch) {
        std::vector<float> ms;
        for (int r = 0; r < 17; r++) {
            ldg_kernel<<<sms * 8, 256>>>((const uint4 *)flush, flush_bytes / 16, out);
            CK(cudaEventRecord(e0));
            launch();
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            if (r >= 2) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const double us = ms[ms.size() / 2] * 1e3;
        printf("  %-28s %8.1f us  %5.2f TB/s\n", name, us, streamed / us * 1e-6);
    };
    if (argc > 2 && !strcmp(argv[2], "kv")) {  // the attention's KV stream: tma_stream MB kv [tokens]
        const int tokens = argc > 3 ? atoi(argv[3]) : 6144, n_tiles = tokens / 64;
        const int ctas = sms / 2 * 2;
        char *cache;
        const size_t cache_bytes = (size_t)ctas * tokens * 576 * 2;
        CK(cudaMalloc(&cache, cache_bytes));
        CK(cudaMemset(cache, 0x3c, cache_bytes));
        long long *cycles;
        CK(cudaMalloc(&cycles, ctas * sizeof(long long)));
        const size_t smem = 2 * 9 * 8192 + 2 * 9 * 8 + 2 * 8 + 1024;
        CK(cudaFuncSetAttribute(kv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        printf("  kv: %d CTAs, %d tiles of 64 x 576 bf16 each (72 KB), two buffers; cycles a tile: median over CTAs\n",
               ctas, n_tiles);
        // seq_div, csize, hold (cycles a tile), pairwise
        struct T { int seq_div, csize, hold, pairwise; };
        const T ts[] = {{1, 1, 0, 0},    {2, 1, 0, 0},    {2, 2, 0, 0},    {100000, 1, 0, 0}, {2, 1, 0, 1},
                        {2, 2, 0, 1},    {2, 1, 2000, 0}, {2, 2, 2000, 0}, {2, 1, 2000, 1},   {2, 2, 2000, 1},
                        {2, 1, 2700, 1}, {2, 2, 2700, 1}, {2, 1, 3000, 1}, {2, 2, 3000, 1},   {100000, 1, 2000, 1},
                        {1, 1, 2000, 1}, {2, 1, 3500, 1}, {2, 2, 3500, 1}};
        for (const T &t : ts) {
            const int n_seq = t.seq_div >= ctas ? 1 : ctas / t.seq_div;
            CUtensorMap map;
            const uint64_t dims[3] = {576, (uint64_t)tokens, (uint64_t)n_seq};
            const uint64_t str[2] = {576 * 2, (uint64_t)tokens * 576 * 2};
            const uint32_t box[3] = {64, 64, 1};
            if (!tma_encode_bf16_3d(&map, cache, dims, str, box)) {
                printf("  kv: encode failed\n");
                return 1;
            }
            char name[96];
            snprintf(name, sizeof name, "%s%s, hold %4d%s", t.seq_div == 1 ? "own seq" : t.seq_div == 2 ? "seq / 2 CTAs" : "one seq",
                     t.csize > 1 ? " mcast" : "", t.hold, t.pairwise ? " pairs" : "");
            time_it(name, (size_t)ctas * n_tiles * 9 * 8192, [&] {
                launch_clusters(ctas, smem, t.csize, kv_kernel, map, n_tiles, t.seq_div, t.csize, t.hold, t.pairwise, cycles);
            });
            std::vector<long long> cyc(ctas);
            CK(cudaMemcpy(cyc.data(), cycles, ctas * sizeof(long long), cudaMemcpyDeviceToHost));
            std::sort(cyc.begin(), cyc.end());
            printf("  %-28s cycles a tile: median %6.0f  max %6.0f  (ingest %.1f B/cycle a CTA)\n", "",
                   (double)cyc[ctas / 2] / n_tiles, (double)cyc[ctas - 1] / n_tiles, 9.0 * 8192 * n_tiles / cyc[ctas / 2]);
        }
        return 0;
    }
    if (argc > 2 && !strcmp(argv[2], "mcast")) {  // the out projection's stream: tma_stream MB mcast [R] [K]
        const int R = argc > 3 ? atoi(argv[3]) : 64, K = argc > 4 ? atoi(argv[4]) : 16384;
        const int ctas = (int)(bytes / ((size_t)R * K * 2)) / 4 * 4;
        CUtensorMap wmap, amap[3];
        const uint32_t a_rows[3] = {128, 64, 32};  // the activation box of clusters of 1, 2, 4
        const bool ok = stream_maps(buf, R, K, ctas, &wmap, amap, a_rows, 3);
        if (!ok) {
            printf("  mcast: encode failed\n");
            return 1;
        }
        printf("  mcast: %d CTAs of %d weight rows, K %d, activations 128 x %d bf16 (L2-resident)\n", ctas, R, K, K);
        struct T { int stages, use_a, csize, hold, arrive; };
        const T ts[] = {{8, 0, 1, 0, 0}, {8, 1, 1, 0, 0}, {8, 0, 2, 0, 0}, {8, 0, 2, 0, 1}, {8, 0, 2, 0, 3},
                        {8, 0, 2, 0, 4}, {8, 1, 2, 0, 1}, {8, 1, 2, 0, 3}, {8, 1, 2, 0, 4}, {8, 1, 4, 0, 3},
                        {8, 1, 1, 500, 0}, {8, 1, 2, 500, 3}};
        for (const T &t : ts) {
            const size_t smem = (size_t)t.stages * ((size_t)R * 128 + (t.use_a ? 128 * 128 : 0)) + 16 * t.stages + 1024;
            if (smem > 232448) continue;
            CK(cudaFuncSetAttribute(mcast_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            char name[96];
            snprintf(name, sizeof name, "%d x %s, cluster %d%s, hold %d", t.stages, t.use_a ? "(W+A)" : "W", t.csize,
                     t.csize == 1 ? "" : t.arrive == 0 ? " (own barrier)" : t.arrive == 1 ? " (all)" : t.arrive == 2 ? " (all, rel.)"
                     : t.arrive == 3 ? " (lanes)" : " (own local)", t.hold);
            const int ai = t.csize == 1 ? 0 : t.csize == 2 ? 1 : 2;
            time_it(name, (size_t)ctas * R * K * 2, [&] {
                launch_clusters(ctas, smem, t.csize, mcast_kernel, wmap, amap[ai], R, K / 64, t.stages, t.use_a, t.csize,
                                t.hold, t.arrive);
            });
        }
        return 0;
    }
    if (argc > 2 && !strcmp(argv[2], "ring")) {  // the fused query kernel's ring: tma_stream MB ring [R] [K]
        const int R = argc > 3 ? atoi(argv[3]) : 192, K = argc > 4 ? atoi(argv[4]) : 1536;
        const int ctas = (int)(bytes / ((size_t)R * K * 2));
        CUtensorMap wmap, amap;
        const uint32_t a_rows = 128;
        if (!stream_maps(buf, R, K, ctas, &wmap, &amap, &a_rows, 1)) {
            printf("  ring: encode failed\n");
            return 1;
        }
        // w_stages, a_stages, use_a, kb (weight boxes a stage), hold (cycles a stage), free_first (free, then hold)
        struct T { int w_stages, a_stages, use_a, kb, hold, free_first; };
        const T ts[] = {{5, 0, 1, 1, 0, 0},    {5, 0, 1, 1, 900, 0},  {5, 0, 1, 1, 900, 1},  {3, 0, 0, 1, 900, 0},
                        {4, 0, 0, 1, 900, 0},  {5, 0, 0, 1, 900, 0},  {8, 0, 0, 1, 900, 0},  {8, 0, 0, 1, 900, 1},
                        {5, 0, 0, 1, 450, 0},  {5, 0, 0, 1, 600, 0},  {5, 0, 0, 1, 1200, 0}, {4, 0, 0, 2, 1800, 0},
                        {4, 0, 0, 2, 0, 0},    {2, 0, 0, 4, 0, 0},    {5, 0, 1, 1, 1500, 0}, {5, 0, 1, 1, 1500, 1}};
        for (const T &t : ts) {
            const size_t wst = (size_t)t.kb * R * 128 + (t.a_stages == 0 && t.use_a ? 128 * 128 : 0);
            const size_t smem = t.w_stages * wst + (size_t)t.a_stages * 128 * 128 + 32 * (t.w_stages + t.a_stages) + 1024;
            if (smem > 232448) continue;
            CK(cudaFuncSetAttribute(ring_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            char name[96];
            if (t.a_stages == 0)
                snprintf(name, sizeof name, "hold %4d%s: one ring %d x %s%s", t.hold, t.free_first ? " (freed first)" : "",
                         t.w_stages, t.use_a ? "(W+A)" : "W", t.kb > 1 ? (t.kb == 2 ? " 2 boxes" : " 4 boxes") : "");
            else
                snprintf(name, sizeof name, "hold %4d: W ring %d, A ring %d", t.hold, t.w_stages, t.a_stages);
            time_it(name, (size_t)ctas * R * K * 2, [&] {
                ring_kernel<<<ctas, 96, smem>>>(wmap, amap, R, K / 64, t.w_stages, t.a_stages, t.hold, t.use_a, t.kb,
                                                t.free_first);
            });
        }
        return 0;
    }
    if (argc > 2 && !strcmp(argv[2], "tile")) {  // the weight stream's box order: tma_stream MB tile [R] [K]
        const int R = argc > 3 ? atoi(argv[3]) : 192, K = argc > 4 ? atoi(argv[4]) : 1536;
        const int ctas = (int)(bytes / ((size_t)R * K * 2));
        const uint64_t dims[3] = {(uint64_t)K, (uint64_t)ctas * R, 1}, str[2] = {(uint64_t)K * 2, (uint64_t)K * 2 * ctas * R};
        struct T { int box_rows, kb, stages; };
        const T ts[] = {{R, 1, 5}, {R, 1, 8}, {R / 2, 2, 5}, {R / 4, 4, 5}, {R / 8, 8, 5}, {R / 2, 2, 8}, {R / 4, 4, 8}};
        for (const T &t : ts) {
            CUtensorMap map;
            const uint32_t box[3] = {64, (uint32_t)t.box_rows, 1};
            if (!tma_encode_bf16_3d(&map, buf, dims, str, box)) {
                printf("  tile: encode failed for %d rows\n", t.box_rows);
                continue;
            }
            const size_t smem = (size_t)t.stages * t.kb * t.box_rows * 128 + 16 * t.stages + 1024;
            CK(cudaFuncSetAttribute(tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            char name[80];
            snprintf(name, sizeof name, "tile %3d rows x %d boxes, %d stages", t.box_rows, t.kb, t.stages);
            time_it(name, (size_t)ctas * R * K * 2,
                    [&] { tile_kernel<<<ctas, 64, smem>>>(map, R, K / 64, t.box_rows, t.kb, t.stages); });
        }
        {  // the same bytes as one contiguous share per CTA (1-D bulk copies, 5 stages of 24 KB)
            const uint32_t stage = 24u << 10;
            const size_t smem = 5 * stage + 16 * 5, share = (size_t)R * K * 2 / stage * stage;
            CK(cudaFuncSetAttribute(tma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            time_it("contiguous 5x24 KB", share * ctas, [&] { tma_kernel<<<ctas, 64, smem>>>(buf, share, stage, 5, 1); });
        }
        return 0;
    }
    if (argc > 2 && !strcmp(argv[2], "split")) {  // a kernel boundary inside a stream: tma_stream MB split A_MB
        // A MB then MB - A MB as two launches (eager, and replayed from a CUDA graph as the layer runs), against one
        // launch of MB: what a phase boundary costs a weight stream (the down projection, then the query kernel's)
        const size_t first = argc > 3 ? (size_t)(atof(argv[3]) * 1e6) : 30000000;
        const uint32_t stage = 32u << 10;
        const int stages = 6;
        const size_t smem = stages * stage + 16 * stages;
        CK(cudaFuncSetAttribute(tma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        const size_t share_a = first / sms / stage * stage, share_b = (bytes - first) / sms / stage * stage,
                     share_all = share_a + share_b;
        auto launch_a = [&](cudaStream_t st) { tma_kernel<<<sms, 64, smem, st>>>(buf, share_a, stage, stages, 1); };
        auto launch_b = [&](cudaStream_t st) {
            tma_kernel<<<sms, 64, smem, st>>>(buf + share_a * sms, share_b, stage, stages, 1);
        };
        cudaStream_t st;
        CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        launch_a(st);
        launch_b(st);
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        char name[64];
        snprintf(name, sizeof name, "first %.0f MB alone", share_a * sms / 1e6);
        time_it(name, share_a * sms, [&] { launch_a(0); });
        snprintf(name, sizeof name, "rest %.0f MB alone", share_b * sms / 1e6);
        time_it(name, share_b * sms, [&] { launch_b(0); });
        time_it("both, two launches", share_all * sms, [&] { launch_a(0), launch_b(0); });
        time_it("both, two launches (graph)", share_all * sms, [&] { CK(cudaGraphLaunch(ge, 0)); });
        time_it("both, one launch", share_all * sms, [&] { tma_kernel<<<sms, 64, smem>>>(buf, share_all, stage, stages, 1); });
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
        CK(cudaStreamDestroy(st));
        return 0;
    }
    time_it("ldg (8 CTAs x 256 / SM)", bytes, [&] { ldg_kernel<<<sms * 8, 256>>>((const uint4 *)buf, bytes / 16, out); });
    time_it("ldg (32 CTAs x 256 / SM)", bytes, [&] { ldg_kernel<<<sms * 32, 256>>>((const uint4 *)buf, bytes / 16, out); });
    struct Cfg { int stages; uint32_t stage_kb; int per_sm; int evict_first; };
    const Cfg cfgs[] = {{4, 32, 1, 1}, {4, 32, 1, 0}, {6, 32, 1, 1}, {8, 24, 1, 1}, {12, 16, 1, 1}, {24, 8, 1, 1},
                        {48, 4, 1, 1},  {3, 32, 2, 1}, {6, 16, 2, 1}, {12, 8, 2, 1},  {4, 16, 4, 1}, {8, 8, 4, 1}};
    for (const Cfg &c : cfgs) {
        const uint32_t stage = c.stage_kb << 10;
        const size_t smem = (size_t)c.stages * stage + 16 * c.stages;
        CK(cudaFuncSetAttribute(tma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        const int grid = sms * c.per_sm;
        const size_t share = bytes / grid / stage * stage;
        char name[64];
        snprintf(name, sizeof name, "tma %2dx%2u KB, %d/SM%s", c.stages, c.stage_kb, c.per_sm, c.evict_first ? "" : ", normal");
        time_it(name, share * grid, [&] { tma_kernel<<<grid, 64, smem>>>(buf, share, stage, c.stages, c.evict_first); });
    }
    return 0;
}
