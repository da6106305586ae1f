/*
 * QK RMSNorm across heads, CPU backend: the reference semantics.
 *
 * For one row x of width D, weights w (w + 1 under LATTE_QKNORM_WEIGHT_PLUS_ONE):
 *   s   = sum_j x_j^2                     in double: every square of a bf16/f16/f32 value is exact in
 *                                         double, so s is correct to one rounding per add and cannot
 *                                         overflow or underflow for any finite input (1e30 or 1e-30 rows)
 *   r   = s / D + eps                     in double
 *   inv = r == 0 ? 0 : (float)(1 / sqrt(r))   (a zero row with eps 0 gives zeros, not 0 * inf = NaN)
 *   y_j = round_to_dtype((x_j * inv) * w_j)    two fp32 multiplies, one rounding at the store
 * The CUDA backend (src/cuda/qknorm.cu) uses exactly this formula; only the summation order of s differs,
 * so the two agree to 1 ulp of the output dtype. A NaN in a row makes that row NaN; an inf makes inv 0
 * (inf * 0 = NaN at the inf, zeros elsewhere) in both backends.
 *
 * Rows are independent (OpenMP over rows); each row is processed in chunks converted to fp32, so in
 * place works (a chunk is read before it is written).
 */
#include "internal.h"

#define QKNORM_CHUNK 256

static void load_chunk(const void *base, int64_t off, int n, latte_dtype dt, float *out) {
    switch (dt) {
    case LATTE_DTYPE_BF16: {
        const uint16_t *p = (const uint16_t *)base + off;
        for (int i = 0; i < n; i++) out[i] = latte_bf16_to_f32(p[i]);
        break;
    }
    case LATTE_DTYPE_F16: {
        const uint16_t *p = (const uint16_t *)base + off;
        for (int i = 0; i < n; i++) out[i] = latte_f16_to_f32(p[i]);
        break;
    }
    case LATTE_DTYPE_F32: memcpy(out, (const float *)base + off, (size_t)n * sizeof(float)); break;
    }
}

static void store_chunk(void *base, int64_t off, int n, latte_dtype dt, const float *in) {
    switch (dt) {
    case LATTE_DTYPE_BF16: {
        uint16_t *p = (uint16_t *)base + off;
        for (int i = 0; i < n; i++) p[i] = latte_f32_to_bf16(in[i]);
        break;
    }
    case LATTE_DTYPE_F16: {
        uint16_t *p = (uint16_t *)base + off;
        for (int i = 0; i < n; i++) p[i] = latte_f32_to_f16(in[i]);
        break;
    }
    case LATTE_DTYPE_F32: memcpy((float *)base + off, in, (size_t)n * sizeof(float)); break;
    }
}

/* 1/rms from the sum of squares: the formula both backends share */
static float inv_rms(double sum_squares, int64_t width, float eps) {
    double r = sum_squares / (double)width + (double)eps;
    return r == 0.0 ? 0.0f : (float)(1.0 / sqrt(r));
}

static void normalize_row(const void *x, int64_t x_off, void *y, int64_t y_off, const void *w, int64_t width,
                          latte_dtype dt, latte_dtype wdt, float eps, int plus_one) {
    float xs[QKNORM_CHUNK], ws[QKNORM_CHUNK];
    double s = 0.0;
    for (int64_t c = 0; c < width; c += QKNORM_CHUNK) {
        int n = (int)(width - c < QKNORM_CHUNK ? width - c : QKNORM_CHUNK);
        load_chunk(x, x_off + c, n, dt, xs);
        for (int i = 0; i < n; i++) s += (double)xs[i] * (double)xs[i];
    }
    const float inv = inv_rms(s, width, eps);
    for (int64_t c = 0; c < width; c += QKNORM_CHUNK) {
        int n = (int)(width - c < QKNORM_CHUNK ? width - c : QKNORM_CHUNK);
        load_chunk(x, x_off + c, n, dt, xs);
        load_chunk(w, c, n, wdt, ws);
        if (plus_one)
            for (int i = 0; i < n; i++) xs[i] = (xs[i] * inv) * (1.0f + ws[i]);
        else
            for (int i = 0; i < n; i++) xs[i] = (xs[i] * inv) * ws[i];
        store_chunk(y, y_off + c, n, dt, xs);
    }
}

/* Called by src/api/qknorm.c with validated, resolved parameters: q_out non-NULL, k NULL iff k_width 0. */
latte_status latte_cpu_qknorm(const latte_qknorm_params *p) {
    const int64_t n = p->n_tokens;
    const int has_k = p->k_width > 0;
    const int64_t rows = n * (has_k ? 2 : 1);
    const int plus_one = (p->flags & LATTE_QKNORM_WEIGHT_PLUS_ONE) != 0;
    const double work = (double)n * (double)(p->q_width + p->k_width);
    (void)work;
#pragma omp parallel for schedule(static) if (work > 65536.0)
    for (int64_t r = 0; r < rows; r++) {
        if (r < n)
            normalize_row(p->q, r * p->q_row_stride, p->q_out, r * p->q_out_row_stride, p->q_weight, p->q_width,
                          p->dtype, p->weight_dtype, p->eps, plus_one);
        else
            normalize_row(p->k, (r - n) * p->k_row_stride, p->k_out, (r - n) * p->k_out_row_stride, p->k_weight,
                          p->k_width, p->dtype, p->weight_dtype, p->eps, plus_one);
    }
    return LATTE_STATUS_SUCCESS;
}
