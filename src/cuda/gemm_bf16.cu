// Skinny bf16 GEMM for the MLA projections: C[z][M,N] = A[z][M,K] · B[z][N,K]ᵀ, fp32 accumulation.
//
// What and why: every projection of the MLA decode step is "a few hundred activation rows times a big
// weight matrix". The weights (N×K, 374 MB for DeepSeek) are read exactly once; the activations (M×K,
// a few MB) are re-read from L2 by every N tile. So the kernel is a weight-streaming pipe: wide N tiles
// (128), a multi-stage cp.async pipeline to keep enough bytes in flight, tensor cores (mma.sync) so the
// arithmetic of up to 128 rows hides behind the loads, and split-K when N alone does not fill the GPU.
//
// Reference: the fallback kernel below (one thread per output, sequential fp32 sum) computes the same
// function; LATTE_MLA_SIMPLE_GEMM=1 selects it for the whole layer.
//
// Kernel versions:
//   gemm_simple_kernel   one thread per output element, fp32 FMA over K: obviously correct, slow.
//   gemm_mma_kernel<BM>  tile BM x 128 x 64 (BM = 64 or 128), 8 warps in 2 (M) x 4 (N), warp tile
//                        BM/2 x 32, mma.sync m16n8k16 bf16 -> fp32, ldmatrix fragments from XOR-swizzled
//                        shared memory (16-byte chunk c of row r stored at chunk c ^ (r & 7): no bank
//                        conflicts for cp.async stores nor ldmatrix loads), 3-stage cp.async pipeline,
//                        rows beyond M / N zero-filled (cp.async src-size 0) and masked at the store.
//   gemm_reduce_kernel   sums the split-K partials in split order (deterministic), rounds to bf16.
#include "gemm_bf16.cuh"
#include "ptx.cuh"

namespace latte {
namespace {

constexpr int kBN = 128;     // tile N
constexpr int kBK = 64;      // tile K (one 128-byte smem row per tile row)
constexpr int kStages = 3;   // cp.async pipeline depth
constexpr int kThreads = 256;

template <int BM>
constexpr int smem_bytes() {
    return kStages * (BM + kBN) * kBK * 2;  // BM 128: 96 KiB (2 blocks/SM on H100), BM 64: 72 KiB
}

// one ldmatrix x4 = the B fragments (b0, b1) of two n8 tiles
__device__ __forceinline__ void ldmatrix_b_pair(uint32_t addr, uint32_t (&lo)[2], uint32_t (&hi)[2]) {
    uint32_t r[4];
    ptx::ldmatrix_x4(r, addr);
    lo[0] = r[0], lo[1] = r[1], hi[0] = r[2], hi[1] = r[3];
}

// byte offset of 16-byte chunk `chunk` (0..7) of tile row `row` (128 bytes per row), swizzled
__device__ __forceinline__ uint32_t swz(int row, int chunk) { return (uint32_t)(row * 128 + ((chunk ^ (row & 7)) << 4)); }

// ---- tensor-core kernel ---------------------------------------------------------------------------------
// grid: x = N tiles, y = split * M tiles (y = s * m_tiles + m_tile), z = batch.
template <int BM>
__global__ void __launch_bounds__(kThreads, 2) gemm_mma_kernel(const GemmProblem p, int k_tiles_per_split) {
    constexpr int MI = BM / 32;  // m16 tiles per warp (warp tile BM/2 rows)
    constexpr int NI = 4;        // n8 tiles per warp (warp tile 32 columns)
    constexpr int A_BYTES = BM * kBK * 2, B_BYTES = kBN * kBK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
    extern __shared__ __align__(128) unsigned char smem[];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 2, wn = warp & 3;
    const int m_tiles = (int)((p.M + BM - 1) / BM);
    const int m_tile = blockIdx.y % m_tiles, s = blockIdx.y / m_tiles, z = blockIdx.z;
    const int64_t m0 = (int64_t)m_tile * BM;
    const int n0 = blockIdx.x * kBN;
    const int k_tiles = p.K / kBK;
    const int kt0 = s * k_tiles_per_split;
    const int nk = min(k_tiles, kt0 + k_tiles_per_split) - kt0;  // >= 1 by gemm_choose_split

    const __nv_bfloat16 *A = p.A + (int64_t)z * p.batch_stride_a;
    const __nv_bfloat16 *B = p.B + (int64_t)z * p.batch_stride_b;
    const uint32_t sbase = ptx::smem_u32(smem);

    // Issue the loads of k tile `kt` into stage `st`: BM*8 + 128*8 chunks of 16 bytes over 256 threads.
    auto load_tile = [&](int kt, int st) {
        const int64_t k = (int64_t)(kt0 + kt) * kBK;
        const uint32_t sa = sbase + st * STAGE_BYTES, sb = sa + A_BYTES;
#pragma unroll
        for (int i = 0; i < BM * 8 / kThreads; i++) {
            const int idx = tid + i * kThreads, row = idx >> 3, chunk = idx & 7;
            const int64_t gm = m0 + row;
            const bool ok = gm < p.M;
            const __nv_bfloat16 *src = ok ? A + gm * p.lda + k + chunk * 8 : A;
            ptx::cp_async_16(sa + swz(row, chunk), src, ok);
        }
#pragma unroll
        for (int i = 0; i < kBN * 8 / kThreads; i++) {
            const int idx = tid + i * kThreads, row = idx >> 3, chunk = idx & 7;
            const int gn = n0 + row;
            const bool ok = gn < p.N;
            const __nv_bfloat16 *src = ok ? B + (int64_t)gn * p.ldb + k + chunk * 8 : B;
            ptx::cp_async_16(sb + swz(row, chunk), src, ok);
        }
    };

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

#pragma unroll
    for (int st = 0; st < kStages - 1; st++) {
        if (st < nk) load_tile(st, st);
        ptx::cp_async_commit();  // always commit, so the group count stays in step with the tiles
    }

    for (int kt = 0; kt < nk; kt++) {
        ptx::cp_async_wait<kStages - 2>();  // tile kt has landed (for this thread) ...
        __syncthreads();               // ... for every thread, and stage (kt-1) % kStages is free again
        if (kt + kStages - 1 < nk) load_tile(kt + kStages - 1, (kt + kStages - 1) % kStages);
        ptx::cp_async_commit();

        const uint32_t sa = sbase + (kt % kStages) * STAGE_BYTES, sb = sa + A_BYTES;
#pragma unroll
        for (int kk = 0; kk < kBK / 16; kk++) {
            // B fragments first (8 registers), then one A fragment at a time: keeps BM 128 within 128 registers
            uint32_t b[NI][2];
#pragma unroll
            for (int nj = 0; nj < NI / 2; nj++) {
                // matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
                const int row = wn * 32 + nj * 16 + (lane & 7) + ((lane >> 4) << 3);
                ldmatrix_b_pair(sb + swz(row, kk * 2 + ((lane >> 3) & 1)), b[2 * nj], b[2 * nj + 1]);
            }
#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
                // lanes 0-15: rows 0-15 at k 0-7; lanes 16-31: rows 0-15 at k 8-15 -> a0..a3 of m16n8k16
                uint32_t a[4];
                const int row = wm * (BM / 2) + mi * 16 + (lane & 15);
                ptx::ldmatrix_x4(a, sa + swz(row, kk * 2 + (lane >> 4)));
#pragma unroll
                for (int ni = 0; ni < NI; ni++) ptx::mma_bf16_16816(acc[mi][ni], a, b[ni][0], b[ni][1]);
            }
        }
    }
    ptx::cp_async_wait<0>();

    // Epilogue: c0,c1 at (row g, cols 2q, 2q+1), c2,c3 at row g+8 (g = lane/4, q = lane%4).
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const int64_t m = m0 + wm * (BM / 2) + mi * 16 + (lane >> 2) + half * 8;
            if (m >= p.M) continue;
#pragma unroll
            for (int ni = 0; ni < NI; ni++) {
                const int n = n0 + wn * 32 + ni * 8 + (lane & 3) * 2;
                if (n >= p.N) continue;
                const float v0 = acc[mi][ni][2 * half], v1 = acc[mi][ni][2 * half + 1];
                if (p.partial) {
                    float *dst = p.partial + (((int64_t)s * p.batch + z) * p.M + m) * p.N + n;
                    *reinterpret_cast<float2 *>(dst) = make_float2(v0, v1);
                } else {
                    __nv_bfloat16 *dst = p.C + (int64_t)z * p.batch_stride_c + m * p.ldc + n;
                    *reinterpret_cast<__nv_bfloat162 *>(dst) = __floats2bfloat162_rn(v0, v1);
                }
            }
        }
    }
}

// ---- fallback: one thread per output ---------------------------------------------------------------------
__global__ void gemm_simple_kernel(const GemmProblem p) {
    const int64_t total = (int64_t)p.batch * p.M * p.N;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int n = (int)(i % p.N);
        const int64_t m = (i / p.N) % p.M;
        const int z = (int)(i / ((int64_t)p.N * p.M));
        const __nv_bfloat16 *a = p.A + (int64_t)z * p.batch_stride_a + m * p.lda;
        const __nv_bfloat16 *b = p.B + (int64_t)z * p.batch_stride_b + (int64_t)n * p.ldb;
        float acc = 0.0f;
        for (int k = 0; k < p.K; k++) acc = fmaf(__bfloat162float(a[k]), __bfloat162float(b[k]), acc);
        if (p.partial)
            p.partial[i] = acc;  // split 1: partial[0][z][m][n]
        else
            p.C[(int64_t)z * p.batch_stride_c + m * p.ldc + n] = __float2bfloat16_rn(acc);
    }
}

// ---- split-K reduction ---------------------------------------------------------------------------------
__global__ void gemm_reduce_kernel(const float *__restrict__ partial, int split, int batch, int64_t M, int N,
                                   __nv_bfloat16 *C, int64_t ldc, int64_t batch_stride_c) {
    const int64_t plane = (int64_t)batch * M * N;  // elements per split
    for (int64_t i = 2 * (blockIdx.x * (int64_t)blockDim.x + threadIdx.x); i < plane;
         i += 2 * (int64_t)gridDim.x * blockDim.x) {
        float2 acc = *reinterpret_cast<const float2 *>(partial + i);
        for (int s = 1; s < split; s++) {
            const float2 v = *reinterpret_cast<const float2 *>(partial + s * plane + i);
            acc.x += v.x;
            acc.y += v.y;
        }
        const int n = (int)(i % N);
        const int64_t m = (i / N) % M;
        const int64_t z = i / ((int64_t)N * M);
        *reinterpret_cast<__nv_bfloat162 *>(C + z * batch_stride_c + m * ldc + n) = __floats2bfloat162_rn(acc.x, acc.y);
    }
}

int grid_for(int64_t work, int threads) {
    const int64_t blocks = (work + threads - 1) / threads;
    return (int)(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);  // grid-stride loops do the rest
}

}  // namespace

// ---- launchers ------------------------------------------------------------------------------------------
cudaError_t gemm_bf16_setup(GemmDeviceInfo *info) {
    int dev = 0;
    cudaError_t e;
    if ((e = cudaGetDevice(&dev))) return e;
    if ((e = cudaDeviceGetAttribute(&info->sm_count, cudaDevAttrMultiProcessorCount, dev))) return e;
    if ((e = cudaFuncSetAttribute(gemm_mma_kernel<64>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes<64>())))
        return e;
    if ((e = cudaFuncSetAttribute(gemm_mma_kernel<128>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes<128>())))
        return e;
    if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&info->blocks_per_sm[0], gemm_mma_kernel<64>, kThreads,
                                                           smem_bytes<64>())))
        return e;
    if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&info->blocks_per_sm[1], gemm_mma_kernel<128>, kThreads,
                                                           smem_bytes<128>())))
        return e;
    for (int i = 0; i < 2; i++)
        if (info->blocks_per_sm[i] < 1) info->blocks_per_sm[i] = 1;
    return cudaSuccess;
}

static int tile_m(int64_t M) { return M <= 64 ? 64 : 128; }

int gemm_choose_split(const GemmDeviceInfo &info, int64_t M, int N, int K, int batch, bool simple) {
    if (simple) return 1;
    const int bm = tile_m(M);
    const int64_t base = ((M + bm - 1) / bm) * (int64_t)((N + kBN - 1) / kBN) * batch;
    const int k_tiles = K / kBK;
    // Fill at least 2 waves of 132 SMs (or every resident slot, if more): enough loads in flight.
    const int64_t want = 2 * (int64_t)info.sm_count > (int64_t)info.sm_count * info.blocks_per_sm[bm == 128]
                             ? 2 * (int64_t)info.sm_count
                             : (int64_t)info.sm_count * info.blocks_per_sm[bm == 128];
    int64_t split = (want + base - 1) / base;
    const int64_t max_split = k_tiles / 4 < 16 ? k_tiles / 4 : 16;  // >= 4 k tiles (256 of K) per split
    if (split > max_split) split = max_split;
    if (split < 1) split = 1;
    // no empty split: every split gets ceil(k_tiles / split) tiles except possibly the last
    const int per = (int)((k_tiles + split - 1) / split);
    return (k_tiles + per - 1) / per;
}

size_t gemm_partial_bytes(int64_t M, int N, int batch, int split) {
    return (size_t)split * (size_t)batch * (size_t)M * (size_t)N * sizeof(float);
}

void gemm_bf16_launch(const GemmProblem &p, bool simple, cudaStream_t stream) {
    if (simple) {
        gemm_simple_kernel<<<grid_for((int64_t)p.batch * p.M * p.N, 256), 256, 0, stream>>>(p);
        return;
    }
    const int bm = tile_m(p.M);
    const int k_tiles = p.K / kBK;
    const int per = (k_tiles + p.split - 1) / p.split;
    const int m_tiles = (int)((p.M + bm - 1) / bm);
    const dim3 grid((unsigned)((p.N + kBN - 1) / kBN), (unsigned)(m_tiles * p.split), (unsigned)p.batch);
    if (bm == 64)
        gemm_mma_kernel<64><<<grid, kThreads, smem_bytes<64>(), stream>>>(p, per);
    else
        gemm_mma_kernel<128><<<grid, kThreads, smem_bytes<128>(), stream>>>(p, per);
}

void gemm_reduce_launch(const float *partial, int split, int batch, int64_t M, int N, __nv_bfloat16 *C, int64_t ldc,
                        int64_t batch_stride_c, cudaStream_t stream) {
    gemm_reduce_kernel<<<grid_for((int64_t)batch * M * N / 2, 256), 256, 0, stream>>>(partial, split, batch, M, N, C,
                                                                                      ldc, batch_stride_c);
}

}  // namespace latte
