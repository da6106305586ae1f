/*
 * The MLA decode layer on the CPU backend against two float64 computations written here:
 *   - `reference`: the spec's un-absorbed steps 1-8 (k_nope = W_UK·c and v = W_UV·c per token and head, then
 *     attention) with no rounding except the bf16 inputs (weights, x, cache, rope tables): the mathematics;
 *   - `reference_contract`: the absorbed layer rounded to bf16 at exactly the points of the CPU backend's
 *     contract (src/cpu/mla_cpu.c, steps 1-7), in float64 between them: what the backend promises to compute.
 * The backend differs from the contract reference only by fp32 against float64 sums, and the roundings those flip;
 * it differs from the exact reference by the contract's roundings, which on a single head over a few tokens reach
 * 4% of the row's rms (a score's one-ulp rounding moves the softmax: measured over 30,000 random sequences, see
 * the tolerances in run_case).
 *
 * Checked: every element of y against both (run_case has the tolerances and why) and relative Frobenius errors;
 * the appended cache row; every other cache element (NaN-poisoned unused rows and stride gaps) bit-identical;
 * y's stride gaps untouched; bad lengths (NaN row, no append, counter); bitwise determinism; argument validation
 * (status, message, nothing written); one run at DeepSeek's sizes.
 */
#include "test_util.h"

#define ATOL 8e-3
#define RTOL 2e-2

typedef struct weights {
    uint16_t *q_down, *kv_down, *q_up, *kv_up, *o;
} weights;

static void fill_uniform_bf16(uint16_t *p, size_t n, double scale) { /* variance scale^2, cheap */
    for (size_t i = 0; i < n; i++) p[i] = f32_to_bf16((float)((2.0 * test_uniform() - 1.0) * 1.7320508 * scale));
}

static weights make_weights(const latte_mla_config *c, int cheap) {
    const int64_t dim = c->dim, dq = c->q_lora_rank, R = c->kv_lora_rank, P = c->rope_dim, H = c->n_heads;
    const size_t n[5] = {(size_t)(dq * dim), (size_t)((R + P) * dim), (size_t)(H * (c->nope_dim + P) * dq),
                         (size_t)(H * (c->nope_dim + c->v_dim) * R), (size_t)(dim * H * c->v_dim)};
    const double fan[5] = {(double)dim, (double)dim, (double)dq, (double)R, (double)(H * c->v_dim)};
    uint16_t **dst[5];
    weights w;
    dst[0] = &w.q_down, dst[1] = &w.kv_down, dst[2] = &w.q_up, dst[3] = &w.kv_up, dst[4] = &w.o;
    for (int i = 0; i < 5; i++) {
        *dst[i] = (uint16_t *)malloc(n[i] * 2);
        (cheap ? fill_uniform_bf16 : fill_bf16)(*dst[i], n[i], 1.0 / sqrt(fan[i]));
    }
    return w;
}
static void free_weights(weights *w) {
    free(w->q_down), free(w->kv_down), free(w->q_up), free(w->kv_up), free(w->o);
}
static latte_mla_weights api_weights(const weights *w) {
    latte_mla_weights a = {w->q_down, w->kv_down, w->q_up, w->kv_up, w->o};
    return a;
}

static double bf(uint16_t h) { return (double)bf16_to_f32(h); }

/* x·cos + rotate_half(x)·sin in double, tables are bf16 rows */
static void rope_d(const double *x, double *out, const uint16_t *cs, const uint16_t *sn, int64_t P) {
    const int64_t half = P / 2;
    for (int64_t i = 0; i < P; i++) out[i] = x[i] * bf(cs[i]) + (i < half ? -x[i + half] : x[i - half]) * bf(sn[i]);
}

/* The keys of tokens 0..len of one sequence ([len+1][R+P]): the cache's rows below len, new_row at len; with
 * `rotate`, each k_pe rotated by `rope` at its own position (tmp: P scratch) */
typedef void (*rope_fn)(const double *x, double *out, const uint16_t *cs, const uint16_t *sn, int64_t P);
static void gather_keys(double *keys, const uint16_t *seq, int64_t crs, int64_t len, const double *new_row, int64_t R,
                        int64_t P, int rotate, rope_fn rope, const uint16_t *cos_tab, const uint16_t *sin_tab,
                        double *tmp) {
    for (int64_t t = 0; t <= len; t++) {
        double *kt = keys + t * (R + P);
        if (t < len)
            for (int64_t r = 0; r < R + P; r++) kt[r] = bf(seq[t * crs + r]);
        else
            memcpy(kt, new_row, (R + P) * 8);
        if (rotate) {
            rope(kt + R, tmp, cos_tab + t * P, sin_tab + t * P, P);
            memcpy(kt + R, tmp, P * 8);
        }
    }
}

/* One sequence, un-absorbed, float64. seq: the sequence's cache rows (row stride crs), len rows valid.
 * Writes y_ref [dim] and the expected appended row [R+P] (bf16 values: the stored format), then the
 * unrotated k_pe [P]. */
static void reference(const latte_mla_config *c, const weights *w, const uint16_t *x, const uint16_t *seq, int64_t crs,
                      int64_t len, const uint16_t *cos_tab, const uint16_t *sin_tab, double *y, double *newrow) {
    const int64_t dim = c->dim, dq = c->q_lora_rank, R = c->kv_lora_rank, P = c->rope_dim, nope = c->nope_dim,
                  dv = c->v_dim, H = c->n_heads, T = len + 1, qw = nope + P;
    const int stored = c->key_convention == LATTE_MLA_KEYS_STORED_ROTATED;
    const double scale = c->softmax_scale > 0 ? c->softmax_scale : 1.0 / sqrt((double)(nope + P));
    double *ql = calloc(dq, 8), *kv = calloc(R + P, 8), *q = calloc(H * qw, 8), *keys = calloc(T * (R + P), 8),
           *kn = calloc(T * nope, 8), *vv = calloc(T * dv, 8), *s = calloc(T, 8), *o = calloc(H * dv, 8),
           *qpe = calloc(P, 8), *tmp = calloc(P, 8);
    for (int64_t j = 0; j < dq; j++)
        for (int64_t k = 0; k < dim; k++) ql[j] += bf(x[k]) * bf(w->q_down[j * dim + k]);
    for (int64_t j = 0; j < R + P; j++)
        for (int64_t k = 0; k < dim; k++) kv[j] += bf(x[k]) * bf(w->kv_down[j * dim + k]);
    /* the new row as the cache stores it: bf16 (the one rounding the format imposes) */
    for (int64_t j = 0; j < R + P; j++) newrow[j] = round_bf16((float)kv[j]);
    memcpy(newrow + R + P, newrow + R, P * 8); /* the unrotated k_pe, for the caller's tolerance */
    if (stored) {
        rope_d(newrow + R, tmp, cos_tab + len * P, sin_tab + len * P, P);
        for (int64_t j = 0; j < P; j++) newrow[R + j] = round_bf16((float)tmp[j]);
    }
    for (int64_t j = 0; j < H * qw; j++)
        for (int64_t k = 0; k < dq; k++) q[j] += ql[k] * bf(w->q_up[j * dq + k]);
    gather_keys(keys, seq, crs, len, newrow, R, P, !stored, rope_d, cos_tab, sin_tab, tmp);
    for (int64_t h = 0; h < H; h++) {
        const double *qn = q + h * qw;
        rope_d(q + h * qw + nope, qpe, cos_tab + len * P, sin_tab + len * P, P);
        const uint16_t *wk = w->kv_up + h * (nope + dv) * R, *wv = wk + nope * R;
        double mx = -INFINITY, sum = 0;
        for (int64_t t = 0; t < T; t++) {
            const double *ct = keys + t * (R + P);
            for (int64_t j = 0; j < nope; j++) {
                double a = 0;
                for (int64_t r = 0; r < R; r++) a += bf(wk[j * R + r]) * ct[r];
                kn[t * nope + j] = a;
            }
            for (int64_t j = 0; j < dv; j++) {
                double a = 0;
                for (int64_t r = 0; r < R; r++) a += bf(wv[j * R + r]) * ct[r];
                vv[t * dv + j] = a;
            }
            double d = 0;
            for (int64_t j = 0; j < nope; j++) d += qn[j] * kn[t * nope + j];
            for (int64_t j = 0; j < P; j++) d += qpe[j] * ct[R + j];
            s[t] = d * scale;
            mx = s[t] > mx ? s[t] : mx;
        }
        for (int64_t t = 0; t < T; t++) sum += (s[t] = exp(s[t] - mx));
        for (int64_t t = 0; t < T; t++)
            for (int64_t j = 0; j < dv; j++) o[h * dv + j] += s[t] / sum * vv[t * dv + j];
    }
    for (int64_t n = 0; n < dim; n++) {
        double a = 0;
        for (int64_t k = 0; k < H * dv; k++) a += o[k] * bf(w->o[n * H * dv + k]);
        y[n] = a;
    }
    free(ql), free(kv), free(q), free(keys), free(kn), free(vv), free(s), free(o), free(qpe), free(tmp);
}

/* ---- the contract: src/cpu/mla_cpu.c's steps 1-7, rounded where it rounds, float64 in between ---- */
static double rbf(double v) { return (double)round_bf16((float)v); }

/* rope_bf16(x, t) = bf16(bf16(x·cos[t]) + bf16(rotate_half(x)·sin[t])) */
static void rope_bf16_d(const double *x, double *out, const uint16_t *cs, const uint16_t *sn, int64_t P) {
    const int64_t half = P / 2;
    for (int64_t i = 0; i < P; i++)
        out[i] = rbf(rbf(x[i] * bf(cs[i])) + rbf((i < half ? -x[i + half] : x[i - half]) * bf(sn[i])));
}

/* One sequence, absorbed, as the contract rounds it; arguments as `reference`'s. Writes y (unrounded: the last
 * rounding is compared through the tolerance) */
static void reference_contract(const latte_mla_config *c, const weights *w, const uint16_t *x, const uint16_t *seq,
                               int64_t crs, int64_t len, const uint16_t *cos_tab, const uint16_t *sin_tab, double *y) {
    const int64_t dim = c->dim, dq = c->q_lora_rank, R = c->kv_lora_rank, P = c->rope_dim, nope = c->nope_dim,
                  dv = c->v_dim, H = c->n_heads, T = len + 1, qw = nope + P;
    const int stored = c->key_convention == LATTE_MLA_KEYS_STORED_ROTATED;
    /* the plan's fp32 scale (src/api/mla.c), and the scores' product rounded to fp32 before bf16, as in fp32 */
    const float scale = c->softmax_scale > 0 ? c->softmax_scale : (float)(1.0 / sqrt((double)(nope + P)));
    double *ql = calloc(dq, 8), *kv = calloc(R + P, 8), *q = calloc(H * qw, 8), *keys = calloc(T * (R + P), 8),
           *s = calloc(T, 8), *o = calloc(H * dv, 8), *qpe = calloc(P, 8), *pe = calloc(P, 8), *qlat = calloc(R, 8),
           *olat = calloc(R, 8);
    /* 1. q_lora, kv_lora */
    for (int64_t j = 0; j < dq + R + P; j++) {
        const uint16_t *wr = j < dq ? w->q_down + j * dim : w->kv_down + (j - dq) * dim;
        double a = 0;
        for (int64_t k = 0; k < dim; k++) a += bf(x[k]) * bf(wr[k]);
        if (j < dq) ql[j] = rbf(a);
        else kv[j - dq] = rbf(a);
    }
    /* 2. the appended row as stored; 5. the keys (rotated at read, or as stored) */
    if (stored) {
        rope_bf16_d(kv + R, pe, cos_tab + len * P, sin_tab + len * P, P);
        memcpy(kv + R, pe, P * 8);
    }
    gather_keys(keys, seq, crs, len, kv, R, P, !stored, rope_bf16_d, cos_tab, sin_tab, pe);
    /* 3. q */
    for (int64_t j = 0; j < H * qw; j++) {
        double a = 0;
        for (int64_t k = 0; k < dq; k++) a += ql[k] * bf(w->q_up[j * dq + k]);
        q[j] = rbf(a);
    }
    for (int64_t h = 0; h < H; h++) {
        const uint16_t *wk = w->kv_up + h * (nope + dv) * R, *wv = wk + nope * R;
        rope_bf16_d(q + h * qw + nope, qpe, cos_tab + len * P, sin_tab + len * P, P);
        /* 4. q_lat = bf16(W_UKᵀ·q_nope) */
        for (int64_t r = 0; r < R; r++) {
            double a = 0;
            for (int64_t j = 0; j < nope; j++) a += bf(wk[j * R + r]) * q[h * qw + j];
            qlat[r] = rbf(a);
        }
        /* 6. s = bf16(bf16(q_lat·c + q_pe·k_pe)·scale), p = bf16(softmax(s)), o_lat = bf16(Σ p·c) */
        double mx = -INFINITY, sum = 0;
        for (int64_t t = 0; t < T; t++) {
            const double *kt = keys + t * (R + P);
            double d = 0;
            for (int64_t r = 0; r < R; r++) d += qlat[r] * kt[r];
            for (int64_t j = 0; j < P; j++) d += qpe[j] * kt[R + j];
            s[t] = rbf((double)(float)(rbf(d) * (double)scale));
            mx = s[t] > mx ? s[t] : mx;
        }
        for (int64_t t = 0; t < T; t++) sum += (s[t] = exp(s[t] - mx));
        for (int64_t r = 0; r < R; r++) olat[r] = 0;
        for (int64_t t = 0; t < T; t++) {
            const double p = rbf(s[t] / sum);
            for (int64_t r = 0; r < R; r++) olat[r] += p * keys[t * (R + P) + r];
        }
        /* 7. o = bf16(W_UV·o_lat) */
        for (int64_t r = 0; r < R; r++) olat[r] = rbf(olat[r]);
        for (int64_t j = 0; j < dv; j++) {
            double a = 0;
            for (int64_t r = 0; r < R; r++) a += bf(wv[j * R + r]) * olat[r];
            o[h * dv + j] = rbf(a);
        }
    }
    /* 7. y = o·Woᵀ (its bf16 rounding left to the comparison) */
    for (int64_t n = 0; n < dim; n++) {
        double a = 0;
        for (int64_t k = 0; k < H * dv; k++) a += o[k] * bf(w->o[n * H * dv + k]);
        y[n] = a;
    }
    free(ql), free(kv), free(q), free(keys), free(s), free(o), free(qpe), free(pe), free(qlat), free(olat);
}

/* ---- one test case: buffers, a run, every check ------------------------------------------------ */
typedef struct mla_case {
    latte_mla_config cfg;
    int64_t batch, max_cache_len, capacity, row_stride, batch_gap, x_stride, y_stride;
    double x_mag, cache_mag;
    latte_rope_kind rope_kind;
    int32_t *lens;   /* [batch], chosen by the caller */
    int cheap;       /* uniform weights (big case) */
} mla_case;

typedef struct bufs {
    uint16_t *x, *y, *cache, *cache0, *cos, *sin;
    size_t x_n, y_n, cache_n;
    int64_t batch_stride, rope_max_pos;
    void *ws;
    size_t ws_bytes;
} bufs;

static bufs make_bufs(const mla_case *k, latte_mla_plan plan) {
    const latte_mla_config *c = &k->cfg;
    const int64_t RP = c->kv_lora_rank + c->rope_dim;
    bufs b;
    b.x_n = (size_t)((k->batch - 1) * k->x_stride + c->dim);
    b.y_n = (size_t)((k->batch - 1) * k->y_stride + c->dim);
    b.batch_stride = k->capacity * k->row_stride + k->batch_gap;
    b.cache_n = (size_t)(k->batch * b.batch_stride);
    b.x = malloc(b.x_n * 2), b.y = malloc(b.y_n * 2), b.cache = malloc(b.cache_n * 2), b.cache0 = malloc(b.cache_n * 2);
    for (size_t i = 0; i < b.x_n; i++) b.x[i] = BF16_NAN; /* stride gaps must not be read */
    for (int64_t r = 0; r < k->batch; r++) fill_bf16(b.x + r * k->x_stride, c->dim, k->x_mag);
    for (size_t i = 0; i < b.y_n; i++) b.y[i] = 0x1234; /* gaps must stay, rows must be written */
    for (size_t i = 0; i < b.cache_n; i++) b.cache[i] = BF16_NAN;
    for (int64_t s = 0; s < k->batch; s++)
        for (int64_t t = 0; t < k->lens[s] && t < k->capacity && k->lens[s] >= 0; t++)
            fill_bf16(b.cache + s * b.batch_stride + t * k->row_stride, RP, k->cache_mag);
    memcpy(b.cache0, b.cache, b.cache_n * 2);
    b.rope_max_pos = k->max_cache_len + 1 + test_randint(0, 5);
    b.cos = malloc(b.rope_max_pos * c->rope_dim * 2), b.sin = malloc(b.rope_max_pos * c->rope_dim * 2);
    CHECK_OK(latte_rope_tables(k->rope_kind, b.rope_max_pos, c->rope_dim, 10000.0f, b.cos, b.sin, LATTE_BACKEND_CPU, NULL));
    CHECK_OK(latte_mla_workspace_size(plan, k->batch, k->max_cache_len, &b.ws_bytes));
    b.ws = aligned_alloc(256, (b.ws_bytes + 255) / 256 * 256);
    memset(b.ws, 0xff, b.ws_bytes); /* NaN garbage: the run must not rely on a zeroed workspace */
    return b;
}
static void free_bufs(bufs *b) {
    free(b->x), free(b->y), free(b->cache), free(b->cache0), free(b->cos), free(b->sin), free(b->ws);
}
static latte_mla_run_args make_args(const mla_case *k, const bufs *b) {
    latte_mla_run_args a;
    memset(&a, 0, sizeof a);
    a.batch = k->batch;
    a.x = b->x, a.x_row_stride = k->x_stride;
    a.kv_cache.data = b->cache, a.kv_cache.batch_stride = b->batch_stride, a.kv_cache.row_stride = k->row_stride;
    a.kv_cache.capacity = k->capacity;
    a.cache_lens = k->lens, a.max_cache_len = k->max_cache_len;
    a.rope_cos = b->cos, a.rope_sin = b->sin, a.rope_max_pos = b->rope_max_pos;
    a.y = b->y, a.y_row_stride = k->y_stride;
    return a;
}

static int len_ok(const mla_case *k, int64_t s) { return k->lens[s] >= 0 && k->lens[s] <= k->max_cache_len; }

/* runs the case and checks y, the cache and determinism against the float64 references; returns y's relative
 * Frobenius error against the contract reference (-1: no sequence checked) */
static double run_case(const char *name, const mla_case *k, const weights *w, int check_ref) {
    const latte_mla_config *c = &k->cfg;
    const int64_t dim = c->dim, R = c->kv_lora_rank, RP = R + c->rope_dim;
    latte_mla_plan plan = NULL;
    latte_mla_weights aw = api_weights(w);
    CHECK_OK(latte_mla_plan_create(&plan, c, &aw, LATTE_BACKEND_CPU, NULL));
    if (!plan) return -1;
    bufs b = make_bufs(k, plan);
    latte_mla_run_args a = make_args(k, &b);
    int64_t bad0 = -1;
    CHECK_OK(latte_mla_plan_bad_lengths(plan, &bad0, 1, NULL));
    CHECK_OK(latte_mla_run(plan, &a, b.ws, b.ws_bytes, NULL));

    /* y: NaN rows exactly for bad lengths, untouched gaps, every element against the reference */
    /* Tolerances: the reference check's form |y - y_ref| <= atol + 2e-2|y_ref|, with atol = 8e-3 scaled to these
     * layers. y scales with the values (the cache for old tokens, x for the new one), and at the reference's
     * sizes (T > 500 tokens averaged) rms(y) is about 0.05, so 8e-3 is ~16% of it; these small layers with few
     * tokens have rms(y) near 1. So atol = max(8e-3 * max(1, input magnitude), f * rms(row)), with f from what
     * was measured over 29,583 random sequences of these cases (400 seeds, 2026-12-08; the worst excess of
     * |d| - 2e-2|ref| over rms):
     *   against the contract reference 0.0147 (fp32 sums and the roundings they flip): f = 3e-2;
     *   against the exact reference 0.0416 (the contract's roundings themselves: one head over a few tokens, where a
     *   score's rounding moves the softmax; it failed a 4e-2 bound at 1 seed in ~300): f = 8e-2. */
    const double mag = k->x_mag > k->cache_mag ? k->x_mag : k->cache_mag, atol0 = ATOL * (mag > 1 ? mag : 1);
    double err2 = 0, ref2 = 0, cerr2 = 0, cref2 = 0;
    size_t misses = 0, c_misses = 0, cache_miss = 0, nan_rows = 0, gap_miss = 0, n_bad = 0;
    double *yref = malloc(dim * 8), *ycon = malloc(dim * 8), *newrow = malloc((RP + c->rope_dim) * 8);
    float *yg = malloc(dim * 4);
    for (int64_t s = 0; s < k->batch; s++) {
        const uint16_t *yr = b.y + s * k->y_stride;
        if (s + 1 < k->batch)
            for (int64_t j = dim; j < k->y_stride; j++) gap_miss += yr[j] != 0x1234;
        for (int64_t j = 0; j < dim; j++) yg[j] = bf16_to_f32(yr[j]);
        if (!len_ok(k, s)) {
            n_bad++;
            for (int64_t j = 0; j < dim; j++) nan_rows += !isnan(yg[j]);
            continue;
        }
        for (int64_t j = 0; j < dim; j++) nan_rows += isnan(yg[j]) != 0;
        if (!check_ref) continue;
        const int64_t len = k->lens[s];
        reference(c, w, b.x + s * k->x_stride, b.cache0 + s * b.batch_stride, k->row_stride, len, b.cos, b.sin, yref,
                  newrow);
        reference_contract(c, w, b.x + s * k->x_stride, b.cache0 + s * b.batch_stride, k->row_stride, len, b.cos, b.sin,
                           ycon);
        char what[64];
        double ms = 0, msc = 0;
        for (int64_t j = 0; j < dim; j++) ms += yref[j] * yref[j], msc += ycon[j] * ycon[j];
        const double atol = fmax(atol0, 8e-2 * sqrt(ms / dim)), atol_c = fmax(atol0, 3e-2 * sqrt(msc / dim));
        snprintf(what, sizeof what, "y[%lld] (contract)", (long long)s);
        c_misses += compare_close(what, yg, ycon, dim, atol_c, RTOL);
        snprintf(what, sizeof what, "y[%lld] (exact)", (long long)s);
        misses += compare_close(what, yg, yref, dim, atol, RTOL);
        for (int64_t j = 0; j < dim; j++) err2 += (yg[j] - yref[j]) * (yg[j] - yref[j]), ref2 += yref[j] * yref[j];
        for (int64_t j = 0; j < dim; j++) cerr2 += (yg[j] - ycon[j]) * (yg[j] - ycon[j]), cref2 += ycon[j] * ycon[j];
        /* the appended row: bf16 of the exact value, up to the rounding of fp32 sums and of rope_bf16 */
        const uint16_t *row = b.cache + s * b.batch_stride + len * k->row_stride;
        for (int64_t j = 0; j < RP; j++) {
            const double got = bf(row[j]), ref = newrow[j];
            /* one bf16 ulp (fp32 vs float64 sums), or rope_bf16's three roundings vs one */
            const int64_t half = c->rope_dim / 2, i = j - R, partner = i < half ? i + half : i - half;
            const double terms = j < R ? 0 : fabs(newrow[RP + i]) + fabs(newrow[RP + partner]);
            const double tol = (j < R || c->key_convention == LATTE_MLA_KEYS_ROTATED_AT_READ)
                                   ? fabs(ref) / 128 + 1e-6 * k->x_mag
                                   : fabs(ref) / 128 + terms / 128 + 1e-6 * k->x_mag;
            if (!(fabs(got - ref) <= tol)) {
                if (cache_miss < 5)
                    fprintf(stderr, "  %s: cache[%lld][%lld][%lld] = %g, expected %g\n", name, (long long)s,
                            (long long)len, (long long)j, got, ref);
                cache_miss++;
            }
        }
    }
    /* every cache element other than the appended rows: bit-identical (NaN poison included) */
    size_t other = 0;
    for (int64_t s = 0; s < k->batch; s++) {
        for (int64_t i = 0; i < b.batch_stride && (s + 1) * b.batch_stride <= (int64_t)b.cache_n; i++) {
            const int64_t t = i / k->row_stride, j = i % k->row_stride;
            if (len_ok(k, s) && t == k->lens[s] && j < RP) continue;
            other += b.cache[s * b.batch_stride + i] != b.cache0[s * b.batch_stride + i];
        }
    }
    CHECK(nan_rows == 0, "%s: %zu y elements with the wrong NaN state", name, nan_rows);
    CHECK(gap_miss == 0, "%s: %zu y stride-gap elements written", name, gap_miss);
    CHECK(c_misses == 0, "%s: %zu y elements outside max(%g, 3e-2 rms(row)) + %g|y_c| of the contract reference", name,
          c_misses, atol0, RTOL);
    CHECK(misses == 0, "%s: %zu y elements outside max(%g, 8e-2 rms(row)) + %g|y_ref| of the exact reference", name,
          misses, atol0, RTOL);
    /* Frobenius, whole case (15,000 random cases, 600 seeds, 2026-12-08): against the exact reference median 3.5e-3,
     * worst 2.0e-2, so < 4e-2; against the contract median 1.7e-3 (mostly y's own bf16 rounding), worst 5.6e-3 (a
     * one-sequence case with a flipped score), so < 1.2e-2. The contract's rounding points are pinned by the median
     * over the random cases (random_cases). */
    const double rel = ref2 > 0 ? sqrt(err2 / ref2) : 0, crel = cref2 > 0 ? sqrt(cerr2 / cref2) : 0;
    CHECK(rel < 4e-2, "%s: relative Frobenius error %.3e against the exact reference", name, rel);
    CHECK(crel < 1.2e-2, "%s: relative Frobenius error %.3e against the contract reference", name, crel);
    CHECK(cache_miss == 0, "%s: %zu appended cache elements off", name, cache_miss);
    CHECK(other == 0, "%s: %zu other cache elements changed", name, other);
    int64_t bad = -1;
    CHECK_OK(latte_mla_plan_bad_lengths(plan, &bad, 0, NULL));
    CHECK(bad == (int64_t)n_bad, "%s: bad-length counter %lld, expected %zu", name, (long long)bad, n_bad);

    /* determinism: same inputs, same bits */
    uint16_t *y1 = malloc(b.y_n * 2), *c1 = malloc(b.cache_n * 2);
    memcpy(y1, b.y, b.y_n * 2), memcpy(c1, b.cache, b.cache_n * 2);
    memcpy(b.cache, b.cache0, b.cache_n * 2);
    memset(b.ws, 0x7f, b.ws_bytes);
    CHECK_OK(latte_mla_run(plan, &a, b.ws, b.ws_bytes, NULL));
    CHECK(!memcmp(y1, b.y, b.y_n * 2) && !memcmp(c1, b.cache, b.cache_n * 2), "%s: two runs differ", name);
    CHECK_OK(latte_mla_plan_bad_lengths(plan, &bad, 1, NULL));
    CHECK(bad == 2 * (int64_t)n_bad, "%s: bad-length counter %lld after two runs, expected %zu", name, (long long)bad,
          2 * n_bad);
    CHECK_OK(latte_mla_plan_bad_lengths(plan, &bad, 0, NULL));
    CHECK(bad == 0, "%s: bad-length counter %lld after reset", name, (long long)bad);
    if (check_ref) printf("%s: rel err %.2e (contract %.2e)\n", name, rel, crel);
    free(y1), free(c1), free(yref), free(ycon), free(newrow), free(yg);
    free_bufs(&b);
    CHECK_OK(latte_mla_plan_destroy(plan));
    return check_ref && cref2 > 0 ? crel : -1;
}

static latte_mla_config small_config(void) {
    latte_mla_config c;
    memset(&c, 0, sizeof c);
    c.dim = test_randint(64, 256);
    c.q_lora_rank = test_randint(32, 96);
    c.kv_lora_rank = test_randint(0, 1) ? 32 : 64;
    c.rope_dim = test_randint(0, 1) ? 8 : 16;
    c.nope_dim = 16;
    c.v_dim = test_randint(0, 1) ? 16 : 24;
    c.n_heads = test_randint(1, 8);
    c.softmax_scale = test_randint(0, 1) ? 0.0f : (float)(0.05 + 0.2 * test_uniform());
    c.key_convention = test_randint(0, 1) ? LATTE_MLA_KEYS_ROTATED_AT_READ : LATTE_MLA_KEYS_STORED_ROTATED;
    return c;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void random_cases(int n) {
    double *crel = malloc((size_t)n * sizeof(double));
    int n_crel = 0;
    /* {x, cache} magnitudes. Scores grow with x*cache (old tokens) and x*x (the new token); above ~3 the
     * softmax turns bf16's 0.2% roundings of q into percent-level errors of p for any bf16 pipeline, so
     * the magnitudes keep the scores in the range real layers see. */
    const double mags[][2] = {{1, 1}, {0.1, 1}, {1, 0.1}, {0.1, 10}, {0.5, 2}, {1, 1}};
    for (int i = 0; i < n; i++) {
        mla_case k;
        memset(&k, 0, sizeof k);
        k.cfg = small_config();
        if (i % 4 == 0) k.cfg.key_convention = (latte_mla_key_convention)(i / 4 % 2);
        k.batch = test_randint(1, 5);
        k.capacity = test_randint(1, 41);
        k.max_cache_len = k.capacity - 1 - (test_randint(0, 2) == 0 ? test_randint(0, k.capacity - 1) : 0);
        k.row_stride = k.cfg.kv_lora_rank + k.cfg.rope_dim + (test_randint(0, 1) ? test_randint(1, 9) : 0);
        k.batch_gap = test_randint(0, 1) ? test_randint(0, 20) : 0;
        k.x_stride = k.cfg.dim + (test_randint(0, 1) ? test_randint(1, 5) : 0);
        k.y_stride = k.cfg.dim + (test_randint(0, 1) ? test_randint(1, 5) : 0);
        k.x_mag = mags[i % 6][0], k.cache_mag = mags[i % 6][1];
        k.rope_kind = (latte_rope_kind)test_randint(0, 1);
        int32_t lens[5];
        for (int64_t s = 0; s < k.batch; s++) lens[s] = (int32_t)test_randint(0, k.max_cache_len);
        lens[test_randint(0, k.batch - 1)] = 0;
        lens[test_randint(0, k.batch - 1)] = (int32_t)k.max_cache_len;
        k.lens = lens;
        weights w = make_weights(&k.cfg, 0);
        char name[200];
        snprintf(name, sizeof name,
                 "case %d (dim %lld dq %lld R %lld P %lld v %lld H %lld scale %g %s, batch %lld cap %lld max %lld, "
                 "x*%g cache*%g, %s rope)",
                 i, (long long)k.cfg.dim, (long long)k.cfg.q_lora_rank, (long long)k.cfg.kv_lora_rank,
                 (long long)k.cfg.rope_dim, (long long)k.cfg.v_dim, (long long)k.cfg.n_heads, (double)k.cfg.softmax_scale,
                 k.cfg.key_convention ? "stored-rotated" : "rotated-at-read", (long long)k.batch, (long long)k.capacity,
                 (long long)k.max_cache_len, k.x_mag, k.cache_mag, k.rope_kind ? "fp32" : "bf16-ref");
        crel[n_crel] = run_case(name, &k, &w, 1);
        n_crel += crel[n_crel] >= 0;
        free_weights(&w);
    }
    /* The contract's rounding points, pinned: the median over the cases of y's Frobenius error against the contract
     * reference. Measured 2026-12-08 over 300 seeds: 1.59e-3 to 1.71e-3 for the backend; 2.25e-3 to 3.7e-3 when the
     * contract reference leaves out any one of its roundings (lora, q, rope, q_lat, the score's second, p, o_lat, o),
     * which stands for a backend that rounds elsewhere than it promises. */
    qsort(crel, (size_t)n_crel, sizeof crel[0], cmp_double);
    const double median = n_crel ? crel[n_crel / 2] : 0;
    printf("random cases: median relative error against the contract reference %.3e over %d cases\n", median, n_crel);
    CHECK(n_crel >= n / 2 && median < 2.0e-3,
          "random cases: median relative error %.3e against the contract reference over %d cases (>= 2e-3: the backend "
          "does not round where its contract says)", median, n_crel);
    free(crel);
}

/* bad lengths: NaN row, no append, counted; the valid rows equal those of a run with valid lengths */
static void bad_length_case(void) {
    mla_case k;
    memset(&k, 0, sizeof k);
    k.cfg = small_config();
    k.batch = 5, k.capacity = 30, k.max_cache_len = 20, k.row_stride = k.cfg.kv_lora_rank + k.cfg.rope_dim;
    k.x_stride = k.y_stride = k.cfg.dim, k.x_mag = k.cache_mag = 1, k.rope_kind = LATTE_ROPE_BF16_REFERENCE;
    int32_t lens[5] = {7, -1, 21, 20, INT32_MAX};
    k.lens = lens;
    weights w = make_weights(&k.cfg, 0);
    run_case("bad lengths", &k, &w, 1); /* NaN rows, untouched cache, counter */

    latte_mla_plan plan = NULL;
    latte_mla_weights aw = api_weights(&w);
    CHECK_OK(latte_mla_plan_create(&plan, &k.cfg, &aw, LATTE_BACKEND_CPU, NULL));
    bufs b = make_bufs(&k, plan);
    latte_mla_run_args a = make_args(&k, &b);
    CHECK_OK(latte_mla_run(plan, &a, b.ws, b.ws_bytes, NULL));
    uint16_t *y_bad = malloc(b.y_n * 2);
    memcpy(y_bad, b.y, b.y_n * 2);
    int32_t good[5] = {7, 3, 0, 20, 11};
    a.cache_lens = good;
    memcpy(b.cache, b.cache0, b.cache_n * 2);
    CHECK_OK(latte_mla_run(plan, &a, b.ws, b.ws_bytes, NULL));
    CHECK(!memcmp(y_bad, b.y, k.cfg.dim * 2) && !memcmp(y_bad + 3 * k.cfg.dim, b.y + 3 * k.cfg.dim, k.cfg.dim * 2),
          "bad lengths: the valid rows differ from a run with every length valid");
    int64_t bad = -1;
    CHECK_OK(latte_mla_plan_bad_lengths(plan, &bad, 1, NULL));
    CHECK(bad == 3, "bad lengths: counter %lld, expected 3", (long long)bad);
    free(y_bad);
    free_bufs(&b);
    CHECK_OK(latte_mla_plan_destroy(plan));
    free_weights(&w);
}

/* ---- validation ------------------------------------------------------------------------------- */
static void expect_fail(latte_status st, latte_status want, const char *what, const bufs *b, const uint16_t *y0) {
    CHECK(st == want, "%s: status %s, expected %s", what, latte_status_string(st), latte_status_string(want));
    CHECK(latte_last_error()[0] != 0, "%s: no message", what);
    if (b) {
        CHECK(!memcmp(b->cache, b->cache0, b->cache_n * 2), "%s: cache written", what);
        CHECK(!memcmp(b->y, y0, b->y_n * 2), "%s: y written", what);
    }
}

static void validation(void) {
    mla_case k;
    memset(&k, 0, sizeof k);
    k.cfg = small_config();
    k.batch = 3, k.capacity = 12, k.max_cache_len = 10, k.row_stride = k.cfg.kv_lora_rank + k.cfg.rope_dim + 4;
    k.x_stride = k.y_stride = k.cfg.dim, k.x_mag = k.cache_mag = 1;
    int32_t lens[3] = {2, 10, 5};
    k.lens = lens;
    weights w = make_weights(&k.cfg, 0);
    latte_mla_weights aw = api_weights(&w);
    latte_mla_plan plan = NULL;
    CHECK_OK(latte_mla_plan_create(&plan, &k.cfg, &aw, LATTE_BACKEND_CPU, NULL));
    bufs b = make_bufs(&k, plan);
    uint16_t *y0 = malloc(b.y_n * 2);
    memcpy(y0, b.y, b.y_n * 2);
    const latte_mla_run_args good = make_args(&k, &b);
    latte_mla_run_args a;
    const latte_status INV = LATTE_STATUS_INVALID_ARGUMENT;
#define RUN_BAD(what, edit, want)                                                  \
    do {                                                                           \
        a = good;                                                                  \
        edit;                                                                      \
        expect_fail(latte_mla_run(plan, &a, b.ws, b.ws_bytes, NULL), want, what, &b, y0); \
    } while (0)
    RUN_BAD("x null", a.x = NULL, INV);
    RUN_BAD("y null", a.y = NULL, INV);
    RUN_BAD("cache null", a.kv_cache.data = NULL, INV);
    RUN_BAD("cache_lens null", a.cache_lens = NULL, INV);
    RUN_BAD("rope_cos null", a.rope_cos = NULL, INV);
    RUN_BAD("rope_sin null", a.rope_sin = NULL, INV);
    RUN_BAD("batch 0", a.batch = 0, INV);
    RUN_BAD("x_row_stride < dim", a.x_row_stride = k.cfg.dim - 1, INV);
    RUN_BAD("y_row_stride < dim", a.y_row_stride = k.cfg.dim - 1, INV);
    RUN_BAD("row stride < R+P", a.kv_cache.row_stride = k.cfg.kv_lora_rank + k.cfg.rope_dim - 1, INV);
    RUN_BAD("capacity 0", a.kv_cache.capacity = 0, INV);
    RUN_BAD("batch stride too small", a.kv_cache.batch_stride -= 1, INV);
    RUN_BAD("max_cache_len >= capacity", a.max_cache_len = k.capacity, INV);
    RUN_BAD("max_cache_len < 0", a.max_cache_len = -1, INV);
    RUN_BAD("rope_max_pos <= max_cache_len", a.rope_max_pos = k.max_cache_len, INV);
    RUN_BAD("y overlaps x", a.y = (void *)((uint16_t *)b.x + 1), INV);
    RUN_BAD("y overlaps the cache", a.y = b.cache + b.cache_n / 2, INV);
    expect_fail(latte_mla_run(plan, &good, b.ws, b.ws_bytes - 1, NULL), LATTE_STATUS_INSUFFICIENT_WORKSPACE,
                "workspace too small", &b, y0);
    expect_fail(latte_mla_run(plan, &good, NULL, b.ws_bytes, NULL), INV, "workspace null", &b, y0);
    expect_fail(latte_mla_run(plan, &good, (char *)b.ws + 16, b.ws_bytes - 256, NULL), LATTE_STATUS_INSUFFICIENT_WORKSPACE,
                "workspace small and misaligned", &b, y0);
    expect_fail(latte_mla_run(plan, NULL, b.ws, b.ws_bytes, NULL), INV, "args null", &b, y0);
    expect_fail(latte_mla_run(NULL, &good, b.ws, b.ws_bytes, NULL), INV, "plan null", &b, y0);
    {   /* a larger max_cache_len needs more workspace */
        size_t more = 0;
        CHECK_OK(latte_mla_workspace_size(plan, k.batch, k.max_cache_len + 100, &more));
        CHECK(more > b.ws_bytes, "workspace does not grow with max_cache_len (%zu vs %zu)", more, b.ws_bytes);
    }
    size_t wsb;
    int64_t cnt;
    expect_fail(latte_mla_workspace_size(plan, 0, 4, &wsb), INV, "workspace_size batch 0", NULL, NULL);
    expect_fail(latte_mla_workspace_size(plan, 1, -1, &wsb), INV, "workspace_size max_cache_len < 0", NULL, NULL);
    expect_fail(latte_mla_workspace_size(plan, 1, 4, NULL), INV, "workspace_size null out", NULL, NULL);
    expect_fail(latte_mla_plan_bad_lengths(plan, NULL, 0, NULL), INV, "bad_lengths null count", NULL, NULL);
    expect_fail(latte_mla_plan_bad_lengths(NULL, &cnt, 0, NULL), INV, "bad_lengths null plan", NULL, NULL);
    /* a good run after all that, so the failures above were not an accident of the setup */
    CHECK_OK(latte_mla_run(plan, &good, b.ws, b.ws_bytes, NULL));

    /* plan creation */
    latte_mla_plan p2 = (latte_mla_plan)0x1;
    latte_mla_config c;
#define PLAN_BAD(what, edit, want)                                                                      \
    do {                                                                                                \
        c = k.cfg;                                                                                      \
        latte_mla_weights w2 = aw;                                                                      \
        edit;                                                                                           \
        p2 = (latte_mla_plan)0x1;                                                                       \
        expect_fail(latte_mla_plan_create(&p2, &c, &w2, LATTE_BACKEND_CPU, NULL), want, what, NULL, NULL); \
        CHECK(p2 == (latte_mla_plan)0x1, "%s: plan written", what);                                    \
    } while (0)
    PLAN_BAD("config dim 0", c.dim = 0, INV);
    PLAN_BAD("config heads < 0", c.n_heads = -2, INV);
    PLAN_BAD("config rope_dim odd", c.rope_dim = 7, INV);
    PLAN_BAD("config softmax_scale < 0", c.softmax_scale = -1.0f, INV);
    PLAN_BAD("config softmax_scale NaN", c.softmax_scale = NAN, INV);
    PLAN_BAD("config key convention", c.key_convention = (latte_mla_key_convention)5, INV);
    PLAN_BAD("weights.wq_down null", w2.wq_down = NULL, INV);
    PLAN_BAD("weights.wkv_up null", w2.wkv_up = NULL, INV);
    PLAN_BAD("weights.wo null", w2.wo = NULL, INV);
    expect_fail(latte_mla_plan_create(NULL, &k.cfg, &aw, LATTE_BACKEND_CPU, NULL), INV, "plan out null", NULL, NULL);
    expect_fail(latte_mla_plan_create(&p2, NULL, &aw, LATTE_BACKEND_CPU, NULL), INV, "config null", NULL, NULL);
    expect_fail(latte_mla_plan_create(&p2, &k.cfg, NULL, LATTE_BACKEND_CPU, NULL), INV, "weights null", NULL, NULL);
    expect_fail(latte_mla_plan_create(&p2, &k.cfg, &aw, (latte_backend)3, NULL), INV, "bad backend", NULL, NULL);
    CHECK_OK(latte_mla_plan_destroy(NULL));
    free(y0);
    free_bufs(&b);
    CHECK_OK(latte_mla_plan_destroy(plan));
    free_weights(&w);
}

/* the plan copies the weights: freeing and scribbling the caller's copies changes nothing */
static void weights_copied(void) {
    mla_case k;
    memset(&k, 0, sizeof k);
    k.cfg = small_config();
    k.batch = 2, k.capacity = 9, k.max_cache_len = 8, k.row_stride = k.cfg.kv_lora_rank + k.cfg.rope_dim;
    k.x_stride = k.y_stride = k.cfg.dim, k.x_mag = k.cache_mag = 1;
    int32_t lens[2] = {8, 3};
    k.lens = lens;
    weights w = make_weights(&k.cfg, 0);
    latte_mla_plan plan = NULL;
    latte_mla_weights aw = api_weights(&w);
    CHECK_OK(latte_mla_plan_create(&plan, &k.cfg, &aw, LATTE_BACKEND_CPU, NULL));
    bufs b = make_bufs(&k, plan);
    latte_mla_run_args a = make_args(&k, &b);
    CHECK_OK(latte_mla_run(plan, &a, b.ws, b.ws_bytes, NULL));
    uint16_t *y1 = malloc(b.y_n * 2);
    memcpy(y1, b.y, b.y_n * 2);
    fill_bf16(w.q_down, k.cfg.q_lora_rank * k.cfg.dim, 5.0);
    fill_bf16(w.kv_up, k.cfg.n_heads * (k.cfg.nope_dim + k.cfg.v_dim) * k.cfg.kv_lora_rank, 5.0);
    fill_bf16(w.o, k.cfg.dim * k.cfg.n_heads * k.cfg.v_dim, 5.0);
    memcpy(b.cache, b.cache0, b.cache_n * 2);
    CHECK_OK(latte_mla_run(plan, &a, b.ws, b.ws_bytes, NULL));
    CHECK(!memcmp(y1, b.y, b.y_n * 2), "weights: the run changed after the caller's weights changed");
    free(y1);
    free_bufs(&b);
    CHECK_OK(latte_mla_plan_destroy(plan));
    free_weights(&w);
}

/* DeepSeek-R1's sizes, batch 1, length ~64: a smoke test checked against the float64 reference */
static void deepseek_case(void) {
    mla_case k;
    memset(&k, 0, sizeof k);
    k.cfg = latte_mla_config_deepseek_r1();
    k.batch = 1, k.capacity = 128, k.max_cache_len = 100, k.row_stride = 576;
    k.x_stride = k.y_stride = k.cfg.dim, k.x_mag = k.cache_mag = 1, k.rope_kind = LATTE_ROPE_BF16_REFERENCE;
    int32_t lens[1] = {(int32_t)test_randint(56, 72)};
    k.lens = lens;
    k.cheap = 1;
    weights w = make_weights(&k.cfg, 1);
    const clock_t t0 = clock();
    run_case("deepseek-r1 sizes, batch 1", &k, &w, 1);
    printf("deepseek-r1 sizes, batch 1, len %d: %.1f s CPU time (plan, 2 runs, reference)\n", lens[0],
           (double)(clock() - t0) / CLOCKS_PER_SEC);
    free_weights(&w);
}

int main(void) {
    test_seed("test_mla_cpu");
    validation();
    weights_copied();
    bad_length_case();
    random_cases(24);
    if (!getenv("LATTE_TEST_SKIP_BIG")) deepseek_case();
    return test_finish("test_mla_cpu");
}
