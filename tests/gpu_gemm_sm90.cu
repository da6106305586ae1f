// The Hopper projection GEMM (src/cuda/gemm_sm90.cu) against a reference product, element by element.
//
//   exact:  small integer operands (|a|, |b| <= 2..3), so every product and partial sum is an integer below 2^24 and
//           exact in fp32 whatever the summation order: the kernel's bf16 output must equal the reference's rounding
//           of the exact sum, bit for bit, in every configuration (bn 64/128/192/256, whole tiles and stream-K).
//   real:   normal operands at the MLA shapes, against a float64 product: |c - ref| <= 1e-2 |ref| + 1e-3 rms.
// Shapes: the five MLA projections at batch 128 (the absorptions batched over heads with the strides the layer
// uses), and odd ones (M 1 / 77 / 200, N 2 / 200 / 2112, K 8 / 72 / 1000, padded strides). C is NaN-poisoned: every
// element outside the product (row padding, rows >= M) must stay NaN. Also: two launches are bitwise equal, the
// fixup counters are zero after a launch, a PDL pair (the second GEMM reads the first's output) and its graph replay.
// With LATTE_GEMM_TIMING=1, then a timing table of the MLA shapes (median of 20 launches, each after a read-only L2 flush; weight
// bytes / time), for every configuration the tuner would time, and the timing experiments (GemmSm90Config::dev_flags)
// on the chosen one. LATTE_GEMM_TIMING_ONLY=name: that shape's table alone; LATTE_GEMM_TIMING_ALL=name: every bn and mode
// of that shape, each with the experiments.
// LATTE_GEMM_PROFILE=1: one launch of each MLA shape and nothing else (for ncu). LATTE_TEST_PDL_DIAG=N: the PDL pair
// alone, N times with PDL, without, and with separate workspaces (it found a stream-ordering bug of this test).
// Exit 77 (ctest: skipped) without a GPU, on a GPU that is not compute capability 9.0, or in a build without sm_90a.
#include "cuda/gemm_sm90.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "cuda_test_util.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

using namespace latte;
typedef __nv_bfloat16 bf16;


static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rng() {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static void flush_l2(bf16 *flush, size_t flush_bytes) { l2_flush(flush, flush_bytes); }

// reference: one thread per output, float64 sum (exact for the integer inputs)
__global__ void ref_kernel(GemmProblem p, double *ref) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t total = p.M * p.N * (int64_t)p.batch;
    if (idx >= total) return;
    const int n = (int)(idx % p.N);
    const int64_t m = idx / p.N % p.M;
    const int z = (int)(idx / p.N / p.M);
    const bf16 *a = p.A + z * p.batch_stride_a + m * p.lda;
    const bf16 *b = p.B + z * p.batch_stride_b + (int64_t)n * p.ldb;
    double s = 0.0;
    for (int k = 0; k < p.K; k++) s += (double)__bfloat162float(a[k]) * (double)__bfloat162float(b[k]);
    ref[idx] = s;
}

struct Shape {
    const char *name;
    int64_t M;
    int N, K, batch;
    int64_t lda, sa, ldb, sb, ldc, sc;  // elements; 0: packed defaults
};

struct Buffers {
    bf16 *A = nullptr, *B = nullptr, *C = nullptr;
    size_t na = 0, nb = 0, nc = 0;
    double *ref = nullptr;
};

static size_t extent(int64_t rows, int64_t ld, int batch, int64_t bs, int64_t cols) {
    // elements a [batch][rows][ld] view touches, with batch stride bs (which may interleave with rows)
    return (size_t)((batch - 1) * bs + (rows - 1) * ld + cols);
}

static GemmProblem make_problem(const Shape &s, const Buffers &b) {
    GemmProblem p{};
    p.A = b.A;
    p.lda = s.lda;
    p.batch_stride_a = s.sa;
    p.B = b.B;
    p.ldb = s.ldb;
    p.batch_stride_b = s.sb;
    p.C = b.C;
    p.ldc = s.ldc;
    p.batch_stride_c = s.sc;
    p.M = s.M;
    p.N = s.N;
    p.K = s.K;
    p.batch = s.batch;
    p.split = 1;
    return p;
}

static Shape normalize(Shape s) {
    if (!s.lda) s.lda = s.K;
    if (!s.ldb) s.ldb = s.K;
    if (!s.ldc) s.ldc = s.N;
    if (!s.sa) s.sa = s.M * s.lda;
    if (!s.sb) s.sb = (int64_t)s.N * s.ldb;
    if (!s.sc) s.sc = s.M * s.ldc;
    return s;
}

static Buffers alloc(const Shape &s) {
    Buffers b;
    b.na = extent(s.M, s.lda, s.batch, s.sa, s.K);
    b.nb = extent(s.N, s.ldb, s.batch, s.sb, s.K);
    b.nc = extent(s.M, s.ldc, s.batch, s.sc, s.N);
    CK(cudaMalloc(&b.A, b.na * 2));
    CK(cudaMalloc(&b.B, b.nb * 2));
    CK(cudaMalloc(&b.C, b.nc * 2));
    CK(cudaMalloc(&b.ref, (size_t)(s.M * s.N * s.batch) * sizeof(double)));
    return b;
}
static void release(Buffers &b) {
    cudaFree(b.A), cudaFree(b.B), cudaFree(b.C), cudaFree(b.ref);
}

// Compare C with the reference: exact (bitwise the rounding of the exact sum) or within tolerance; every element
// outside the product must still be the poison.
static void compare(const char *what, const Shape &s, const Buffers &b, bool exact) {
    std::vector<uint16_t> c(b.nc);
    std::vector<double> ref((size_t)(s.M * s.N * s.batch));
    CK(cudaMemcpy(c.data(), b.C, b.nc * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ref.data(), b.ref, ref.size() * sizeof(double), cudaMemcpyDeviceToHost));
    std::vector<char> inside(b.nc, 0);
    double ss = 0;
    for (double r : ref) ss += r * r;
    const double rms = sqrt(ss / (double)ref.size());
    size_t bad = 0, shown = 0;
    double max_rel = 0;
    for (int z = 0; z < s.batch; z++)
        for (int64_t m = 0; m < s.M; m++)
            for (int n = 0; n < s.N; n++) {
                const size_t at = (size_t)(z * s.sc + m * s.ldc + n);
                inside[at] = 1;
                const double r = ref[(size_t)((z * s.M + m) * s.N + n)];
                const uint16_t got = c[at];
                bool ok;
                if (exact) {
                    ok = got == latte_f32_to_bf16((float)r);
                } else {
                    const double v = latte_bf16_to_f32(got);
                    ok = fabs(v - r) <= 1e-2 * fabs(r) + 1e-3 * rms;
                    if (fabs(r) > rms * 1e-2) max_rel = std::max(max_rel, fabs(v - r) / fabs(r));
                }
                if (!ok) {
                    bad++;
                    if (shown++ < 5)
                        printf("  %s %s: C[%d][%lld][%d] = %g (0x%04x), reference %.9g\n", s.name, what, z, (long long)m, n,
                               latte_bf16_to_f32(got), got, r);
                }
            }
    size_t touched = 0;
    for (size_t i = 0; i < b.nc; i++)
        if (!inside[i] && c[i] != 0x7fc1) touched++;
    CHECK(bad == 0, "%s %s: %zu of %lld elements wrong", s.name, what, bad, (long long)(s.M * s.N * s.batch));
    CHECK(touched == 0, "%s %s: %zu elements outside the product were written", s.name, what, touched);
    if (!exact) printf("  %s %s: max rel err %.2e (rms %.3g)\n", s.name, what, max_rel, rms);
}

static int g_sms = 0;
static float *g_partial = nullptr;
static int *g_counters = nullptr;
static size_t g_counter_count = 0;

static void counters_zero_check(const char *what) {
    std::vector<int> h(g_counter_count);
    CK(cudaMemcpy(h.data(), g_counters, h.size() * sizeof(int), cudaMemcpyDeviceToHost));
    size_t nz = 0;
    for (int v : h) nz += v != 0;
    CHECK(nz == 0, "%s: %zu fixup counters not zero after the launch", what, nz);
}

static void fill(bf16 *p, size_t n, int int_range, float scale) {
    fill_bf16_kernel<<<1024, 256>>>(p, n, rng(), int_range, scale);
    CK(cudaGetLastError());
}

static void run_shape(Shape s0, bool all_configs, bool real_too) {
    const Shape s = normalize(s0);
    Buffers b = alloc(s);
    GemmProblem p = make_problem(s, b);
    CHECK(gemm_sm90_supports(p, true), "%s: not supported", s.name);
    if (!gemm_sm90_supports(p, true)) {
        release(b);
        return;
    }
    const int64_t total = s.M * s.N * s.batch;
    GemmSm90Config cfgs[12];
    int ncfg = 0;
    if (all_configs) {
        for (int sk = 0; sk < 2; sk++)
            for (int bn : {64, 128, 192, 256}) cfgs[ncfg++] = GemmSm90Config{bn, sk != 0, 0};
        // stream-K with the owner not waiting (its fallback: the last contributor to count sums the tile)
        for (int bn : {64, 128, 192, 256}) cfgs[ncfg++] = GemmSm90Config{bn, true, 256};
    } else {
        cfgs[ncfg++] = gemm_sm90_choose(s.M, s.N, s.K, s.batch, g_sms);
    }

    for (int pass = 0; pass < (real_too ? 2 : 1); pass++) {
        const bool exact = pass == 0;
        fill(b.A, b.na, exact ? (s.K > 4096 ? 2 : 3) : 0, 1.0f);
        fill(b.B, b.nb, exact ? (s.K > 4096 ? 2 : 3) : 0, 1.0f / sqrtf((float)s.K));
        ref_kernel<<<(unsigned)((total + 255) / 256), 256>>>(p, b.ref);
        CK(cudaGetLastError());
        for (int i = 0; i < ncfg; i++) {
            const GemmSm90Config &cf = cfgs[i];
            char what[80];
            snprintf(what, sizeof what, "%s bn %d %s%s", exact ? "exact" : "real", cf.bn, cf.stream_k ? "stream-K" : "whole",
                     cf.dev_flags & 256 ? " (last sums)" : "");
            poison_bf16_kernel<<<1024, 256>>>(b.C, b.nc);
            CK(gemm_sm90_launch(p, cf, g_sms, g_partial, g_counters, false, 0));
            CK(cudaDeviceSynchronize());
            compare(what, s, b, exact);
            counters_zero_check(what);
            if (exact && cf.stream_k) {  // determinism: a second launch gives the same bits
                std::vector<uint16_t> first(b.nc), second(b.nc);
                fill(b.A, b.na, 0, 1.0f);  // real values: the summation order shows
                CK(gemm_sm90_launch(p, cf, g_sms, g_partial, g_counters, true, 0));
                CK(cudaMemcpy(first.data(), b.C, b.nc * 2, cudaMemcpyDeviceToHost));
                for (int r = 0; r < 3; r++) {
                    CK(gemm_sm90_launch(p, cf, g_sms, g_partial, g_counters, true, 0));
                    CK(cudaMemcpy(second.data(), b.C, b.nc * 2, cudaMemcpyDeviceToHost));
                    CHECK(first == second, "%s %s: launch %d differs from the first (not deterministic)", s.name, what,
                          r + 2);
                }
                fill(b.A, b.na, s.K > 4096 ? 2 : 3, 1.0f);  // back to the integers of this pass's reference
                ref_kernel<<<(unsigned)((total + 255) / 256), 256>>>(p, b.ref);
                CK(cudaGetLastError());
            }
        }
    }
    printf("%s (M %lld N %d K %d batch %d): %d configuration(s) checked\n", s.name, (long long)s.M, s.N, s.K, s.batch,
           ncfg);
    release(b);
}

// C1 = A·B1ᵀ then (PDL) C2 = C1·B2ᵀ: the second launch's activations are the first's output. Eager and as a graph.
// pdl false: plain launches; separate: the second GEMM gets its own partials and counters (a diagnostic).
static void pdl_pair_check(bool pdl = true, bool separate = false) {
    float *partial2 = g_partial;
    int *counters2 = g_counters;
    if (separate) {
        CK(cudaMalloc(&partial2, gemm_sm90_partial_bytes(g_sms)));
        CK(cudaMalloc(&counters2, g_counter_count * sizeof(int)));
        CK(cudaMemset(counters2, 0, g_counter_count * sizeof(int)));
    }
    const int64_t M = 128;
    const int N1 = 1536, K1 = 7168, N2 = 2048;
    Shape s1 = normalize(Shape{"pdl1", M, N1, K1, 1, 0, 0, 0, 0, 0, 0});
    Shape s2 = normalize(Shape{"pdl2", M, N2, N1, 1, 0, 0, 0, 0, 0, 0});
    Buffers b1 = alloc(s1), b2 = alloc(s2);
    cudaFree(b2.A);
    b2.A = b1.C;  // C1 is A2
    GemmProblem p1 = make_problem(s1, b1), p2 = make_problem(s2, b2);
    fill(b1.A, b1.na, 2, 1.0f);
    fill(b1.B, b1.nb, 1, 1.0f);
    fill(b2.B, b2.nb, 1, 1.0f);
    // the fills ran on the legacy stream, which a non-blocking stream does not wait for (without this the first GEMM
    // sometimes read half-filled operands: half the pairs failed when repeated)
    CK(cudaDeviceSynchronize());
    const GemmSm90Config c1 = gemm_sm90_choose(M, N1, K1, 1, g_sms), c2 = gemm_sm90_choose(M, N2, N1, 1, g_sms);
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    for (int graph = 0; graph < 2; graph++) {
        poison_bf16_kernel<<<1024, 256, 0, st>>>(b1.C, b1.nc);
        poison_bf16_kernel<<<1024, 256, 0, st>>>(b2.C, b2.nc);
        if (!graph) {
            CK(gemm_sm90_launch(p1, c1, g_sms, g_partial, g_counters, pdl, st));
            CK(gemm_sm90_launch(p2, c2, g_sms, partial2, counters2, pdl, st));
        } else {
            cudaGraph_t gr;
            cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
            CK(gemm_sm90_launch(p1, c1, g_sms, g_partial, g_counters, pdl, st));
            CK(gemm_sm90_launch(p2, c2, g_sms, partial2, counters2, pdl, st));
            CK(cudaStreamEndCapture(st, &gr));
            CK(cudaGraphInstantiate(&ge, gr, 0));
            for (int r = 0; r < 3; r++) CK(cudaGraphLaunch(ge, st));
            CK(cudaStreamSynchronize(st));
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(gr));
        }
        CK(cudaStreamSynchronize(st));
        // reference of C2 from the kernel's own C1 (checked exact first)
        ref_kernel<<<(unsigned)((M * N1 + 255) / 256), 256, 0, st>>>(p1, b1.ref);
        ref_kernel<<<(unsigned)((M * N2 + 255) / 256), 256, 0, st>>>(p2, b2.ref);
        CK(cudaStreamSynchronize(st));
        compare(graph ? "PDL pair, graph, first" : "PDL pair, first", s1, b1, true);
        compare(graph ? "PDL pair, graph, second" : "PDL pair, second", s2, b2, true);
        counters_zero_check("PDL pair");
    }
    CK(cudaStreamDestroy(st));
    if (separate) cudaFree(partial2), cudaFree(counters2);
    b2.A = nullptr;
    release(b1);
    release(b2);
}

// GemmProblem::discard_a. A is written the way the layer's attention leaves o_lat: stale values (NaN) in DRAM, the
// real ones dirty in L2 (a kernel's stores after an L2 flush), with a 64-column padding after each row and guard rows
// past M holding a sentinel. Honoured (one n-tile): C exact and every value outside A's [M][K] box still the
// sentinel (a dropped line outside it would read stale). Refused (bn 64: two n-tiles read each line): C exact (a
// discard there would feed the other n-tile stale NaN).
static void discard_check(int64_t M, int batch, const GemmSm90Config &cf, bool honoured) {
    const int N = 128, K = 512;
    Shape s = normalize(Shape{"discard", M, N, K, batch, (int64_t)batch * K + 64, K, 0, 0, 0, 0});
    Buffers b = alloc(s);
    cudaFree(b.A);
    const size_t guard = 8 * (size_t)s.lda, na = b.na + guard;  // 8 rows past the last
    CK(cudaMalloc(&b.A, na * 2));
    GemmProblem p = make_problem(s, b);
    p.discard_a = 1;
    // fresh: small integers inside the [z][m][k] box, 0x3f80 (1.0) elsewhere; stale: NaN everywhere
    std::vector<uint16_t> fresh(na, 0x3f80), stale(na, 0x7fc1);
    std::vector<char> inside(na, 0);
    for (int z = 0; z < batch; z++)
        for (int64_t m = 0; m < M; m++)
            for (int k = 0; k < K; k++) {
                const size_t at = (size_t)(z * s.sa + m * s.lda + k);
                inside[at] = 1;
                fresh[at] = latte_f32_to_bf16((float)((int)(rng() % 7) - 3));
            }
    fill(b.B, b.nb, 3, 1.0f);
    write_dirty_over_stale(b.A, fresh.data(), stale.data(), na);
    ref_kernel<<<(unsigned)((M * N * batch + 255) / 256), 256>>>(p, b.ref);  // before the GEMM: A is undefined after
    poison_bf16_kernel<<<1024, 256>>>(b.C, b.nc);
    CK(gemm_sm90_launch(p, cf, g_sms, g_partial, g_counters, false, 0));
    CK(cudaDeviceSynchronize());
    char what[96];
    snprintf(what, sizeof what, "discard_a bn %d %s (%s)", cf.bn, cf.stream_k ? "stream-K" : "whole",
             honoured ? "honoured" : "refused: two n-tiles");
    compare(what, s, b, true);
    counters_zero_check(what);
    std::vector<uint16_t> back(na);
    CK(cudaMemcpy(back.data(), b.A, na * 2, cudaMemcpyDeviceToHost));
    size_t outside_bad = 0, dropped = 0, in_box = 0;
    for (size_t i = 0; i < na; i++) {
        if (!inside[i]) outside_bad += back[i] != 0x3f80;
        else in_box++, dropped += back[i] != fresh[i];
    }
    CHECK(outside_bad == 0, "%s: %zu values of A outside its box changed (a line outside it was discarded)", what,
          outside_bad);
    printf("%s (M %lld, batch %d): checked; A values reading stale afterwards (dropped unwritten): %zu of %zu\n", what,
           (long long)M, batch, dropped, in_box);
    release(b);
}

// median µs of every candidate configuration on shape s (each launch after an L2 flush), and the dev_flags
// experiments on the chosen one; weight bytes / time
static void time_shape(const Shape &s0, bf16 *flush, size_t flush_bytes) {
    const Shape s = normalize(s0);
    Buffers b = alloc(s);
    GemmProblem p = make_problem(s, b);
    fill(b.A, b.na, 0, 1.0f);
    fill(b.B, b.nb, 0, 0.02f);
    GemmSm90Config c[8];
    int n = gemm_sm90_candidates(s.M, s.N, s.K, s.batch, g_sms, c, 8);
    // LATTE_GEMM_TIMING_ALL=name: every bn and mode of that shape, each with the dev_flags experiments
    const char *all_env = getenv("LATTE_GEMM_TIMING_ALL");
    const bool all = all_env && !strcmp(all_env, s.name);
    if (all) {
        n = 0;
        for (int sk = 0; sk < 2; sk++)
            for (int bn : {64, 128, 192, 256}) c[n++] = GemmSm90Config{bn, sk != 0, 0};
    }
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const double wbytes = (double)s.N * s.K * s.batch * 2;
    auto time_one = [&](const GemmSm90Config &cf, const char *note) {
        std::vector<float> ms;
        for (int r = 0; r < 22; r++) {
            flush_l2(flush, flush_bytes);
            CK(cudaEventRecord(e0, 0));
            CK(gemm_sm90_launch(p, cf, g_sms, g_partial, g_counters, false, 0));
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            if (r >= 2) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const double us = ms[ms.size() / 2] * 1e3;
        printf("  time %-6s bn %3d %-8s %8.1f us  %5.2f TB/s of weights  %s\n", s.name, cf.bn,
               cf.stream_k ? "stream-K" : "whole", us, wbytes / us * 1e-6, note);
    };
    for (int i = 0; i < n; i++) time_one(c[i], i == 0 ? "(chosen)" : "");
    const struct { int flags; const char *what; } exps[] = {
        {256, "the last to count sums (owner does not wait)"}, {1, "no L2 hints"}, {4, "no stores"},
        {32 | 4, "no A, no stores"}, {32 | 4 | 128, "no A, no stores, no fixup"}};
    for (int i = 0; i < (all ? n : 1); i++)
        for (const auto &x : exps) {
            GemmSm90Config cf = c[i];
            if (!cf.stream_k && (x.flags & (128 | 256))) continue;  // no fixup to leave out
            cf.dev_flags = x.flags;
            time_one(cf, x.what);
        }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    release(b);
}

// LATTE_GEMM_PROFILE=1: one launch of each MLA shape's chosen configuration after an L2 flush, and nothing
// else (for ncu --kernel-name regex:gemm_sm90)
static void profile_shape(const Shape &s0, bf16 *flush, size_t flush_bytes) {
    const Shape s = normalize(s0);
    Buffers b = alloc(s);
    GemmProblem p = make_problem(s, b);
    fill(b.A, b.na, 0, 1.0f);
    fill(b.B, b.nb, 0, 0.02f);
    const GemmSm90Config c = gemm_sm90_choose(s.M, s.N, s.K, s.batch, g_sms);
    flush_l2(flush, flush_bytes);
    CK(gemm_sm90_launch(p, c, g_sms, g_partial, g_counters, false, 0));
    CK(cudaDeviceSynchronize());
    printf("profiled %s: bn %d %s\n", s.name, c.bn, c.stream_k ? "stream-K" : "whole");
    release(b);
}

int main() {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("gpu_gemm_sm90: no GPU, skipped\n");
        return 77;
    }
    if (!gemm_sm90_available(0)) {
        printf("gpu_gemm_sm90: not available here (needs compute capability 9.0 and an sm_90a build), skipped\n");
        return 77;
    }
    CK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, 0));
    const char *seed = getenv("LATTE_TEST_SEED");
    if (seed) g_rng = strtoull(seed, nullptr, 0) | 1;
    printf("gpu_gemm_sm90: %d SMs, seed 0x%llx\n", g_sms, (unsigned long long)g_rng);
    CK(cudaMalloc(&g_partial, gemm_sm90_partial_bytes(g_sms)));
    g_counter_count = 1 << 16;
    CK(cudaMalloc(&g_counters, g_counter_count * sizeof(int)));
    CK(cudaMemset(g_counters, 0, g_counter_count * sizeof(int)));

    const int H = 128;
    // the MLA projections at batch 128 (layouts as src/cuda/mla_plan.cu's mla_problems)
    const Shape mla[] = {
        {"down", 128, 2112, 7168, 1, 0, 0, 0, 0, 0, 0},
        {"up", 128, H * 192, 1536, 1, 0, 0, 0, 0, 0, 0},
        {"w_uk", 128, 512, 128, H, H * 192, 192, 128, 512 * 128, H * 576, 576},
        {"w_uv", 128, 128, 512, H, H * 512, 512, 512, 128 * 512, H * 128, 128},
        {"out", 128, 7168, H * 128, 1, 0, 0, 0, 0, 0, 0},
    };
    const Shape odd[] = {
        {"m1", 1, 200, 72, 1, 0, 0, 0, 0, 0, 0},
        {"m77 pad", 77, 2112, 1000, 1, 1008, 0, 1024, 0, 2120, 0},
        {"m200", 200, 512, 640, 1, 0, 0, 0, 0, 0, 0},
        {"n2 k8", 5, 2, 8, 1, 0, 0, 0, 0, 0, 0},
        {"batched m3", 3, 136, 128, 7, 7 * 192, 192, 128, 136 * 128, 7 * 144, 144},
        {"batched m130", 130, 64, 200, 3, 0, 0, 0, 0, 0, 0},
    };
    if (const char *diag = getenv("LATTE_TEST_PDL_DIAG")) {  // the PDL pair alone, N times per variant
        const int reps = atoi(diag) > 0 ? atoi(diag) : 1;
        const struct { bool pdl, separate; const char *what; } v[] = {
            {true, false, "PDL, shared workspace"}, {false, false, "no PDL"}, {true, true, "PDL, separate workspace"}};
        for (const auto &x : v) {
            const int before = g_fail;
            for (int r = 0; r < reps; r++) pdl_pair_check(x.pdl, x.separate);
            printf("PDL diag: %-26s %d failed checks in %d pairs\n", x.what, g_fail - before, reps);
        }
        return g_fail ? 1 : 0;
    }
    if (getenv("LATTE_GEMM_PROFILE")) {
        int l2 = 0;
        CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
        bf16 *flush;
        CK(cudaMalloc(&flush, (size_t)l2 * 3));
        CK(cudaMemset(flush, 0x5a, (size_t)l2 * 3));
        for (const Shape &s : mla) profile_shape(s, flush, (size_t)l2 * 3);
        return 0;
    }
    // LATTE_TEST_QUICK=1 (compute-sanitizer runs): not the two largest MLA shapes (their float64 references alone
    // take minutes under the tools)
    const char *quick_env = getenv("LATTE_TEST_QUICK");
    const bool quick = quick_env && quick_env[0] == '1';
    for (const Shape &s : odd) run_shape(s, true, false);
    for (const Shape &s : mla) {
        if (quick && (!strcmp(s.name, "up") || !strcmp(s.name, "out"))) {
            printf("%s: skipped (LATTE_TEST_QUICK=1)\n", s.name);
            continue;
        }
        run_shape(s, !strcmp(s.name, "down") || !strcmp(s.name, "w_uk"), true);
    }
    pdl_pair_check();
    discard_check(128, 16, GemmSm90Config{128, false, 0}, true);
    discard_check(77, 5, GemmSm90Config{128, true, 0}, true);
    discard_check(128, 16, GemmSm90Config{64, false, 0}, false);

    if (getenv("LATTE_GEMM_TIMING")) {  // (not under ctest: other tests share the GPU there)
        int l2 = 0;
        CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
        const size_t flush_bytes = (size_t)l2 * 3;
        bf16 *flush;
        CK(cudaMalloc(&flush, flush_bytes));
        CK(cudaMemset(flush, 0x5a, flush_bytes));
        printf("timing (median of 20 launches, each after a %zu MB L2 flush):\n", flush_bytes >> 20);
        const char *only = getenv("LATTE_GEMM_TIMING_ONLY");  // one shape's name: only its timing
        for (const Shape &s : mla)
            if (!only || !strcmp(only, s.name)) time_shape(s, flush, flush_bytes);
        cudaFree(flush);
    }
    cudaFree(g_partial);
    cudaFree(g_counters);
    printf("gpu_gemm_sm90: %d checks, %d failed\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
