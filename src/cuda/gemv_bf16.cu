// A GEMM for a few rows of activations: y = x · wᵀ for 1-16 rows of x, batched, as one weight stream (gemv_bf16.cuh).
//
// What and why: at batches 1-16 the MLA layer's down projection ([Wq_down; Wkv_down], 30 MB at DeepSeek-R1's sizes:
// 7.2 µs at an H200's copy bandwidth, 10 at an H100's) is a matrix-vector product: 1-16 multiply-adds per weight byte.
// cuBLASLt's tuned choice (split-K 4 and a reduction) took 13.5-14.6 µs (H200) and 16.5 µs (H100) in the layer, and no
// cuBLASLt kernel lets the kernel after it start early. Here the 16 warps of a CTA own 16 rows of w (2112 rows: 132
// CTAs, one per SM on an H100 / H200) and split k between them; each warp streams its chunks (16 rows × 64 k, 2 KB)
// through its own ring of S chunks in shared memory with cp.async, so a CTA keeps 16 × S × 2 KB in flight (192 KB on
// Hopper) and refills a slot as soon as its thread has read it. Every thread copies and later reads only its own 64
// bytes of a chunk, so the ring needs no barrier: cp.async.wait_group orders each thread's copies before its reads.
//
// The product is on the tensor cores (mma.sync m16n8k16: the 16 rows of w are the A operand, the rows of x the B
// operand), with the k order inside each 32-wide half chunk permuted so that every thread's fragment is one 16-byte
// piece: logical k 2t..2t+1 of a k16 step is physical 8t..8t+1 (t = lane % 4), 2t+8..2t+9 is 8t+2..8t+3, and the
// second step takes 8t+4..8t+7. A and B use the same permutation, so the sum is the same dot product in another order
// (fp32, as any GEMM's order is its own). The 16 warps' partial sums meet in shared memory, summed in warp order
// (deterministic), and are rounded to bf16 once.
//
// Versions (H100, layer shape, isolated after an L2 flush; the layer A/B in docs/NOTES.md):
//   v1  each warp loads U = 4 chunks straight into registers, then multiplies them: 15.6 µs at batches 1-8 (1.94 TB/s),
//       20.9 at 16 (two x tiles, U = 3): the next loads wait for the whole batch of four.
//   v2  the per-warp cp.async ring (this file); 9-16 rows as two x tiles against the same chunk in registers, where
//       v1 had to hold fewer chunks in flight for them.
//
// Reference: the layer's other engines for the same product (cuBLASLt, gemm_sm90, gemm_bf16); tests/gpu_gemv.cu
// compares every element against a float64 reference at odd sizes, batched, with padding and PDL; tests/gpu_mla.c runs
// the layer with it (the default at batches up to kGemvLayerRows) and without it (LATTE_MLA_DOWN_GEMV=0).
#include "cuda/gemv_bf16.cuh"
#include "cuda/launch.cuh"
#include "cuda/ptx.cuh"
#include "cuda/smem_optin.cuh"

namespace latte {
namespace {

constexpr int kWarps = 16;
constexpr int kThreads = 32 * kWarps;
constexpr int kRows = 16;          // rows of w per CTA (the mma's M)
constexpr int kChunk = 64;         // k per chunk: 128 bytes of a row; a thread's share is 4 × 16 bytes
constexpr int kChunkBytes = 2048;  // 16 rows × 128 bytes

template <int S>
constexpr size_t ring_bytes() { return (size_t)kWarps * S * kChunkBytes; }

// a thread's 16-byte piece j (0: row g, k 0..31 of the chunk; 1: row g + 8; 2, 3: the same at k 32..63) sits at
// j·512 + lane·16 of its warp's slot: each piece's 32 lanes are contiguous, so the reads are conflict-free.
// NT tiles of 8 rows of x (NT = 2: batches 9-16): each chunk of w, once in registers, multiplies every tile.
template <int S, int NT>
__global__ void __launch_bounds__(kThreads, 1) gemv_bf16_kernel(const GemvParams p, int pdl) {
    extern __shared__ __align__(16) unsigned char ring[];
    __shared__ float red[kWarps][kRows][8 * NT];
    ptx::griddep_launch_dependents();  // the next kernel may start loading what does not depend on y

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    const int64_t z = blockIdx.y;
    const int row0 = blockIdx.x * kRows + g, row1 = row0 + 8;
    const bool ok0 = row0 < p.N, ok1 = row1 < p.N;
    const __nv_bfloat16 *wz = p.w + z * p.w_z;
    const __nv_bfloat16 *w0 = wz + (int64_t)(ok0 ? row0 : 0) * p.ldw + 8 * t4;
    const __nv_bfloat16 *w1 = wz + (int64_t)(ok1 ? row1 : 0) * p.ldw + 8 * t4;
    bool xok[NT];
    const __nv_bfloat16 *xr[NT];  // tile u: x row 8u + g (the mma's B column g)
#pragma unroll
    for (int u = 0; u < NT; u++) {
        xok[u] = 8 * u + g < p.M;
        xr[u] = p.x + z * p.x_z + (int64_t)(xok[u] ? 8 * u + g : 0) * p.ldx + 8 * t4;
    }
    const uint32_t slot0 = ptx::smem_u32(ring) + (uint32_t)(warp * S) * kChunkBytes + 16u * lane;

    const int n_chunks = (p.K + kChunk - 1) / kChunk;
    const int mine = n_chunks > warp ? (n_chunks - warp + kWarps - 1) / kWarps : 0;  // chunks warp, warp + 16, ...
    const uint64_t policy = ptx::stream_policy();
    // chunk i of the warp into slot i % S (past the warp's chunks: an empty group, so the counts stay uniform)
    auto issue = [&](int i) {
        if (i < mine) {
            const int k = kChunk * (warp + kWarps * i);
            const uint32_t dst = slot0 + (uint32_t)(i % S) * kChunkBytes;
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const bool ok = k + 32 * hf + 8 * t4 < p.K;  // K % 8 == 0: the whole 16 bytes are in the row
                ptx::cp_async_16_hint(dst + 1024u * hf, w0 + k + 32 * hf, ok && ok0, policy);
                ptx::cp_async_16_hint(dst + 1024u * hf + 512u, w1 + k + 32 * hf, ok && ok1, policy);
            }
        }
        ptx::cp_async_commit();
    };
    auto load_x = [&](int i, uint4 (&xv)[NT][2]) {  // plain (coherent) loads: with PDL, x is written during our launch
#pragma unroll
        for (int u = 0; u < NT; u++) {
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int k = kChunk * (warp + kWarps * i) + 32 * hf;
                xv[u][hf] = i < mine && xok[u] && k + 8 * t4 < p.K ? *reinterpret_cast<const uint4 *>(xr[u] + k)
                                                                    : make_uint4(0u, 0u, 0u, 0u);
            }
        }
    };

#pragma unroll
    for (int i = 0; i < S; i++) issue(i);  // the weights before the wait: they never depend on the kernel before
    if (pdl) ptx::griddep_wait();           // x only after it has completed (and y written after)

    float acc[NT][4];
#pragma unroll
    for (int u = 0; u < NT; u++) acc[u][0] = acc[u][1] = acc[u][2] = acc[u][3] = 0.0f;
    uint4 xv[NT][2];
    load_x(0, xv);
#pragma unroll 1
    for (int i = 0; i < mine; i++) {
        uint4 xn[NT][2];
        load_x(i + 1, xn);  // the next chunk's x in flight while this one's product runs
        ptx::cp_async_wait<S - 1>();  // this thread's copies of chunk i have landed
        const uint32_t src = slot0 + (uint32_t)(i % S) * kChunkBytes;
        uint4 a[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(a[j].x), "=r"(a[j].y), "=r"(a[j].z), "=r"(a[j].w)
                         : "r"(src + 512u * j));
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const uint4 r0 = a[2 * hf], r1 = a[2 * hf + 1];
            const uint32_t lo[4] = {r0.x, r1.x, r0.y, r1.y}, hi[4] = {r0.z, r1.z, r0.w, r1.w};
#pragma unroll
            for (int u = 0; u < NT; u++) {
                ptx::mma_bf16_16816(acc[u], lo, xv[u][hf].x, xv[u][hf].y);
                ptx::mma_bf16_16816(acc[u], hi, xv[u][hf].z, xv[u][hf].w);
            }
        }
        issue(i + S);  // into the slot just read (its values are in registers, consumed by the mma above)
#pragma unroll
        for (int u = 0; u < NT; u++) xv[u][0] = xn[u][0], xv[u][1] = xn[u][1];
    }
    ptx::cp_async_wait<0>();

    // the warps' partial sums: d0 d1 (row g, x rows 8u + 2t4, 8u + 2t4 + 1), d2 d3 (row g + 8, same)
#pragma unroll
    for (int u = 0; u < NT; u++) {
        red[warp][g][8 * u + 2 * t4] = acc[u][0];
        red[warp][g][8 * u + 2 * t4 + 1] = acc[u][1];
        red[warp][g + 8][8 * u + 2 * t4] = acc[u][2];
        red[warp][g + 8][8 * u + 2 * t4 + 1] = acc[u][3];
    }
    __syncthreads();
    if (threadIdx.x < kRows * 8 * NT) {
        const int r = threadIdx.x / (8 * NT), b = threadIdx.x % (8 * NT), n = blockIdx.x * kRows + r;
        if (b < p.M && n < p.N) {
            float s = 0.0f;
#pragma unroll
            for (int w = 0; w < kWarps; w++) s += red[w][r][b];
            p.y[z * p.y_z + (int64_t)b * p.ldy + n] = __float2bfloat16_rn(s);
        }
    }
}

bool aligned16(const void *ptr) { return ((uintptr_t)ptr & 15u) == 0; }

template <int S, int NT>
cudaError_t launch(const GemvParams &p, bool pdl, int device, cudaStream_t stream) {
    if (const cudaError_t e = smem_optin_once<gemv_bf16_kernel<S, NT>>(ring_bytes<S>(), device)) return e;
    const dim3 grid((unsigned)(((int64_t)p.N + kRows - 1) / kRows), (unsigned)p.Z);
    return launch_maybe_pdl(gemv_bf16_kernel<S, NT>, grid, dim3(kThreads), ring_bytes<S>(), stream, pdl, p,
                            pdl ? 1 : 0);
}

}  // namespace

constexpr size_t kRedBytes = sizeof(float) * kWarps * kRows * 16;  // the two-tile kernel's (the one-tile one: half)

// The ring's depth on a device, by what a block may opt into: 6 chunks a warp (192 KB) on Hopper, 4 (128 KB) on
// sm_80 / sm_87; 0 where it does not run (before sm_80, or 99 KB: sm_86, sm_89)
static cudaError_t ring_depth(int device, int *depth) {
    int major = 0, optin = 0;
    *depth = 0;
    if (const cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) return e;
    if (const cudaError_t e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device)) return e;
    if (major >= 8 && (size_t)optin >= ring_bytes<6>() + kRedBytes) *depth = 6;
    else if (major >= 8 && (size_t)optin >= ring_bytes<4>() + kRedBytes) *depth = 4;
    return cudaSuccess;
}

bool gemv_bf16_available(int device) {
    int depth = 0;
    if (ring_depth(device, &depth) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return depth > 0;
}

bool gemv_bf16_supports(const GemvParams &p) {
    return p.x && p.w && p.y && p.M >= 1 && p.M <= kGemvMaxRows && p.N >= 1 && p.K >= 8 && p.K % 8 == 0 && p.Z >= 1 &&
           p.Z <= 65535 && aligned16(p.x) && aligned16(p.w) && p.ldx >= p.K && p.ldx % 8 == 0 && p.ldw >= p.K &&
           p.ldw % 8 == 0 && p.x_z % 8 == 0 && p.w_z % 8 == 0 && (p.Z == 1 || (p.x_z >= 0 && p.w_z >= 0)) &&
           (p.M == 1 || p.ldy >= p.N) && ((int64_t)p.N + kRows - 1) / kRows <= 0x7fffffff;
}

cudaError_t gemv_bf16_launch(const GemvParams &p, bool pdl, cudaStream_t stream) {
    if (!gemv_bf16_supports(p)) return cudaErrorNotSupported;
    int device = 0, depth = 0;
    if (const cudaError_t e = cudaGetDevice(&device)) return e;
    if (const cudaError_t e = ring_depth(device, &depth)) return e;
    if (depth == 0) return cudaErrorNotSupported;
    const bool deep = depth == 6;
    if (p.M > 8) return deep ? launch<6, 2>(p, pdl, device, stream) : launch<4, 2>(p, pdl, device, stream);
    return deep ? launch<6, 1>(p, pdl, device, stream) : launch<4, 1>(p, pdl, device, stream);
}

}  // namespace latte
