/*
 * Shared by test_qknorm.c (CPU backend vs float64) and gpu_qknorm.c (CUDA backend vs CPU backend):
 * one test case laid out in three host arenas (inputs, outputs, weights) with NaN-poisoned guards
 * around and between the tensors, so a stray write anywhere is seen. The GPU test copies the arenas
 * byte for byte into device memory (same offsets, so the same alignment relative to 256 bytes).
 */
#ifndef QKNORM_TEST_COMMON_H
#define QKNORM_TEST_COMMON_H

#include "test_util.h"

#define QK_GUARD 64          /* elements of poison before/after every tensor */
#define QK_POISON16 0x7fa1u  /* a NaN in bf16 and in f16 */
#define QK_POISON32 0x7fa1a1a1u

enum { QK_ZERO_ROW = 1, QK_NAN_ROW = 2, QK_MIXED_SCALE = 4 };

typedef struct qk_case {
    const char *name;
    int64_t n, dq, dk;
    int64_t q_pad, k_pad, q_out_pad, k_out_pad; /* row stride = width + pad (ignored when fused) */
    int fused;          /* q and k column slices of [n, dq + 2 dk + fused_pad] (and the outputs likewise) */
    int64_t fused_pad;
    latte_dtype dt, wdt;
    int in_place;
    float eps;
    unsigned flags;
    double scale;       /* magnitude of the activations */
    unsigned special;   /* QK_ZERO_ROW, QK_NAN_ROW */
    int misalign;       /* shift every tensor by this many elements (16-bit: breaks 16-byte alignment) */
} qk_case;

typedef struct qk_setup {
    qk_case c;
    size_t es, wes;
    int64_t in_elems, out_elems, w_elems;
    int64_t q_off, k_off, qo_off, ko_off, wq_off, wk_off; /* element offsets into their arena */
    int64_t qs, ks, qos, kos;                             /* row strides */
    uint8_t *in, *out, *w;                                /* arenas (out NULL in place) */
    uint8_t *in0, *out0;                                  /* snapshots taken before the call */
    uint8_t *in_mask, *out_mask;                          /* 1 where the call may write */
} qk_setup;

static inline int64_t qk_round8(int64_t x) { return (x + 7) / 8 * 8; }

static inline float qk_get(const uint8_t *arena, latte_dtype dt, int64_t i) {
    if (dt == LATTE_DTYPE_F32) { float f; memcpy(&f, arena + 4 * i, 4); return f; }
    uint16_t h; memcpy(&h, arena + 2 * i, 2);
    return dt == LATTE_DTYPE_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}
static inline uint32_t qk_bits(const uint8_t *arena, latte_dtype dt, int64_t i) {
    if (dt == LATTE_DTYPE_F32) { uint32_t u; memcpy(&u, arena + 4 * i, 4); return u; }
    uint16_t h; memcpy(&h, arena + 2 * i, 2); return h;
}
static inline void qk_set(uint8_t *arena, latte_dtype dt, int64_t i, float v) {
    if (dt == LATTE_DTYPE_F32) { memcpy(arena + 4 * i, &v, 4); return; }
    uint16_t h = dt == LATTE_DTYPE_BF16 ? f32_to_bf16(v) : f32_to_f16(v);
    memcpy(arena + 2 * i, &h, 2);
}
static inline void qk_poison(uint8_t *arena, size_t es, int64_t n) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t i = 0; i < n; i++) {
        if (es == 4) { uint32_t u = QK_POISON32; memcpy(arena + 4 * i, &u, 4); }
        else { uint16_t h = QK_POISON16; memcpy(arena + 2 * i, &h, 2); }
    }
}

/* cheap approximately normal numbers (sum of uniforms): big shapes need hundreds of millions */
static inline float qk_randn_of(uint64_t r) {
    int s = (int)(r & 0xffff) + (int)((r >> 16) & 0xffff) + (int)((r >> 32) & 0xffff) + (int)((r >> 48) & 0xffff);
    return (float)((s - 131070) * (1.7320508 / 65536.0));
}
static inline float qk_randn(void) { return qk_randn_of(test_rng_u64()); }

static inline void qk_mark(uint8_t *mask, int64_t off, int64_t n, int64_t stride, int64_t width) {
    for (int64_t r = 0; r < n; r++) memset(mask + off + r * stride, 1, (size_t)width);
}

/* Lays out, allocates and fills one case. Returns 0 when an allocation failed. */
static inline int qk_setup_make(qk_setup *s, const qk_case *c) {
    memset(s, 0, sizeof *s);
    s->c = *c;
    s->es = c->dt == LATTE_DTYPE_F32 ? 4 : 2;
    s->wes = c->wdt == LATTE_DTYPE_F32 ? 4 : 2;
    const int64_t G = QK_GUARD, m = c->misalign, n = c->n;
    if (c->fused) {
        const int64_t S = c->dq + 2 * c->dk + c->fused_pad;
        s->qs = s->ks = s->qos = s->kos = S;
        s->q_off = G + m; s->k_off = s->q_off + c->dq;
        s->in_elems = G + m + n * S + G;
        s->qo_off = G + m; s->ko_off = s->qo_off + c->dq;
        s->out_elems = c->in_place ? 0 : s->in_elems;
    } else {
        s->qs = c->dq + c->q_pad; s->ks = c->dk + c->k_pad;
        s->qos = c->dq + c->q_out_pad; s->kos = c->dk + c->k_out_pad;
        s->q_off = G + m;
        s->k_off = qk_round8(s->q_off + n * s->qs + G) + m;
        s->in_elems = s->k_off + n * s->ks + G;
        s->qo_off = G + m;
        s->ko_off = qk_round8(s->qo_off + n * s->qos + G) + m;
        s->out_elems = c->in_place ? 0 : s->ko_off + n * s->kos + G;
    }
    if (c->in_place) { s->qos = s->qs; s->kos = s->ks; s->qo_off = s->q_off; s->ko_off = s->k_off; }
    s->wq_off = G + m;
    s->wk_off = qk_round8(s->wq_off + c->dq + G) + m;
    s->w_elems = s->wk_off + c->dk + G;

    s->in = (uint8_t *)malloc((size_t)s->in_elems * s->es);
    s->in0 = (uint8_t *)malloc((size_t)s->in_elems * s->es);
    s->in_mask = (uint8_t *)calloc((size_t)s->in_elems, 1);
    s->w = (uint8_t *)malloc((size_t)s->w_elems * s->wes);
    if (s->out_elems) {
        s->out = (uint8_t *)malloc((size_t)s->out_elems * s->es);
        s->out0 = (uint8_t *)malloc((size_t)s->out_elems * s->es);
        s->out_mask = (uint8_t *)calloc((size_t)s->out_elems, 1);
    }
    if (!s->in || !s->in0 || !s->in_mask || !s->w || (s->out_elems && (!s->out || !s->out0 || !s->out_mask))) return 0;
    qk_poison(s->in, s->es, s->in_elems);
    qk_poison(s->w, s->wes, s->w_elems);
    if (s->out) qk_poison(s->out, s->es, s->out_elems);

    /* activations: per row a random magnitude around `scale` (QK_MIXED_SCALE: 1e-3..1e3 times it); row 1 zeros
     * (QK_ZERO_ROW), one NaN in row 2 (QK_NAN_ROW). The draws, in the order of a one-thread loop over rows (a row's
     * magnitude, its values, then row 2's NaN column), are placed first; the values are then written on every host
     * thread (test_util.h's test_rng_at: the same numbers for any thread count). */
    int64_t *row_draw = (int64_t *)malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    double *row_scale = (double *)malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!row_draw || !row_scale) { free(row_draw); free(row_scale); return 0; }
    for (int t = 0; t < 2; t++) {
        const int64_t width = t ? c->dk : c->dq, off = t ? s->k_off : s->q_off, st = t ? s->ks : s->qs;
        const uint64_t base = test_rng_state;
        int64_t k = 0, nan_col = -1; /* draws placed so far */
        for (int64_t r = 0; r < n; r++) {
            row_scale[r] = c->scale;
            if (c->special & QK_MIXED_SCALE) /* test_randint(-3, 3) */
                row_scale[r] *= pow(10.0, (double)(-3 + (int64_t)(test_rng_at(base, k++) % 7)));
            row_draw[r] = k;
            k += width;
            if ((c->special & QK_NAN_ROW) && n > 2 && r == 2 && width > 0)
                nan_col = (int64_t)(test_rng_at(base, k++) % (uint64_t)width); /* test_randint(0, width - 1) */
        }
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (int64_t r = 0; r < n; r++)
            for (int64_t j = 0; j < width; j++)
                qk_set(s->in, c->dt, off + r * st + j,
                       (float)(qk_randn_of(test_rng_at(base, (uint64_t)(row_draw[r] + j))) * row_scale[r]));
        test_rng_skip((uint64_t)k);
        if ((c->special & QK_ZERO_ROW) && n > 1)
            for (int64_t j = 0; j < width; j++) qk_set(s->in, c->dt, off + 1 * st + j, (j & 1) ? -0.0f : 0.0f);
        if (nan_col >= 0) qk_set(s->in, c->dt, off + 2 * st + nan_col, NAN);
    }
    free(row_draw);
    free(row_scale);
    /* weights: around 1 (or around 0 under the Gemma flag, which adds 1) */
    const double w0 = (c->flags & LATTE_QKNORM_WEIGHT_PLUS_ONE) ? 0.0 : 1.0;
    for (int64_t j = 0; j < c->dq; j++) qk_set(s->w, c->wdt, s->wq_off + j, (float)(w0 + 0.5 * qk_randn()));
    for (int64_t j = 0; j < c->dk; j++) qk_set(s->w, c->wdt, s->wk_off + j, (float)(w0 + 0.5 * qk_randn()));

    uint8_t *mask = c->in_place ? s->in_mask : s->out_mask;
    qk_mark(mask, s->qo_off, n, s->qos, c->dq);
    if (c->dk) qk_mark(mask, s->ko_off, n, s->kos, c->dk);
    test_memcpy_parallel(s->in0, s->in, (size_t)s->in_elems * s->es);
    if (s->out) test_memcpy_parallel(s->out0, s->out, (size_t)s->out_elems * s->es);
    return 1;
}

static inline void qk_setup_free(qk_setup *s) {
    free(s->in); free(s->in0); free(s->in_mask); free(s->w);
    free(s->out); free(s->out0); free(s->out_mask);
    memset(s, 0, sizeof *s);
}

/* Parameters for arenas at in/out/w (host or device copies of the setup's arenas). */
static inline latte_qknorm_params qk_params(const qk_setup *s, uint8_t *in, uint8_t *out, uint8_t *w) {
    const qk_case *c = &s->c;
    latte_qknorm_params p = latte_qknorm_params_default(c->n, in + s->q_off * s->es, c->dq,
                                                        c->dk ? in + s->k_off * s->es : NULL, c->dk,
                                                        w + s->wq_off * s->wes, c->dk ? w + s->wk_off * s->wes : NULL,
                                                        c->dt);
    p.q_row_stride = s->qs;
    p.k_row_stride = c->dk ? s->ks : 0;
    p.weight_dtype = c->wdt;
    p.eps = c->eps;
    p.flags = c->flags;
    if (!c->in_place) {
        p.q_out = out + s->qo_off * s->es;
        p.q_out_row_stride = s->qos;
        if (c->dk) { p.k_out = out + s->ko_off * s->es; p.k_out_row_stride = s->kos; }
    }
    return p;
}

/* Elements the call must not have written: bit-identical to the snapshots. Returns the count changed. */
static inline int64_t qk_check_untouched(const qk_setup *s, const uint8_t *in, const uint8_t *out) {
    int64_t bad = 0; /* counted on every host thread; the first few printed by a second, one-thread pass */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(+ : bad)
#endif
    for (int64_t i = 0; i < s->in_elems; i++)
        bad += !s->in_mask[i] && qk_bits(in, s->c.dt, i) != qk_bits(s->in0, s->c.dt, i);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(+ : bad)
#endif
    for (int64_t i = 0; i < s->out_elems; i++)
        bad += !s->out_mask[i] && qk_bits(out, s->c.dt, i) != qk_bits(s->out0, s->c.dt, i);
    int64_t shown = 0;
    for (int64_t i = 0; bad && i < s->in_elems && shown < 3; i++)
        if (!s->in_mask[i] && qk_bits(in, s->c.dt, i) != qk_bits(s->in0, s->c.dt, i))
            fprintf(stderr, "  input arena element %lld changed\n", (long long)i), shown++;
    for (int64_t i = 0; bad && i < s->out_elems && shown < 3; i++)
        if (!s->out_mask[i] && qk_bits(out, s->c.dt, i) != qk_bits(s->out0, s->c.dt, i))
            fprintf(stderr, "  output arena element %lld (guard or gap) changed\n", (long long)i), shown++;
    return bad;
}

/* Distance in units in the last place between two values of `dt` given as bits (NaN vs NaN: 0). */
static inline int64_t qk_ulp_distance(uint32_t a, uint32_t b, latte_dtype dt) {
    const int bits = dt == LATTE_DTYPE_F32 ? 32 : 16;
    const uint32_t sign = 1u << (bits - 1), mag = sign - 1;
    const uint32_t exp_mask = dt == LATTE_DTYPE_F32 ? 0x7f800000u : dt == LATTE_DTYPE_BF16 ? 0x7f80u : 0x7c00u;
    int a_nan = (a & exp_mask) == exp_mask && (a & mag & ~exp_mask), b_nan = (b & exp_mask) == exp_mask && (b & mag & ~exp_mask);
    if (a_nan || b_nan) return a_nan && b_nan ? 0 : INT64_MAX;
    int64_t ia = (a & sign) ? -(int64_t)(a & mag) : (int64_t)(a & mag);
    int64_t ib = (b & sign) ? -(int64_t)(b & mag) : (int64_t)(b & mag);
    return ia > ib ? ia - ib : ib - ia;
}

static inline const char *qk_dt(latte_dtype d) { return d == LATTE_DTYPE_BF16 ? "bf16" : d == LATTE_DTYPE_F16 ? "f16" : "f32"; }

static inline void qk_describe(const qk_case *c, char *buf, size_t n) {
    snprintf(buf, n, "%s: N=%lld Dq=%lld Dk=%lld %s/w%s %s%s eps=%g flags=%u scale=%g special=%u misalign=%d",
             c->name ? c->name : "case", (long long)c->n, (long long)c->dq, (long long)c->dk, qk_dt(c->dt),
             qk_dt(c->wdt), c->in_place ? "in place" : "out of place", c->fused ? " fused qkv" : "",
             (double)c->eps, c->flags, c->scale, c->special, c->misalign);
}

#endif
