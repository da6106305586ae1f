/*
 * QK RMSNorm across heads, CPU backend, against a float64 computation of the spec's formula:
 * widths 1 .. 12288, Dq != Dk, strided rows and fused qkv slices, every dtype pair, in place and out of
 * place, N = 0, 1, 3, 37, zero rows, NaN rows, huge and tiny magnitudes, the Gemma flag, eps = 0.
 * Every output element is compared; guards and gaps must be bit-identical; out of place leaves the
 * inputs bit-identical. Then every validation error: right status, message set, memory untouched.
 */
#include "qknorm_test_common.h"

static const char *NAME = "test_qknorm";

/* bound on |cpu - exact| for one output element: half an ulp of the output dtype plus fp32 steps */
static int within(double got, double ref, latte_dtype dt) {
    if (isnan(ref)) return isnan(got);
    if (isnan(got)) return 0;
    double rel = dt == LATTE_DTYPE_BF16 ? 0x1p-8 : dt == LATTE_DTYPE_F16 ? 0x1p-11 : 0x1p-23;
    double atol = dt == LATTE_DTYPE_F16 ? 0x1p-25 : 1e-38;
    return fabs(got - ref) <= atol + (rel + 1e-6) * fabs(ref);
}

static void run_case(const qk_case *c) {
    char desc[512];
    qk_describe(c, desc, sizeof desc);
    qk_setup s;
    if (!qk_setup_make(&s, c)) {
        CHECK(0, "%s: host allocation failed", desc);
        qk_setup_free(&s);
        return;
    }
    latte_qknorm_params p = qk_params(&s, s.in, s.out, s.w);
    latte_status st = latte_qknorm_across_heads(&p, LATTE_BACKEND_CPU, NULL);
    CHECK(st == LATTE_STATUS_SUCCESS, "%s: status %s (%s)", desc, latte_status_string(st), latte_last_error());
    CHECK(latte_last_error()[0] == '\0', "%s: message left after success: %s", desc, latte_last_error());

    /* every output element against float64 */
    int64_t miss = 0, total = 0;
    const uint8_t *out = c->in_place ? s.in : s.out;
    for (int t = 0; t < 2; t++) {
        const int64_t width = t ? c->dk : c->dq;
        const int64_t xo = t ? s.k_off : s.q_off, xs = t ? s.ks : s.qs;
        const int64_t yo = t ? s.ko_off : s.qo_off, ys = t ? s.kos : s.qos;
        const int64_t wo = t ? s.wk_off : s.wq_off;
        for (int64_t r = 0; r < c->n; r++) {
            double sum = 0;
            for (int64_t j = 0; j < width; j++) {
                double x = qk_get(s.in0, c->dt, xo + r * xs + j);
                sum += x * x;
            }
            double rr = sum / (double)width + (double)c->eps;
            double inv = rr == 0 ? 0 : 1.0 / sqrt(rr);
            for (int64_t j = 0; j < width; j++) {
                double x = qk_get(s.in0, c->dt, xo + r * xs + j);
                double w = qk_get(s.w, c->wdt, wo + j);
                if (c->flags & LATTE_QKNORM_WEIGHT_PLUS_ONE) w += 1.0;
                double ref = x * inv * w;
                double got = qk_get(out, c->dt, yo + r * ys + j);
                total++;
                if (!within(got, ref, c->dt)) {
                    if (miss < 4)
                        fprintf(stderr, "  %s: %s row %lld col %lld: got %.9g, expected %.9g\n", desc, t ? "k" : "q",
                                (long long)r, (long long)j, got, ref);
                    miss++;
                }
            }
        }
    }
    CHECK(miss == 0, "%s: %lld of %lld elements off", desc, (long long)miss, (long long)total);
    CHECK(qk_check_untouched(&s, s.in, s.out) == 0, "%s: memory outside the outputs changed", desc);
    qk_setup_free(&s);
}

static qk_case base_case(int64_t n, int64_t dq, int64_t dk, latte_dtype dt, latte_dtype wdt) {
    qk_case c;
    memset(&c, 0, sizeof c);
    c.name = "case";
    c.n = n; c.dq = dq; c.dk = dk; c.dt = dt; c.wdt = wdt;
    c.eps = 1e-6f; c.scale = 1.0;
    return c;
}

/* ---- validation: each bad call must fail with `want`, set a message and write nothing ---- */
typedef struct {
    uint16_t q[4 * 40], k[4 * 24], qo[4 * 40], ko[4 * 24], wq[32], wk[16];
} small_bufs;

static void expect_reject(const char *what, const latte_qknorm_params *p, latte_backend be, latte_status want,
                          small_bufs *b) {
    small_bufs before;
    memcpy(&before, b, sizeof before);
    latte_status st = latte_qknorm_across_heads(p, be, NULL);
    CHECK(st == want, "%s: status %s, expected %s (%s)", what, latte_status_string(st), latte_status_string(want),
          latte_last_error());
    CHECK(latte_last_error()[0] != '\0', "%s: no error message", what);
    CHECK(memcmp(&before, b, sizeof before) == 0, "%s: a rejected call changed memory", what);
}

static void validation_tests(void) {
    small_bufs b;
    for (size_t i = 0; i < sizeof b / 2; i++) ((uint16_t *)&b)[i] = f32_to_bf16((float)(test_normal()));
    /* q [4, 32] in rows of 40, k [4, 16] in rows of 24 */
    latte_qknorm_params ok = latte_qknorm_params_default(4, b.q, 32, b.k, 16, b.wq, b.wk, LATTE_DTYPE_BF16);
    ok.q_row_stride = 40; ok.k_row_stride = 24;
    latte_qknorm_params p;
    const latte_status INV = LATTE_STATUS_INVALID_ARGUMENT;

    expect_reject("params NULL", NULL, LATTE_BACKEND_CPU, INV, &b);
    p = ok; expect_reject("backend 7", &p, (latte_backend)7, INV, &b);
    p = ok; p.dtype = (latte_dtype)9; expect_reject("dtype 9", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.weight_dtype = (latte_dtype)9; expect_reject("weight_dtype 9", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.weight_dtype = LATTE_DTYPE_F16; expect_reject("weight_dtype f16 with bf16", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.dtype = LATTE_DTYPE_F32; p.weight_dtype = LATTE_DTYPE_BF16;
    expect_reject("weight_dtype bf16 with f32", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.eps = NAN; expect_reject("eps NaN", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.eps = INFINITY; expect_reject("eps inf", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.eps = -1e-6f; expect_reject("eps < 0", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.flags = 2; expect_reject("flags 2", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.n_tokens = -1; expect_reject("n_tokens -1", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.q_width = 0; expect_reject("q_width 0", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.q_width = -5; expect_reject("q_width -5", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.q_width = ((int64_t)1 << 30) + 1; p.q_row_stride = p.q_width;
    expect_reject("q_width > 2^30", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.k_width = -1; expect_reject("k_width -1", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.q_row_stride = 31; expect_reject("q_row_stride < q_width", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.k_row_stride = 15; expect_reject("k_row_stride < k_width", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.q_out = b.qo; p.q_out_row_stride = 31; expect_reject("q_out_row_stride < q_width", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.k_out = b.ko; p.k_out_row_stride = -24; expect_reject("k_out_row_stride < 0", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.n_tokens = (int64_t)1 << 40; p.q_row_stride = (int64_t)1 << 30;
    expect_reject("n_tokens * stride overflows", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.q = NULL; expect_reject("q NULL", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.q_weight = NULL; expect_reject("q_weight NULL", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.k = NULL; expect_reject("k NULL with k_width 16", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.k_weight = NULL; expect_reject("k_weight NULL", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.q = (char *)b.q + 1; expect_reject("q odd address", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.k_weight = (const char *)b.wk + 1; expect_reject("k_weight odd address", &p, LATTE_BACKEND_CPU, INV, &b);
    /* overlaps */
    p = ok; p.q_out = b.q + 1; p.q_out_row_stride = 40; expect_reject("q_out overlaps q", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.q_out = b.q; p.q_out_row_stride = 36; expect_reject("q_out == q, other stride", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.k_out = b.q + 8; p.k_out_row_stride = 40; expect_reject("k_out inside q", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.q_out = b.qo; p.q_out_row_stride = 40; p.k_out = b.qo + 32; p.k_out_row_stride = 40;
    expect_reject("k_out overlaps q_out", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.q_out = b.wq; p.q_out_row_stride = 32; p.n_tokens = 1;
    expect_reject("q_out over q_weight", &p, LATTE_BACKEND_CPU, INV, &b);
    p = ok; p.k = b.q + 16; p.k_row_stride = 40; /* k's columns 16..31 of q's rows, in place */
    expect_reject("k in place inside q's columns", &p, LATTE_BACKEND_CPU, INV, &b);
    /* the CUDA backend with no GPU */
    if (latte_cuda_device_count() == 0) {
        p = ok; expect_reject("CUDA backend without a GPU", &p, LATTE_BACKEND_CUDA, LATTE_STATUS_NO_DEVICE, &b);
    }

    /* accepted: N = 0 with NULL pointers; q alone; k given with k_width 0 is ignored; fused slices in place */
    p = ok; p.n_tokens = 0; p.q = p.k = NULL; p.q_weight = p.k_weight = NULL;
    CHECK_OK(latte_qknorm_across_heads(&p, LATTE_BACKEND_CPU, NULL));
    {
        small_bufs before;
        memcpy(&before, &b, sizeof b);
        p = ok; p.k_width = 0;
        CHECK_OK(latte_qknorm_across_heads(&p, LATTE_BACKEND_CPU, NULL));
        CHECK(memcmp(before.k, b.k, sizeof b.k) == 0, "k_width 0: k was written");
        CHECK(memcmp(before.q, b.q, sizeof b.q) != 0, "k_width 0: q was not normalized");
        p = ok; p.k = NULL; p.k_weight = NULL; p.k_width = 0; p.k_row_stride = 0;
        CHECK_OK(latte_qknorm_across_heads(&p, LATTE_BACKEND_CPU, NULL));
        /* q = columns 0..15, k = columns 16..31 of rows of 40: interleaved, disjoint */
        p = ok; p.q_width = 16; p.k = b.q + 16; p.k_width = 16; p.k_row_stride = 40;
        CHECK_OK(latte_qknorm_across_heads(&p, LATTE_BACKEND_CPU, NULL));
        /* out of place into interleaved slices of one output buffer; inputs may overlap each other */
        p = ok; p.q_width = 16; p.k = b.q; p.k_width = 16; p.k_row_stride = 40;
        p.q_out = b.qo; p.q_out_row_stride = 40; p.k_out = b.qo + 16; p.k_out_row_stride = 40;
        CHECK_OK(latte_qknorm_across_heads(&p, LATTE_BACKEND_CPU, NULL));
    }
    /* the default params */
    p = latte_qknorm_params_default(3, b.q, 32, b.k, 16, b.wq, b.wk, LATTE_DTYPE_F16);
    CHECK(p.eps == 1e-6f && p.q_row_stride == 32 && p.k_row_stride == 16 && !p.q_out && !p.k_out &&
              p.weight_dtype == LATTE_DTYPE_F16 && p.flags == 0,
          "latte_qknorm_params_default");
}

/* The tests' parallel fills (qk_setup_make, gpu_mla's fill_fast) rest on splitmix64 being a counter: the draw k
 * ahead of a state is test_rng_at(state, k), and test_rng_skip(n) leaves the state where n draws would. */
static void rng_counter_check(void) {
    const uint64_t saved = test_rng_state;
    int bad = 0;
    for (int trial = 0; trial < 8; trial++) {
        const uint64_t base = test_rng_u64(), n = 1 + test_rng_u64() % 5000;
        test_rng_state = base;
        for (uint64_t k = 0; k < n; k++) bad += test_rng_u64() != test_rng_at(base, k);
        const uint64_t after_serial = test_rng_state;
        test_rng_state = base;
        test_rng_skip(n);
        bad += test_rng_state != after_serial;
        test_rng_state = after_serial;
    }
    test_rng_state = saved;
    CHECK(bad == 0, "the test RNG's counter form differs from its draws in %d places", bad);
}

int main(void) {
    test_seed(NAME);
    rng_counter_check();
    const latte_dtype dts[3] = {LATTE_DTYPE_BF16, LATTE_DTYPE_F16, LATTE_DTYPE_F32};
    const int64_t widths[] = {1, 7, 8, 100, 4095, 8192, 12288};

    /* every dtype pair x in/out of place x widths (Dq = Dk = width), N = 3 */
    for (int d = 0; d < 3; d++)
        for (int wf = 0; wf < 2; wf++) {
            if (wf && dts[d] == LATTE_DTYPE_F32) continue;
            latte_dtype wdt = wf ? LATTE_DTYPE_F32 : dts[d];
            for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
                for (int ip = 0; ip < 2; ip++) {
                    qk_case c = base_case(3, widths[i], widths[i], dts[d], wdt);
                    c.name = "widths";
                    c.in_place = ip;
                    c.special = QK_ZERO_ROW | QK_NAN_ROW;
                    run_case(&c);
                }
            /* Dq != Dk, strided, N = 37 */
            for (int ip = 0; ip < 2; ip++) {
                qk_case c = base_case(37, 6144, 1024, dts[d], wdt);
                c.name = "gqa strided";
                c.q_pad = 8; c.k_pad = 3; c.q_out_pad = 5; c.k_out_pad = 16;
                c.in_place = ip;
                c.special = QK_ZERO_ROW | QK_NAN_ROW | QK_MIXED_SCALE;
                run_case(&c);
                c.name = "fused qkv";
                c.fused = 1; c.fused_pad = ip ? 0 : 5;
                c.n = 5; c.dq = 512; c.dk = 128;
                run_case(&c);
            }
            /* N = 0, 1; the Gemma flag; eps = 0 with a zero row; q alone */
            qk_case c = base_case(0, 64, 32, dts[d], wdt);
            c.name = "N=0"; run_case(&c);
            c = base_case(1, 256, 128, dts[d], wdt); c.name = "N=1"; run_case(&c);
            c = base_case(7, 300, 200, dts[d], wdt); c.name = "gemma"; c.flags = LATTE_QKNORM_WEIGHT_PLUS_ONE; run_case(&c);
            c = base_case(6, 300, 200, dts[d], wdt); c.name = "eps 0"; c.eps = 0.0f; c.special = QK_ZERO_ROW | QK_NAN_ROW;
            run_case(&c);
            c = base_case(5, 1000, 0, dts[d], wdt); c.name = "q alone"; c.in_place = 0; run_case(&c);
            /* magnitudes */
            const double huge = dts[d] == LATTE_DTYPE_F16 ? 3e4 : 1e30, tiny = dts[d] == LATTE_DTYPE_F16 ? 1e-4 : 1e-30;
            c = base_case(4, 2048, 512, dts[d], wdt); c.name = "huge"; c.scale = huge; c.special = QK_ZERO_ROW; run_case(&c);
            c.eps = 0.0f; run_case(&c);
            c = base_case(4, 2048, 512, dts[d], wdt); c.name = "tiny"; c.scale = tiny; run_case(&c);
            c.eps = 0.0f; run_case(&c);
        }
    validation_tests();
    return test_finish(NAME);
}
