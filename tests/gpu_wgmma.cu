// The Hopper wgmma wrappers of src/cuda/ptx.cuh, checked element by element against a CPU product, in the two
// operand layouts the attention kernel (src/cuda/mla_attention_sm90.cu) uses:
//   S-like: D[64x32] = A[64x64] · B[32x64]ᵀ, A and B K-major in 128-byte-swizzled chunks (4 k-steps of 16)
//   PV-like: D[64x256] = A[64x64] · B[64x256], A K-major, B MN-major (rows = K, 4 chunks of 64 columns)
// Small integer inputs, so every product and sum is exact in fp32: the comparison is equality.
// Exit 77 (ctest: skipped) without a GPU, on a GPU that is not compute capability 9.0, or in a build without sm_90a.
#include "cuda/ptx.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

using namespace latte;

// Byte offset of element (r, c) of a [64][64·chunks] bf16 tile stored as chunks of [64 rows][128 B], swizzled.
__host__ __device__ inline unsigned swz(int r, int c) {
    return (unsigned)(c / 64) * 8192u + (unsigned)r * 128u + ((unsigned)(((c % 64) / 8) ^ (r & 7)) << 4) + (c % 8) * 2u;
}

// One warpgroup. a: [64][64] row-major, b: S-like [32][64] (n, k), PV-like [64][256] (k, n); d: [64][N] fp32.
template <bool PV>
__global__ void wgmma_probe(const __nv_bfloat16 *a, const __nv_bfloat16 *b, float *d, unsigned lbo, unsigned sbo) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned raw = ptx::smem_u32(smem_raw);
    unsigned char *smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
    unsigned char *sa = smem, *sb = smem + 8192;
    constexpr int BR = PV ? 64 : 32, BC = PV ? 256 : 64;
    for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x)
        *reinterpret_cast<__nv_bfloat16 *>(sa + swz(i / 64, i % 64)) = a[i];
    for (int i = threadIdx.x; i < BR * BC; i += blockDim.x)
        *reinterpret_cast<__nv_bfloat16 *>(sb + swz(i / BC, i % BC)) = b[i];
    ptx::fence_proxy_async_smem();
    __syncthreads();
    const unsigned a0 = ptx::smem_u32(sa), b0 = ptx::smem_u32(sb);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int r0 = 16 * warp + g;
    if (!PV) {
        float acc[16];
        for (int i = 0; i < 16; ++i) acc[i] = 0.f;
        ptx::wgmma_fence();
        for (int kk = 0; kk < 4; ++kk)
            ptx::wgmma_m64n32k16_ss(acc, ptx::wgmma_desc_sw128(a0 + 32 * kk, 16, 1024),
                                    ptx::wgmma_desc_sw128(b0 + 32 * kk, lbo, sbo));
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
        for (int j = 0; j < 4; ++j)
            for (int e = 0; e < 4; ++e) d[(r0 + 8 * (e / 2)) * 32 + 8 * j + 2 * t + e % 2] = acc[4 * j + e];
    } else {
        float acc[128];
        for (int i = 0; i < 128; ++i) acc[i] = 0.f;
        ptx::wgmma_fence();
        for (int kk = 0; kk < 4; ++kk)
            ptx::wgmma_m64n256k16_ss_tb(acc, ptx::wgmma_desc_sw128(a0 + 32 * kk, 16, 1024),
                                        ptx::wgmma_desc_sw128(b0 + 16 * 128 * kk, lbo, sbo));
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
        for (int j = 0; j < 32; ++j)
            for (int e = 0; e < 4; ++e) d[(r0 + 8 * (e / 2)) * 256 + 8 * j + 2 * t + e % 2] = acc[4 * j + e];
    }
}

static int check(bool pv, unsigned lbo, unsigned sbo, bool expect_pass) {
    const int BR = pv ? 64 : 32, BC = pv ? 256 : 64, N = pv ? 256 : 32;
    static __nv_bfloat16 ha[64 * 64], hb[64 * 256];
    static float ref[64 * 256], got[64 * 256];
    for (int i = 0; i < 64 * 64; ++i) ha[i] = __float2bfloat16((float)(rand() % 9 - 4));
    for (int i = 0; i < BR * BC; ++i) hb[i] = __float2bfloat16((float)(rand() % 9 - 4));
    for (int m = 0; m < 64; ++m)
        for (int n = 0; n < N; ++n) {
            float s = 0.f;
            for (int k = 0; k < 64; ++k)
                s += __bfloat162float(ha[m * 64 + k]) * __bfloat162float(pv ? hb[k * 256 + n] : hb[n * 64 + k]);
            ref[m * N + n] = s;
        }
    __nv_bfloat16 *da, *db;
    float *dd;
    if (cudaMalloc(&da, sizeof ha) || cudaMalloc(&db, sizeof hb) || cudaMalloc(&dd, sizeof got)) return 1;
    cudaMemcpy(da, ha, sizeof ha, cudaMemcpyHostToDevice);
    cudaMemcpy(db, hb, sizeof hb, cudaMemcpyHostToDevice);
    cudaMemset(dd, 0xff, sizeof got);  // NaN: an element the kernel does not write fails the comparison
    const int smem = 8192 + 32768 + 1024;
    cudaError_t e;
    if (pv) {
        cudaFuncSetAttribute(wgmma_probe<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        wgmma_probe<true><<<1, 128, smem>>>(da, db, dd, lbo, sbo);
    } else {
        cudaFuncSetAttribute(wgmma_probe<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        wgmma_probe<false><<<1, 128, smem>>>(da, db, dd, lbo, sbo);
    }
    if ((e = cudaDeviceSynchronize()) != cudaSuccess) {
        printf("FAIL %s: %s\n", pv ? "pv" : "s", cudaGetErrorString(e));
        return 1;
    }
    cudaMemcpy(got, dd, sizeof got, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < 64 * N; ++i) bad += !(got[i] == ref[i]);
    cudaFree(da), cudaFree(db), cudaFree(dd);
    const bool pass = bad == 0;
    printf("%s %s layout (lbo %u, sbo %u): %d of %d elements differ%s\n", pass == expect_pass ? "ok  " : "FAIL",
           pv ? "PV-like (B MN-major)" : "S-like (B K-major)", lbo, sbo, bad, 64 * N,
           expect_pass ? "" : " (the other convention: expected to differ)");
    return pass == expect_pass ? 0 : 1;
}

int main(void) {
    int n = 0, major = 0, minor = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
#if !defined(LATTE_HAVE_SM90A)
    printf("this build has no sm_90a code: skipped\n");
    return 77;
#endif
    if (major != 9 || minor != 0) {
        printf("compute capability %d.%d, wgmma needs 9.0: skipped\n", major, minor);
        return 77;
    }
    srand(12345);
    int fails = 0;
    fails += check(false, 16, 1024, true);
    fails += check(true, 8192, 1024, true);
    fails += check(true, 1024, 8192, false);  // swapped strides must not match: the test can fail
    printf("%d passed, %d failed\n", 3 - fails, fails);
    return fails ? 1 : 0;
}
