/*
 * latte_rope_tables, CPU backend: known values, the reference kind's bf16 formula (spec/mla-decode.md)
 * recomputed here op by op, the fp32 kind against double-precision cos/sin, the halves' symmetry, and
 * argument errors (status, message, nothing written).
 */
#include "test_util.h"

/* the reference kind, op by op (see src/cpu/rope_cpu.c for the torch expression it reproduces) */
static uint16_t ref_entry(int64_t t, int64_t i, int64_t half, float base, int want_sin) {
    const float e = round_bf16(round_bf16(-(float)i) * (1.0f / (float)half));
    const float theta = round_bf16((float)pow((double)round_bf16(base), (double)e)); /* torch rounds the base */
    const float angle = round_bf16(round_bf16((float)t) * theta); /* positions go through bf16 */
    return f32_to_bf16((float)(want_sin ? sin((double)angle) : cos((double)angle)));
}

static void check_tables(latte_rope_kind kind, int64_t max_pos, int64_t P, float base) {
    const size_t n = (size_t)(max_pos * P);
    uint16_t *c = (uint16_t *)malloc(n * 2), *s = (uint16_t *)malloc(n * 2);
    for (size_t i = 0; i < n; i++) c[i] = s[i] = BF16_NAN;
    CHECK_OK(latte_rope_tables(kind, max_pos, P, base, c, s, LATTE_BACKEND_CPU, NULL));
    const int64_t half = P / 2;
    size_t row0 = 0, sym = 0, formula = 0, norm = 0, nan = 0;
    for (int64_t t = 0; t < max_pos; t++)
        for (int64_t i = 0; i < P; i++) {
            const uint16_t cv = c[t * P + i], sv = s[t * P + i];
            const float cf = bf16_to_f32(cv), sf = bf16_to_f32(sv);
            if (isnan(cf) || isnan(sf)) nan++;
            if (t == 0 && (cv != 0x3f80 || sf != 0.0f)) row0++;
            if (i >= half && (cv != c[t * P + i - half] || sv != s[t * P + i - half])) sym++;
            if (fabs((double)cf * cf + (double)sf * sf - 1.0) > 1.2e-2) norm++;
            if (i < half) {
                if (kind == LATTE_ROPE_BF16_REFERENCE) {
                    if (cv != ref_entry(t, i, half, base, 0) || sv != ref_entry(t, i, half, base, 1)) {
                        if (formula < 3)
                            fprintf(stderr, "  ref t=%lld i=%lld: got %04x/%04x\n", (long long)t, (long long)i, cv, sv);
                        formula++;
                    }
                } else {
                    /* fp32 angle (error <= |angle| * 2^-24) then a bf16 rounding (<= 2^-9) */
                    const double ang = (double)t * pow((double)base, -(double)i / (double)half);
                    const double tol = 1.0 / 512 + fabs(ang) * 1.2e-7 + 1e-6;
                    if (fabs(cf - cos(ang)) > tol || fabs(sf - sin(ang)) > tol) formula++;
                }
            }
        }
    const char *kn = kind == LATTE_ROPE_BF16_REFERENCE ? "bf16_reference" : "fp32";
    CHECK(nan == 0, "%s P=%lld: %zu NaN entries (something unwritten)", kn, (long long)P, nan);
    CHECK(row0 == 0, "%s P=%lld: row 0 is not cos 1, sin 0 (%zu)", kn, (long long)P, row0);
    CHECK(sym == 0, "%s P=%lld: %zu second-half entries differ from the first half", kn, (long long)P, sym);
    CHECK(norm == 0, "%s P=%lld: %zu entries with cos^2+sin^2 off 1", kn, (long long)P, norm);
    CHECK(formula == 0, "%s P=%lld max_pos=%lld base=%g: %zu entries off the formula", kn, (long long)P,
          (long long)max_pos, (double)base, formula);
    free(c);
    free(s);
}

/* row t=1 of the reference kind at P=64, by hand: angle = theta_i = bf16(bf16(10000)^(-i/32)) */
static void check_row1(void) {
    uint16_t c[4 * 64], s[4 * 64];
    CHECK_OK(latte_rope_tables(LATTE_ROPE_BF16_REFERENCE, 4, 64, 10000.0f, c, s, LATTE_BACKEND_CPU, NULL));
    size_t bad = 0;
    for (int i = 0; i < 32; i++) {
        const double theta = round_bf16((float)pow(9984.0, -i / 32.0)); /* bf16(10000) = 9984; i/32 exact */
        if (c[64 + i] != f32_to_bf16((float)cos(theta)) || s[64 + i] != f32_to_bf16((float)sin(theta))) bad++;
    }
    CHECK(bad == 0, "reference row t=1: %zu entries differ from bf16(cos(bf16(9984^(-i/32))))", bad);
    /* pinned to PyTorch (2.11 on an H200, 2.15 on a CPU, both): theta_15 = 0.01336669921875 (bf16 0x3c5b),
     * while the unrounded base would give bf16(10000^-0.46875) = 0.0133056640625: row 1 holds cos/sin(theta) */
    CHECK(c[64 + 15] == f32_to_bf16((float)cos(0.01336669921875)) && s[64 + 15] == f32_to_bf16((float)sin(0.01336669921875)),
          "reference row 1, i=15: sin %04x, expected sin(0.01336669921875) as PyTorch computes it", s[64 + 15]);
    CHECK(c[64] == 0x3f0a && s[64] == 0x3f57, "reference row 1, i=0: cos %04x sin %04x (expected bf16 cos(1), sin(1))",
          c[64], s[64]);
    /* the position rounding: bf16(257) = 256, so rows 256 and 257 of the reference kind are equal */
    uint16_t *c2 = (uint16_t *)malloc(300 * 64 * 2), *s2 = (uint16_t *)malloc(300 * 64 * 2);
    CHECK_OK(latte_rope_tables(LATTE_ROPE_BF16_REFERENCE, 300, 64, 10000.0f, c2, s2, LATTE_BACKEND_CPU, NULL));
    CHECK(!memcmp(c2 + 256 * 64, c2 + 257 * 64, 128) && !memcmp(s2 + 256 * 64, s2 + 257 * 64, 128),
          "reference rows 256 and 257 differ (positions are not rounded to bf16)");
    CHECK_OK(latte_rope_tables(LATTE_ROPE_FP32, 300, 64, 10000.0f, c2, s2, LATTE_BACKEND_CPU, NULL));
    CHECK(memcmp(s2 + 256 * 64, s2 + 257 * 64, 128) != 0, "fp32 rows 256 and 257 are equal");
    free(c2);
    free(s2);
}

static void check_errors(void) {
    uint16_t c[64], s[64], c0[64], s0[64];
    for (int i = 0; i < 64; i++) c[i] = s[i] = c0[i] = s0[i] = 0x1234;
    struct {
        latte_rope_kind kind;
        int64_t max_pos, P;
        float base;
        void *c, *s;
        int backend;
        const char *what;
    } cases[] = {
        {(latte_rope_kind)7, 4, 16, 10000.0f, c, s, LATTE_BACKEND_CPU, "bad kind"},
        {LATTE_ROPE_FP32, 0, 16, 10000.0f, c, s, LATTE_BACKEND_CPU, "max_pos 0"},
        {LATTE_ROPE_FP32, -3, 16, 10000.0f, c, s, LATTE_BACKEND_CPU, "max_pos < 0"},
        {LATTE_ROPE_FP32, 4, 15, 10000.0f, c, s, LATTE_BACKEND_CPU, "odd rope_dim"},
        {LATTE_ROPE_FP32, 4, 0, 10000.0f, c, s, LATTE_BACKEND_CPU, "rope_dim 0"},
        {LATTE_ROPE_FP32, 4, 16, 0.0f, c, s, LATTE_BACKEND_CPU, "base 0"},
        {LATTE_ROPE_FP32, 4, 16, -2.0f, c, s, LATTE_BACKEND_CPU, "base < 0"},
        {LATTE_ROPE_FP32, 4, 16, INFINITY, c, s, LATTE_BACKEND_CPU, "base inf"},
        {LATTE_ROPE_FP32, 4, 16, NAN, c, s, LATTE_BACKEND_CPU, "base NaN"},
        {LATTE_ROPE_FP32, 4, 16, 10000.0f, NULL, s, LATTE_BACKEND_CPU, "cos NULL"},
        {LATTE_ROPE_FP32, 4, 16, 10000.0f, c, NULL, LATTE_BACKEND_CPU, "sin NULL"},
        {LATTE_ROPE_FP32, 4, 16, 10000.0f, c, c + 8, LATTE_BACKEND_CPU, "sin overlaps cos"},
        {LATTE_ROPE_FP32, 4, 16, 10000.0f, c, s, 9, "bad backend"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        latte_status st = latte_rope_tables(cases[k].kind, cases[k].max_pos, cases[k].P, cases[k].base, cases[k].c,
                                            cases[k].s, (latte_backend)cases[k].backend, NULL);
        CHECK(st == LATTE_STATUS_INVALID_ARGUMENT, "%s: status %s", cases[k].what, latte_status_string(st));
        CHECK(latte_last_error()[0] != 0, "%s: no message", cases[k].what);
        CHECK(!memcmp(c, c0, sizeof c) && !memcmp(s, s0, sizeof s), "%s: wrote into the tables", cases[k].what);
    }
    CHECK_OK(latte_rope_tables(LATTE_ROPE_FP32, 4, 16, 10000.0f, c, s, LATTE_BACKEND_CPU, NULL));
    CHECK(latte_last_error()[0] == 0, "message not cleared after success");
}

int main(void) {
    test_seed("test_rope");
    check_row1();
    const int64_t dims[] = {2, 8, 16, 64, 128};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        check_tables(LATTE_ROPE_BF16_REFERENCE, 8193, dims[i], 10000.0f);
        check_tables(LATTE_ROPE_FP32, 8193, dims[i], 10000.0f);
    }
    /* other bases and sizes, random */
    for (int k = 0; k < 4; k++) {
        const int64_t P = 2 * test_randint(1, 48), max_pos = test_randint(1, 3000);
        const float base = (float)(test_uniform() < 0.5 ? 500000.0 : 10.0 + 1e5 * test_uniform());
        check_tables(LATTE_ROPE_BF16_REFERENCE, max_pos, P, base);
        check_tables(LATTE_ROPE_FP32, max_pos, P, base);
    }
    check_errors();
    return test_finish("test_rope");
}
