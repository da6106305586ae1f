// The GEMM for a few rows (src/cuda/gemv_bf16.cu: y[z] = x[z] · w[z]ᵀ for 1-16 rows of x) against a float64
// reference, every element of y compared, and y's padding and the rows past the batch checked untouched.
//
//   exact:  small integer x and W (|v| <= 3), so every product and partial sum is an integer below 2^24 and exact in
//           fp32 whatever the order: y must be bf16(the exact sum), bit for bit.
//   real:   ~normal operands at several magnitudes, against float64 sums: |d| <= 2^-8 |ref| + 2^-18 Σ_k |x_k w_k|
//           (the bf16 rounding of the result, half an ulp, and fp32 accumulation in another order).
// Shapes: the layer's down projection (N = 1536 + 576 = 2112 rows, K = 7168) at batches 1, 2, 5, 8, 9, 12, 16 (9-16:
// the kernel's two x tiles), the W_UK shape
// batched over 128 heads (N = 512, K = 128: x and y strided inside the rows of q and q_attn, y's other 64 columns of
// each head NaN and never written), long k (16392, 30720: many ring laps), and odd ones: N not a multiple of 16 (a
// CTA with rows past the end), K not a multiple of 64 (a chunk with part of its copies past the row's end), K = 8,
// padded strides whose padding (x, w) is NaN and must not be read, y's padding and the rows past the batch
// NaN-poisoned and required to stay so, launches with programmatic dependent launch right behind a kernel that writes
// x. Also: the argument rules (a refused launch enqueues nothing).
// LATTE_GEMM_TIMING=1: the down projection's timing at batches 1-16 (median of 20 launches, each after a read-only L2
// flush).
// Exit 77 (ctest: skipped) without a GPU.
#include "cuda/gemv_bf16.cuh"
#include "cuda/ptx.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "cuda_test_util.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

using namespace latte;
typedef __nv_bfloat16 bf16;

static uint64_t g_seed = 0x5eed0001ull;

// the elements (z, r, c < cols) of a strided [Z][rows][ld] layout get hashed values (fill_bf16_kernel's), the rest of
// the buffer is left as it is (NaN-poisoned by the caller: padding that must never be read)
__global__ void fill_strided_kernel(__nv_bfloat16 *p, int Z, int rows, int cols, int64_t ld, int64_t zs, uint64_t seed,
                                    int int_range, float scale) {
    const size_t n = (size_t)Z * rows * cols;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const int64_t z = (int64_t)(i / ((size_t)rows * cols)), r = (int64_t)(i / cols % rows), c = (int64_t)(i % cols);
        p[z * zs + r * ld + c] = __float2bfloat16(hashed_value(i, seed, int_range, scale));
    }
}

// the PDL check's predecessor: lets dependents launch at once, spins ~`spin` cycles, then copies src into dst
__global__ void slow_copy_kernel(uint16_t *dst, const uint16_t *src, size_t n, long long spin) {
    latte::ptx::griddep_launch_dependents();
    const long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

struct Case {
    const char *name;
    int M, N, K, Z;
    int64_t ldx, x_z, ldw, w_z, ldy, y_z;  // 0: packed (K, M·ldx, K, N·ldw, N, M·ldy)
    int int_range;                         // > 0: exact integer operands; 0: ~normal with scale
    float scale;
    bool pdl;                              // launched with PDL right behind a slow kernel that writes x
};

static size_t extent(int Z, int rows, int cols, int64_t ld, int64_t zs) {
    return (size_t)((int64_t)(Z - 1) * zs + (int64_t)(rows - 1) * ld + cols);
}

static void run_case(Case k) {
    if (!k.ldx) k.ldx = k.K;
    if (!k.ldw) k.ldw = k.K;
    if (!k.ldy) k.ldy = k.N;
    if (!k.x_z) k.x_z = (int64_t)k.M * k.ldx;
    if (!k.w_z) k.w_z = (int64_t)k.N * k.ldw;
    if (!k.y_z) k.y_z = (int64_t)(k.M + 1) * k.ldy;  // a row past the batch in every z, poisoned
    const size_t nx = extent(k.Z, k.M, k.K, k.ldx, k.x_z), nw = extent(k.Z, k.N, k.K, k.ldw, k.w_z);
    const size_t ny = extent(k.Z, k.M + 1, k.ldy, k.ldy, k.y_z);
    bf16 *x = nullptr, *w = nullptr, *y = nullptr, *x_src = nullptr;
    CK(cudaMalloc(&x, nx * 2));
    CK(cudaMalloc(&w, nw * 2));
    CK(cudaMalloc(&y, ny * 2));
    poison_bf16_kernel<<<256, 256>>>(x, nx);
    poison_bf16_kernel<<<256, 256>>>(w, nw);
    poison_bf16_kernel<<<256, 256>>>(y, ny);
    fill_strided_kernel<<<1024, 256>>>(w, k.Z, k.N, k.K, k.ldw, k.w_z, g_seed ^ 0x77u, k.int_range, k.scale);
    if (k.pdl) {  // x arrives from the slow kernel; until then it is NaN
        CK(cudaMalloc(&x_src, nx * 2));
        poison_bf16_kernel<<<256, 256>>>(x_src, nx);
        fill_strided_kernel<<<1024, 256>>>(x_src, k.Z, k.M, k.K, k.ldx, k.x_z, g_seed ^ 0x1000u, k.int_range, k.scale);
    } else {
        fill_strided_kernel<<<1024, 256>>>(x, k.Z, k.M, k.K, k.ldx, k.x_z, g_seed ^ 0x1000u, k.int_range, k.scale);
    }
    CK(cudaDeviceSynchronize());
    std::vector<uint16_t> hx(nx), hw(nw), hy(ny);
    CK(cudaMemcpy(hx.data(), k.pdl ? x_src : x, nx * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hw.data(), w, nw * 2, cudaMemcpyDeviceToHost));

    GemvParams p = {x, k.ldx, k.x_z, w, k.ldw, k.w_z, y, k.ldy, k.y_z, k.M, k.N, k.K, k.Z};
    CHECK(gemv_bf16_supports(p), "%s: refused", k.name);
    if (k.pdl) slow_copy_kernel<<<64, 256>>>((uint16_t *)x, (const uint16_t *)x_src, nx, 200000);
    CK(gemv_bf16_launch(p, k.pdl, 0));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hy.data(), y, ny * 2, cudaMemcpyDeviceToHost));

    std::vector<char> written(ny, 0);
    size_t bad = 0, untouched_bad = 0;
    double worst = 0.0;
    for (int z = 0; z < k.Z; z++) {
        for (int m = 0; m < k.M; m++) {
            for (int n = 0; n < k.N; n++) {
                const size_t at = (size_t)z * k.y_z + (size_t)m * k.ldy + n;
                written[at] = 1;
                const uint16_t got = hy[at];
                double ref = 0.0, mag = 0.0;
                const uint16_t *xr = &hx[(size_t)z * k.x_z + (size_t)m * k.ldx], *wr = &hw[(size_t)z * k.w_z + (size_t)n * k.ldw];
                for (int kk = 0; kk < k.K; kk++) {
                    const double pr = (double)latte_bf16_to_f32(xr[kk]) * (double)latte_bf16_to_f32(wr[kk]);
                    ref += pr;
                    mag += fabs(pr);
                }
                const float gv = latte_bf16_to_f32(got);
                bool ok;
                if (k.int_range > 0) {
                    ok = got == latte_f32_to_bf16((float)ref);
                } else {
                    const double d = fabs((double)gv - ref), tol = ldexp(fabs(ref), -8) + ldexp(mag, -18);
                    ok = d <= tol && !isnan(gv);
                    if (tol > 0) worst = std::max(worst, d / tol);
                }
                if (!ok && bad++ < 5)
                    printf("  %s: y[%d][%d][%d] = %g, reference %.9g\n", k.name, z, m, n, (double)gv, ref);
            }
        }
    }
    for (size_t i = 0; i < ny; i++) untouched_bad += !written[i] && hy[i] != 0x7fc1;
    CHECK(bad == 0, "%s: %zu of %lld elements wrong", k.name, bad, (long long)k.Z * k.M * k.N);
    CHECK(untouched_bad == 0, "%s: %zu elements outside y written (padding, rows past the batch)", k.name, untouched_bad);
    printf("%s: M %d, N %d, K %d, Z %d%s: %s (worst |d| / tol %.3f)\n", k.name, k.M, k.N, k.K, k.Z,
           k.pdl ? ", PDL" : "", bad || untouched_bad ? "FAILED" : "ok", worst);
    CK(cudaFree(x));
    CK(cudaFree(w));
    CK(cudaFree(y));
    if (x_src) CK(cudaFree(x_src));
}

// the layer's shapes at batches 1-16: median of 20 launches after a read-only flush, against the weights' bytes
static void time_layer_shapes() {
    struct Shape {
        const char *name;
        int N, K, Z;
    } shapes[] = {{"down", 2112, 7168, 1}};
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    void *flush = nullptr;
    CK(cudaMalloc(&flush, (size_t)l2 * 3));
    CK(cudaMemset(flush, 0, (size_t)l2 * 3));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (const Shape &s : shapes) {
        bf16 *x = nullptr, *w = nullptr, *y = nullptr;
        const size_t nw = (size_t)s.Z * s.N * s.K;
        CK(cudaMalloc(&x, (size_t)s.Z * 16 * s.K * 2));
        CK(cudaMalloc(&w, nw * 2));
        CK(cudaMalloc(&y, (size_t)s.Z * 16 * s.N * 2));
        fill_bf16_kernel<<<1024, 256>>>(x, (size_t)s.Z * 16 * s.K, 1, 0, 1.0f);
        fill_bf16_kernel<<<1024, 256>>>(w, nw, 2, 0, 0.01f);
        for (int batch : {1, 2, 4, 8, 9, 12, 16}) {
            GemvParams p = {x, s.K, (int64_t)16 * s.K, w, s.K, (int64_t)s.N * s.K, y, s.N, (int64_t)16 * s.N,
                            batch, s.N, s.K, s.Z};
            std::vector<float> t;
            for (int r = 0; r < 21; r++) {
                l2_flush(flush, (size_t)l2 * 3);
                CK(cudaEventRecord(e0));
                CK(gemv_bf16_launch(p, false, 0));
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (r) t.push_back(ms * 1000.0f);
            }
            std::sort(t.begin(), t.end());
            const double us = t[t.size() / 2];
            printf("timing: %s (%.1f MB) batch %2d: %.1f us median (%.1f-%.1f), %.2f TB/s of weights\n", s.name,
                   nw * 2e-6, batch, us, (double)t.front(), (double)t.back(), nw * 2.0 / us * 1e-6);
        }
        CK(cudaFree(x));
        CK(cudaFree(w));
        CK(cudaFree(y));
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(flush));
}

int main() {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        const char *req = getenv("LATTE_REQUIRE_GPU");
        if (req && req[0] == '1') {
            fprintf(stderr, "gpu_gemv: LATTE_REQUIRE_GPU=1 but no CUDA device is usable\n");
            return 1;
        }
        printf("gpu_gemv: no GPU, skipped\n");
        return 77;
    }
    if (const char *seed = getenv("LATTE_TEST_SEED")) g_seed = strtoull(seed, nullptr, 0);
    else g_seed ^= (uint64_t)time(nullptr);
    printf("gpu_gemv: seed 0x%llx\n", (unsigned long long)g_seed);

    // the argument rules: a refused launch says so and enqueues nothing
    {
        bf16 *buf = nullptr;
        CK(cudaMalloc(&buf, 1 << 20));
        CK(cudaMemset(buf, 0xff, 1 << 20));
        GemvParams p = {buf, 64, 0, buf + 8192, 64, 0, buf + 16384, 40, 0, 4, 40, 64, 1};
        CHECK(gemv_bf16_supports(p), "valid parameters refused");
        GemvParams q = p;
        q.M = kGemvMaxRows + 1;
        CHECK(!gemv_bf16_supports(q) && gemv_bf16_launch(q, false, 0) == cudaErrorNotSupported, "M 17 accepted");
        q = p, q.M = 0;
        CHECK(!gemv_bf16_supports(q), "M 0 accepted");
        q = p, q.K = 60;
        CHECK(!gemv_bf16_supports(q), "K 60 (not a multiple of 8) accepted");
        q = p, q.x = buf + 4;
        CHECK(!gemv_bf16_supports(q), "x not 16-byte aligned accepted");
        q = p, q.ldw = 68;
        CHECK(!gemv_bf16_supports(q), "ldw 68 (not a multiple of 8) accepted");
        q = p, q.ldx = 56;
        CHECK(!gemv_bf16_supports(q), "ldx 56 < K accepted");
        q = p, q.ldy = 39;
        CHECK(!gemv_bf16_supports(q), "ldy 39 < N accepted");
        q = p, q.Z = 2, q.w_z = 12;
        CHECK(!gemv_bf16_supports(q), "w_z 12 (not a multiple of 8) accepted");
        q = p, q.Z = 0;
        CHECK(!gemv_bf16_supports(q), "Z 0 accepted");
        q = p, q.y = nullptr;
        CHECK(!gemv_bf16_supports(q) && gemv_bf16_launch(q, true, 0) == cudaErrorNotSupported, "null y accepted");
        CK(cudaDeviceSynchronize());
        std::vector<uint16_t> h(1 << 19);
        CK(cudaMemcpy(h.data(), buf, 1 << 20, cudaMemcpyDeviceToHost));
        size_t changed = 0;
        for (uint16_t v : h) changed += v != 0xffff;
        CHECK(changed == 0, "refused launches wrote %zu elements", changed);
        CK(cudaFree(buf));
    }

    int major = 0;
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    const bool pdl = major >= 9;  // programmatic dependent launch: compute capability 9.0 and later
    // W_UK's operands as the layer has them: x = q_nope inside q's rows [M][128 heads × 192], y = q_attn's first 512
    // of each head's 576 (its other 64 NaN, never written), w = W_UKᵀ [128][512][128]
    const int64_t qs = 128 * 192, qa = 128 * 576;
    const Case cases[] = {
        /* name                  M   N      K     Z    ldx  x_z  ldw  w_z  ldy  y_z  int scale pdl */
        {"down exact M1",        1,  2112,  7168, 1,   0,   0,   0,   0,   0,   0,   3, 0.0f, false},
        {"down exact M8",        8,  2112,  7168, 1,   0,   0,   0,   0,   0,   0,   3, 0.0f, false},
        {"down real M1",         1,  2112,  7168, 1,   0,   0,   0,   0,   0,   0,   0, 1.0f, false},
        {"down real M2 PDL",     2,  2112,  7168, 1,   0,   0,   0,   0,   0,   0,   0, 0.02f, pdl},
        {"down real M5",         5,  2112,  7168, 1,   7176, 0,  0,   0,   2120, 0,  0, 30.0f, false},
        {"down real M8 PDL",     8,  2112,  7168, 1,   0,   0,   0,   0,   0,   0,   0, 1e-3f, pdl},
        {"down exact M16",       16, 2112,  7168, 1,   0,   0,   0,   0,   0,   0,   3, 0.0f, false},
        {"down real M9",         9,  2112,  7168, 1,   7176, 0,  0,   0,   2120, 0,  0, 1.0f, false},
        {"down real M12 PDL",    12, 2112,  7168, 1,   0,   0,   0,   0,   0,   0,   0, 0.1f, pdl},
        {"down real M16 PDL",    16, 2112,  7168, 1,   7184, 0,  0,   0,   2128, 0,  0, 8.0f, pdl},
        {"w_uk real M13",        13, 512,   128,  128, qs,  192, 0,   0,   qa,  576, 0, 1.0f, false},
        {"w_uk exact M1",        1,  512,   128,  128, qs,  192, 0,   0,   qa,  576, 3, 0.0f, false},
        {"w_uk real M7 PDL",     7,  512,   128,  128, qs,  192, 0,   0,   qa,  576, 0, 2.0f, pdl},
        {"odd exact",            5,  37,    200,  1,   224, 0,   208, 0,   42,  0,   3, 0.0f, false},
        {"odd real batched",     6,  101,   328,  3,   336, 0,   344, 0,   104, 0,   0, 4.0f, false},
        {"K 8",                  3,  17,    8,    1,   0,   0,   16,  0,   18,  0,   3, 0.0f, false},
        {"N 1 padded",           8,  1,     520,  1,   560, 0,   544, 0,   8,   0,   0, 0.5f, false},
        {"long K odd N PDL",     7,  45,    16392, 2,  16400, 0, 16392, 0, 45,  0,   2, 0.0f, pdl},
        {"long K exact M8",      8,  200,   30720, 1,  0,   0,   0,   0,   0,   0,   1, 0.0f, false},
        {"long K odd M15",       15, 29,    12296, 1,  12304, 0, 12296, 0, 33,  0,   0, 0.3f, false},
        {"odd exact M11 batched", 11, 53,   136,  5,   144, 0,   152, 0,   56,  0,   2, 0.0f, false},
    };
    for (const Case &k : cases) run_case(k);
    if (getenv("LATTE_GEMM_TIMING")) time_layer_shapes();  // (not under ctest: other tests share the GPU there)
    printf("gpu_gemv: %d checks, %d failed\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
