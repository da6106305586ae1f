// A GEMM for a few rows of activations: y = x · wᵀ for 1-16 rows of x, batched, as one weight stream (gemv_bf16.cuh).
//
// What and why: at batches 1-16 the MLA layer's projections move their weights once and do 1-16 multiply-adds per
// weight byte: the floor is the weights at copy bandwidth. The down projection ([Wq_down; Wkv_down], 30 MB at
// DeepSeek-R1's sizes: 7.2 µs on an H200, 10 on an H100) took 13.5-14.6 µs (H200) and 16.5 µs (H100) in the layer
// with cuBLASLt's tuned choice (split-K 4 and a reduction), and no cuBLASLt kernel lets the kernel after it start
// early. Here a warp owns 16 rows of w (a row group) and streams them straight into registers, with no shared-memory
// ring: each thread loads 16 bytes of two rows per 32 k, U chunks of 64 k at a time (up to 128 KB in flight per SM).
// Where k is long the WK warps of a row group split it (the down projection: all 16 warps of a CTA on one row group,
// 2112 rows: 132 CTAs). Nothing else in the kernel waits on memory, so the stream is the kernel.
//
// The product is on the tensor cores (mma.sync m16n8k16: the 16 rows of w are the A operand, up to 8 rows of x the
// B operand), with the k order inside each 32-wide chunk permuted so that every thread's fragment is one 16-byte
// load: logical k 2t..2t+1 of a k16 step is physical 8t..8t+1 (t = lane % 4), 2t+8..2t+9 is 8t+2..8t+3, and the second
// step takes 8t+4..8t+7. A and B use the same permutation, so the sum is the same dot product in another order
// (fp32, as any GEMM's order is its own). The warps' partial sums meet in shared memory, summed in warp order
// (deterministic), and are rounded to bf16 once.
//
// Reference: the layer's other engines for the same products (cuBLASLt, gemm_sm90, gemm_bf16); tests/gpu_gemv.cu
// compares every element against a float64 reference at odd sizes, batched, with padding; tests/gpu_mla.c runs the
// layer with it (the default at batches up to kGemvMaxRows) and without it (LATTE_MLA_DOWN_GEMV=0, LATTE_MLA_Q_GEMV).
//
// The kernel (one version), templated on NT (x rows in tiles of 8: 1 or 2), U (chunks of 64 k in flight per warp)
// and WK (warps per row group, splitting k: 16, 4 or 1; a CTA of 16 warps holds 16 / WK row groups).
#include "cuda/gemv_bf16.cuh"
#include "cuda/ptx.cuh"

namespace latte {
namespace {

constexpr int kWarps = 16;
constexpr int kThreads = 32 * kWarps;
constexpr int kRows = 16;    // rows of w per row group (the mma's M)
constexpr int kChunk = 64;   // k per chunk: 128 bytes of a row, two 16-byte loads per thread and row

// weights: read once (not in L1, evict-first in L2); x: re-read by every CTA (L1 and L2 as usual). Both issue where
// they stand (volatile), so a warp's U chunks are all in flight before its first mma.
__device__ __forceinline__ uint4 load_w(const __nv_bfloat16 *p, bool ok, uint64_t policy) {
    return ok ? ptx::ld_stream_16(p, policy) : make_uint4(0u, 0u, 0u, 0u);
}
__device__ __forceinline__ uint4 load_x(const __nv_bfloat16 *p, bool ok) {
    return ok ? ptx::ld_nc_early(p) : make_uint4(0u, 0u, 0u, 0u);
}

template <int NT, int U, int WK>
__global__ void __launch_bounds__(kThreads) gemv_bf16_kernel(const GemvParams p, int pdl) {
    constexpr int RG = kWarps / WK;  // row groups per CTA
    __shared__ float red[kWarps][kRows][8 * NT];
    ptx::griddep_launch_dependents();  // the next kernel may start loading what does not depend on y

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    const int kw = warp % WK;                                   // the warp's share of k
    const int rg_row = (blockIdx.x * RG + warp / WK) * kRows;   // its row group's first row
    const int64_t z = blockIdx.y;
    const int row0 = rg_row + g, row1 = row0 + 8;
    const bool ok0 = row0 < p.N, ok1 = row1 < p.N;
    const __nv_bfloat16 *wz = p.w + z * p.w_z, *xz = p.x + z * p.x_z;
    const __nv_bfloat16 *w0 = wz + (int64_t)(ok0 ? row0 : 0) * p.ldw + 8 * t4;
    const __nv_bfloat16 *w1 = wz + (int64_t)(ok1 ? row1 : 0) * p.ldw + 8 * t4;
    const __nv_bfloat16 *xr[NT];
    bool xok[NT];
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        const int b = 8 * nt + g;
        xok[nt] = b < p.M;
        xr[nt] = xz + (int64_t)(xok[nt] ? b : 0) * p.ldx + 8 * t4;
    }

    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;

    const int n_chunks = (p.K + kChunk - 1) / kChunk;
    const uint64_t policy = ptx::stream_policy();
    bool wait = pdl != 0;  // x only after the kernel before has completed (its weights before)
#pragma unroll 1
    for (int c0 = kw; c0 < n_chunks; c0 += WK * U) {
        // all U chunks' loads first (the bytes in flight), then their products
        uint4 wa[U][2], wb[U][2], xv[U][NT][2];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int c = c0 + u * WK;
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int k = kChunk * c + 32 * hf;
                const bool ok = c < n_chunks && k + 8 * t4 < p.K;  // K % 8 == 0: the whole 16 bytes are in the row
                wa[u][hf] = load_w(w0 + k, ok && ok0, policy);
                wb[u][hf] = load_w(w1 + k, ok && ok1, policy);
            }
        }
        if (wait) ptx::griddep_wait(), wait = false;
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int c = c0 + u * WK;
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int k = kChunk * c + 32 * hf;
                const bool ok = c < n_chunks && k + 8 * t4 < p.K;
#pragma unroll
                for (int nt = 0; nt < NT; nt++) xv[u][nt][hf] = load_x(xr[nt] + k, ok && xok[nt]);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const uint4 a0 = wa[u][hf], a1 = wb[u][hf];
                const uint32_t lo[4] = {a0.x, a1.x, a0.y, a1.y}, hi[4] = {a0.z, a1.z, a0.w, a1.w};
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    ptx::mma_bf16_16816(acc[nt], lo, xv[u][nt][hf].x, xv[u][nt][hf].y);
                    ptx::mma_bf16_16816(acc[nt], hi, xv[u][nt][hf].z, xv[u][nt][hf].w);
                }
            }
        }
    }
    if (pdl) ptx::griddep_wait();  // (a warp with no chunk) nothing is written before the kernel before has completed

    // the warps' partial sums: d0 d1 (row g, x rows 2t4, 2t4 + 1), d2 d3 (row g + 8, same)
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        red[warp][g][8 * nt + 2 * t4] = acc[nt][0];
        red[warp][g][8 * nt + 2 * t4 + 1] = acc[nt][1];
        red[warp][g + 8][8 * nt + 2 * t4] = acc[nt][2];
        red[warp][g + 8][8 * nt + 2 * t4 + 1] = acc[nt][3];
    }
    __syncthreads();
    __nv_bfloat16 *yz = p.y + z * p.y_z;
    for (int i = threadIdx.x; i < RG * kRows * 8 * NT; i += kThreads) {
        const int rg = i / (kRows * 8 * NT), r = (i / (8 * NT)) % kRows, b = i % (8 * NT);
        const int n = (blockIdx.x * RG + rg) * kRows + r;
        if (b >= p.M || n >= p.N) continue;
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < WK; w++) s += red[rg * WK + w][r][b];
        yz[(int64_t)b * p.ldy + n] = __float2bfloat16_rn(s);
    }
}

bool aligned16(const void *ptr) { return ((uintptr_t)ptr & 15u) == 0; }

template <int NT, int U, int WK>
cudaError_t launch(const GemvParams &p, bool pdl, cudaStream_t stream) {
    constexpr int RG = kWarps / WK;
    const int64_t groups = ((int64_t)p.N + kRows - 1) / kRows;
    const dim3 grid((unsigned)((groups + RG - 1) / RG), (unsigned)p.Z);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(kThreads);
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, gemv_bf16_kernel<NT, U, WK>, p, pdl ? 1 : 0);
}

}  // namespace

bool gemv_bf16_supports(const GemvParams &p) {
    return p.x && p.w && p.y && p.M >= 1 && p.M <= kGemvMaxRows && p.N >= 1 && p.K >= 8 && p.K % 8 == 0 && p.Z >= 1 &&
           p.Z <= 65535 && aligned16(p.x) && aligned16(p.w) && p.ldx >= p.K && p.ldx % 8 == 0 && p.ldw >= p.K &&
           p.ldw % 8 == 0 && p.x_z % 8 == 0 && p.w_z % 8 == 0 && (p.Z == 1 || (p.x_z >= 0 && p.w_z >= 0)) &&
           (p.M == 1 || p.ldy >= p.N) && ((int64_t)p.N + kRows - 1) / kRows <= 0x7fffffff;
}

cudaError_t gemv_bf16_launch(const GemvParams &p, bool pdl, cudaStream_t stream) {
    if (!gemv_bf16_supports(p)) return cudaErrorNotSupported;
    // the warps per row group by the chunks of k: enough chunks a warp to keep U in flight, and enough CTAs
    const int chunks = (p.K + kChunk - 1) / kChunk;
    const bool two = p.M > 8;
    if (chunks >= 48) return two ? launch<2, 3, 16>(p, pdl, stream) : launch<1, 4, 16>(p, pdl, stream);
    if (chunks >= 12) return two ? launch<2, 2, 4>(p, pdl, stream) : launch<1, 3, 4>(p, pdl, stream);
    return two ? launch<2, 2, 1>(p, pdl, stream) : launch<1, 2, 1>(p, pdl, stream);
}

}  // namespace latte
