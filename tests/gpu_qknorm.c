/*
 * QK RMSNorm across heads, CUDA backend against the CPU backend, every output element within 1 ulp
 * of the output dtype (the two differ only in the summation order of the sum of squares):
 * the anchor shapes, widths 1 .. 24576 and beyond the register path, Dq != Dk, strided rows, q and k
 * as slices of a fused [N, Dq + 2 Dk] qkv buffer, every dtype pair, in place and out of place,
 * N = 0, 1, 3, 8193, zero rows, NaN rows, huge and tiny magnitudes, eps = 0, the Gemma flag, pointers
 * misaligned by one element (the scalar path), many rows (several work items per block in the
 * persistent kernel variants). Guards and gaps must stay bit-identical, inputs too out of place, and a
 * second run must give the same bits. Runs on a non-blocking stream. Tests the kernel variant chosen by
 * LATTE_QKNORM_VARIANT (scripts/gpu_check.sh runs it once per variant).
 */
#include <cuda_runtime.h>

#include "qknorm_test_common.h"

static const char *NAME = "gpu_qknorm";
static cudaStream_t stream;
static int64_t ulp1_count, compared_count;

#define CUDA_OK(call)                                                                                   \
    do {                                                                                                \
        cudaError_t e_ = (call);                                                                        \
        if (e_ != cudaSuccess) {                                                                        \
            fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));    \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

static uint8_t *dup(const uint8_t *p, size_t n) {
    if (!p) return NULL;
    uint8_t *q = (uint8_t *)malloc(n);
    if (q) test_memcpy_parallel(q, p, n);
    return q;
}

/* Runs the case on the device into host copies gin/gout (arena layouts). Returns the latte status. */
static latte_status run_gpu(const qk_setup *s, uint8_t *din, uint8_t *dout, uint8_t *dw, uint8_t *gin, uint8_t *gout) {
    const size_t in_b = (size_t)s->in_elems * s->es, out_b = (size_t)s->out_elems * s->es;
    /* Copies on the kernel's own (non-blocking) stream: a cudaMemcpy from pageable memory may return before
     * its DMA has landed, and a non-blocking stream does not wait for the legacy stream. */
    CUDA_OK(cudaMemcpyAsync(din, s->in0, in_b, cudaMemcpyHostToDevice, stream));
    if (out_b) CUDA_OK(cudaMemcpyAsync(dout, s->out0, out_b, cudaMemcpyHostToDevice, stream));
    latte_qknorm_params p = qk_params(s, din, dout, dw);
    latte_status st = latte_qknorm_across_heads(&p, LATTE_BACKEND_CUDA, stream);
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaMemcpyAsync(gin, din, in_b, cudaMemcpyDeviceToHost, stream));
    if (out_b) CUDA_OK(cudaMemcpyAsync(gout, dout, out_b, cudaMemcpyDeviceToHost, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    return st;
}

static void run_case(const qk_case *c) {
    char desc[512];
    qk_describe(c, desc, sizeof desc);
    /* LATTE_TEST_FILTER=substring runs only the matching cases (bisecting on the GPU machine) */
    const char *filter = getenv("LATTE_TEST_FILTER");
    if (filter && !strstr(desc, filter)) return;
    /* LATTE_TEST_QUICK=1 (compute-sanitizer runs): cases up to 4M elements */
    const char *quick = getenv("LATTE_TEST_QUICK");
    if (quick && quick[0] == '1' && c->n * (c->dq + c->dk) > ((int64_t)1 << 22)) return;
    qk_setup s;
    if (!qk_setup_make(&s, c)) {
        CHECK(0, "%s: host allocation failed", desc);
        qk_setup_free(&s);
        return;
    }
    const size_t in_b = (size_t)s.in_elems * s.es, out_b = (size_t)s.out_elems * s.es, w_b = (size_t)s.w_elems * s.wes;

    /* expected: the CPU backend on copies of the arenas */
    uint8_t *cin = dup(s.in, in_b), *cout = dup(s.out, out_b);
    latte_qknorm_params pc = qk_params(&s, cin, cout, s.w);
    latte_status st = latte_qknorm_across_heads(&pc, LATTE_BACKEND_CPU, NULL);
    CHECK(st == LATTE_STATUS_SUCCESS, "%s: CPU backend: %s", desc, latte_last_error());

    uint8_t *din = NULL, *dout = NULL, *dw = NULL;
    CUDA_OK(cudaMalloc((void **)&din, in_b));
    if (out_b) CUDA_OK(cudaMalloc((void **)&dout, out_b));
    CUDA_OK(cudaMalloc((void **)&dw, w_b));
    CUDA_OK(cudaMemcpy(dw, s.w, w_b, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize()); /* pageable copies may still be in flight on return */
    uint8_t *gin = (uint8_t *)malloc(in_b), *gout = out_b ? (uint8_t *)malloc(out_b) : NULL;
    uint8_t *gin2 = (uint8_t *)malloc(in_b), *gout2 = out_b ? (uint8_t *)malloc(out_b) : NULL;

    st = run_gpu(&s, din, dout, dw, gin, gout);
    CHECK(st == LATTE_STATUS_SUCCESS, "%s: status %s (%s)", desc, latte_status_string(st), latte_last_error());
    CHECK(latte_last_error()[0] == '\0', "%s: message left after success", desc);

    /* every output element within 1 ulp of the CPU backend */
    const uint8_t *g = c->in_place ? gin : gout, *e = c->in_place ? cin : cout;
    int64_t miss = 0, ulp1 = 0, total = 0; /* counted on every host thread; the first misses printed in order after */
    for (int t = 0; t < 2; t++) {
        const int64_t width = t ? c->dk : c->dq, yo = t ? s.ko_off : s.qo_off, ys = t ? s.kos : s.qos;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(+ : miss, ulp1, total)
#endif
        for (int64_t r = 0; r < c->n; r++)
            for (int64_t j = 0; j < width; j++) {
                const int64_t i = yo + r * ys + j;
                const int64_t d = qk_ulp_distance(qk_bits(g, c->dt, i), qk_bits(e, c->dt, i), c->dt);
                total++;
                ulp1 += d == 1;
                miss += d > 1;
            }
    }
    for (int t = 0, shown = 0; miss && t < 2; t++) {
        const int64_t width = t ? c->dk : c->dq, yo = t ? s.ko_off : s.qo_off, ys = t ? s.kos : s.qos;
        for (int64_t r = 0; r < c->n && shown < 4; r++)
            for (int64_t j = 0; j < width && shown < 4; j++) {
                const int64_t i = yo + r * ys + j;
                if (qk_ulp_distance(qk_bits(g, c->dt, i), qk_bits(e, c->dt, i), c->dt) > 1)
                    fprintf(stderr, "  %s: %s row %lld col %lld: gpu %.9g, cpu %.9g\n", desc, t ? "k" : "q",
                            (long long)r, (long long)j, qk_get(g, c->dt, i), qk_get(e, c->dt, i)), shown++;
            }
    }
    ulp1_count += ulp1;
    compared_count += total;
    CHECK(miss == 0, "%s: %lld of %lld elements more than 1 ulp from the CPU backend", desc, (long long)miss,
          (long long)total);
    CHECK(qk_check_untouched(&s, gin, gout) == 0, "%s: memory outside the outputs changed", desc);

    /* deterministic: a second run gives the same bits */
    st = run_gpu(&s, din, dout, dw, gin2, gout2);
    CHECK(st == LATTE_STATUS_SUCCESS && memcmp(gin, gin2, in_b) == 0 && (!out_b || memcmp(gout, gout2, out_b) == 0),
          "%s: a second run differs", desc);

    CUDA_OK(cudaFree(din));
    if (dout) CUDA_OK(cudaFree(dout));
    CUDA_OK(cudaFree(dw));
    free(cin); free(cout); free(gin); free(gout); free(gin2); free(gout2);
    qk_setup_free(&s);
}

static qk_case base_case(const char *name, int64_t n, int64_t dq, int64_t dk, latte_dtype dt, latte_dtype wdt) {
    qk_case c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.n = n; c.dq = dq; c.dk = dk; c.dt = dt; c.wdt = wdt;
    c.eps = 1e-6f; c.scale = 1.0;
    return c;
}

/* Host pointers and overlapping outputs are rejected before anything runs; device memory untouched. */
static void validation_tests(void) {
    const size_t n = 4 * 64;
    uint16_t host[4 * 64], before[4 * 64], after[4 * 64];
    for (size_t i = 0; i < n; i++) host[i] = before[i] = f32_to_bf16((float)test_normal());
    uint16_t *d = NULL, *dw = NULL;
    CUDA_OK(cudaMalloc((void **)&d, sizeof host));
    CUDA_OK(cudaMalloc((void **)&dw, 64 * 2));
    CUDA_OK(cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dw, host, 64 * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize()); /* pageable copies may still be in flight on return */
    latte_qknorm_params ok = latte_qknorm_params_default(4, d, 32, d + 32, 32, dw, dw, LATTE_DTYPE_BF16);
    ok.q_row_stride = ok.k_row_stride = 64;
    latte_qknorm_params p;
    struct { const char *what; latte_qknorm_params p; } bad[6];
    int nb = 0;
    p = ok; p.q = host; bad[nb].what = "q host pointer"; bad[nb++].p = p;
    p = ok; p.k_weight = host; bad[nb].what = "k_weight host pointer"; bad[nb++].p = p;
    p = ok; p.q_out = host; p.q_out_row_stride = 64; bad[nb].what = "q_out host pointer"; bad[nb++].p = p;
    p = ok; p.k_out = d + 16; p.k_out_row_stride = 64; bad[nb].what = "k_out overlaps q"; bad[nb++].p = p;
    p = ok; p.eps = -1.0f; bad[nb].what = "eps < 0"; bad[nb++].p = p;
    for (int i = 0; i < nb; i++) {
        latte_status st = latte_qknorm_across_heads(&bad[i].p, LATTE_BACKEND_CUDA, stream);
        CHECK(st == LATTE_STATUS_INVALID_ARGUMENT, "%s: status %s", bad[i].what, latte_status_string(st));
        CHECK(latte_last_error()[0] != '\0', "%s: no message", bad[i].what);
        CUDA_OK(cudaStreamSynchronize(stream));
        CUDA_OK(cudaMemcpy(after, d, sizeof after, cudaMemcpyDeviceToHost));
        CHECK(memcmp(before, after, sizeof after) == 0 && memcmp(host, before, sizeof host) == 0,
              "%s: a rejected call changed memory", bad[i].what);
    }
    /* N = 0: a no-op, even with NULL pointers */
    p = ok; p.n_tokens = 0; p.q = p.k = NULL;
    CHECK_OK(latte_qknorm_across_heads(&p, LATTE_BACKEND_CUDA, stream));
    CUDA_OK(cudaFree(d));
    CUDA_OK(cudaFree(dw));
}

int main(void) {
    if (!test_gpu_available(NAME)) return TEST_SKIP;
    test_seed(NAME);
    /* the kernel variant under test (a benchmark knob read once by the library; gpu_check.sh reruns this
     * program once per variant) */
    const char *variant = getenv("LATTE_QKNORM_VARIANT");
    printf("%s: LATTE_QKNORM_VARIANT=%s\n", NAME, variant && *variant ? variant : "(unset: 0)");
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const latte_dtype B = LATTE_DTYPE_BF16, H = LATTE_DTYPE_F16, F = LATTE_DTYPE_F32;
    const latte_dtype pairs[5][2] = {{B, B}, {B, F}, {H, H}, {H, F}, {F, F}};

    /* the anchor shapes (bf16, q and k [N, D]); (1024, 4096) in every dtype pair */
    const int64_t anchors[4][2] = {{256, 1024}, {1024, 4096}, {2048, 8192}, {8192, 8192}};
    for (int a = 0; a < 4; a++)
        for (int ip = 0; ip < 2; ip++) {
            qk_case c = base_case("anchor", anchors[a][0], anchors[a][1], anchors[a][1], B, B);
            c.in_place = ip;
            run_case(&c);
        }
    for (int pr = 1; pr < 5; pr++) {
        qk_case c = base_case("anchor (1024, 4096)", 1024, 4096, 4096, pairs[pr][0], pairs[pr][1]);
        c.in_place = pr & 1;
        run_case(&c);
    }

    /* widths through every vectors-per-thread variant, the two-pass paths and the scalar path */
    const int64_t widths[] = {1, 7, 8, 100, 1024, 4095, 8192, 12288, 16384, 24576};
    for (int pr = 0; pr < 5; pr++)
        for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
            for (int ip = 0; ip < 2; ip++) {
                qk_case c = base_case("width", 3, widths[i], widths[i], pairs[pr][0], pairs[pr][1]);
                c.in_place = ip;
                c.special = QK_ZERO_ROW | QK_NAN_ROW;
                run_case(&c);
            }
    for (int pr = 0; pr < 5; pr++) {
        /* beyond the register path: 16-byte two-pass */
        qk_case c = base_case("very wide", 3, pairs[pr][0] == F ? 40000 : 65600, 24, pairs[pr][0], pairs[pr][1]);
        c.special = QK_ZERO_ROW | QK_NAN_ROW;
        run_case(&c);
        /* GQA widths, strided rows (16-byte pads: vector path; odd pads: scalar path) */
        for (int odd = 0; odd < 2; odd++) {
            c = base_case(odd ? "gqa odd strides" : "gqa strided", 37, 6144, 1024, pairs[pr][0], pairs[pr][1]);
            c.q_pad = odd ? 3 : 8; c.k_pad = odd ? 1 : 16; c.q_out_pad = odd ? 5 : 0; c.k_out_pad = 8;
            c.in_place = odd;
            c.special = QK_ZERO_ROW | QK_NAN_ROW | QK_MIXED_SCALE;
            run_case(&c);
        }
        /* q and k as slices of a fused qkv buffer */
        for (int ip = 0; ip < 2; ip++) {
            c = base_case("fused qkv", 64, 2048, 512, pairs[pr][0], pairs[pr][1]);
            c.fused = 1; c.in_place = ip;
            c.special = QK_ZERO_ROW | QK_NAN_ROW;
            run_case(&c);
        }
        /* misaligned by one element: the scalar path */
        for (int ip = 0; ip < 2; ip++) {
            c = base_case("misaligned", 5, 4096, 1024, pairs[pr][0], pairs[pr][1]);
            c.misalign = 1; c.in_place = ip;
            c.special = QK_ZERO_ROW | QK_NAN_ROW;
            run_case(&c);
            c.fused = 1; c.n = 9; c.dq = 768; c.dk = 128; c.name = "misaligned fused";
            run_case(&c);
        }
        /* N = 0, 1; the Gemma flag; eps = 0 with zero rows; q alone */
        c = base_case("N=0", 0, 512, 128, pairs[pr][0], pairs[pr][1]); run_case(&c);
        c = base_case("N=1", 1, 512, 128, pairs[pr][0], pairs[pr][1]); run_case(&c);
        c = base_case("gemma", 9, 2048, 256, pairs[pr][0], pairs[pr][1]);
        c.flags = LATTE_QKNORM_WEIGHT_PLUS_ONE; run_case(&c);
        c = base_case("eps 0", 6, 2048, 256, pairs[pr][0], pairs[pr][1]);
        c.eps = 0.0f; c.special = QK_ZERO_ROW | QK_NAN_ROW; run_case(&c);
        c.misalign = 1; run_case(&c);
        c = base_case("q alone", 17, 3072, 0, pairs[pr][0], pairs[pr][1]); run_case(&c);
        /* magnitudes: huge and tiny rows through the register path and the scalar path */
        const int f16 = pairs[pr][0] == H;
        for (int mis = 0; mis < 2; mis++)
            for (int e0 = 0; e0 < 2; e0++) {
                c = base_case("huge", 4, 8192, 1024, pairs[pr][0], pairs[pr][1]);
                c.scale = f16 ? 3e4 : 1e30; c.misalign = mis; c.eps = e0 ? 0.0f : 1e-6f;
                c.special = QK_ZERO_ROW;
                run_case(&c);
                c.name = "tiny"; c.scale = f16 ? 1e-4 : 1e-30;
                run_case(&c);
            }
    }
    /* many rows: the persistent variants (LATTE_QKNORM_VARIANT, src/cuda/qknorm.cu) loop over several
     * work items per block with q and k items mixed; k rows packed two to a block beside a zero row (the
     * rare double path taken by one row of a block), and whole rows of huge or tiny values mid-loop */
    for (int pr = 0; pr < 5; pr++) {
        qk_case c = base_case("many rows", 1201, 4096, 2048, pairs[pr][0], pairs[pr][1]);
        c.in_place = pr & 1;
        c.special = QK_ZERO_ROW | QK_NAN_ROW | QK_MIXED_SCALE;
        run_case(&c);
        const int f16 = pairs[pr][0] == H;
        c = base_case("many huge rows", 1201, 2048, 1024, pairs[pr][0], pairs[pr][1]);
        c.in_place = !(pr & 1);
        c.scale = f16 ? 3e4 : 1e30;
        c.special = QK_ZERO_ROW;
        run_case(&c);
        c.name = "many tiny rows";
        c.scale = f16 ? 1e-4 : 1e-30;
        run_case(&c);
    }
    /* N = 8193 (not a multiple of anything), fused, bf16 */
    {
        qk_case c = base_case("N=8193 fused", 8193, 1024, 256, B, B);
        c.fused = 1; c.in_place = 1;
        run_case(&c);
    }
    validation_tests();
    printf("%s: %lld of %lld elements 1 ulp from the CPU backend, the rest equal\n", NAME, (long long)ulp1_count,
           (long long)compared_count);
    CUDA_OK(cudaStreamDestroy(stream));
    return test_finish(NAME);
}
