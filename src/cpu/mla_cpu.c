/*
 * MLA decode layer, CPU backend: the weight-absorbed layer of spec/mla-decode.md in C, OpenMP over
 * independent output elements. It is the reference the GPU backend is tested against on sampled
 * sequences, so it must be exact about where it rounds and fast enough at DeepSeek's sizes.
 *
 * The CPU backend's contract (the GPU backend rounds at the same points). Accumulation is fp32
 * everywhere (8 lanes, fixed order; FMA where the CPU has it); "bf16(.)" rounds to nearest even.
 *   1. q_lora = bf16(x·Wq_downᵀ), kv_lora = bf16(x·Wkv_downᵀ)
 *   2. append kv_lora at cache row len[b]; with LATTE_MLA_KEYS_STORED_ROTATED its k_pe part is stored
 *      as rope_bf16(kv_lora[R:], len[b]), where
 *        rope_bf16(x, t) = bf16( bf16(x·cos[t]) + bf16(rotate_half(x)·sin[t]) ), rotate_half([a,b]) = [-b,a]
 *      (each product rounded, then the sum: what torch's bf16 ops do)
 *   3. q = bf16(q_lora·Wq_upᵀ); per head q_nope = q[h][0:nope], q_pe = rope_bf16(q[h][nope:], len[b])
 *   4. q_lat[h] = bf16(W_UK[h]ᵀ·q_nope[h])                    (R values)
 *   5. keys of token t < T = len[b]+1: c[t] = cache[t][0:R], k_pe[t] = rope_bf16(cache[t][R:], t)
 *      (LATTE_MLA_KEYS_ROTATED_AT_READ) or cache[t][R:] as stored
 *   6. s[h][t] = bf16(bf16(q_lat[h]·c[t] + q_pe[h]·k_pe[t])·scale) (one fp32 dot over R+P, rounded twice as the
 *      reference's bf16 matmul and scaling round it), p = softmax_t(s) in fp32
 *      in fp32, p rounded to bf16, o_lat[h] = bf16(Σ_t p[t]·c[t])
 *   7. o[h] = bf16(W_UV[h]·o_lat[h]), y = bf16(o·Woᵀ)
 * A sequence with len < 0 or len > max_cache_len gets a NaN row of y, appends nothing, reads nothing of
 * the cache, and raises the plan's bad-length counter by one.
 *
 * Determinism: every output element is computed by one thread in an order fixed by the sizes alone
 * (K is summed in blocks of GEMM_KB, each block in 8 lanes then reduced in a fixed tree), so results do
 * not depend on the thread count or the schedule. They may differ between CPUs with and without FMA.
 *
 * Layout. Plan: fp32 copies of the weights, W_down = [Wq_down; Wkv_down] ([dq+R+P][dim]), Wq_up as is,
 * W_UK transposed per head ([H][R][nope]), W_UV per head ([H][v][R]), Wo as is. All GEMMs are "NT":
 * both operands contiguous along K. Workspace (fp32 unless noted, each region 256-byte aligned), with
 * B = batch, L1 = max_cache_len + 1, Hp = H rounded up to 4 (head blocks), Kp = R+P rounded up to 16,
 * Rp = R rounded up to 16, Tp = L1 rounded up to 16:
 *     lens   [B] int32       the lengths as read once at the start (-1: bad)
 *     xf     [B][dim]        x in fp32
 *     lora   [B][dq+R+P]     q_lora | kv_lora
 *     q      [B][H(nope+P)]  q
 *     qcat   [B][Hp][Kp]     the score query per head: q_lat | roped q_pe | zeros
 *     keys   [L1][Kp]        one sequence's keys: c | k_pe (rotated) | zeros
 *     probs  [Hp][Tp]        one sequence's scores, then bf16 probabilities
 *     olat   [B][Hp][Rp]     o_lat
 *     o      [B][H·v]        o
 *     ystage [B][dim]        y's fp32 sums before rounding
 * The attention runs one sequence at a time, parallel over (head block, key chunk) and (head block,
 * latent chunk), so a batch of one uses every core and `keys` is converted once per sequence.
 */
#include "internal.h"

#include <stdlib.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
/* AVX+FMA where the CPU has it (the build targets baseline x86-64); chosen once at load time */
#define LATTE_HOT __attribute__((target_clones("fma", "default")))
#else
#define LATTE_HOT
#endif
#define LATTE_INLINE static inline __attribute__((always_inline))
#if defined(__GNUC__) && !defined(__clang__)
/* the 32-byte vector helpers are always inlined: no call passes a vector, so no ABI is involved */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

enum { GEMM_NB = 32, GEMM_KB = 1024, SCORE_TC = 128, HB = 4 };

typedef struct cpu_mla {
    float *w_down; /* [dq + R + P][dim] */
    float *w_q_up; /* [H (nope + P)][dq] */
    float *w_uk_t; /* [H][R][nope] */
    float *w_uv;   /* [H][v][R] */
    float *w_o;    /* [dim][H v] */
    int64_t bad_lengths; /* __atomic */
} cpu_mla;

/* ---- sizes ---------------------------------------------------------------------------- */
static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
/* saturating products: absurd configurations give SIZE_MAX, which no allocation satisfies */
static size_t mul_sat(size_t a, size_t b) {
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}
static size_t add_sat(size_t a, size_t b) { return a + b < a ? SIZE_MAX : a + b; }

typedef struct ws_layout {
    size_t lens, xf, lora, q, qcat, keys, probs, olat, o, ystage, total; /* byte offsets */
} ws_layout;

static ws_layout layout(const latte_mla_config *c, int64_t B, int64_t max_cache_len) {
    const int64_t R = c->kv_lora_rank, P = c->rope_dim, H = c->n_heads, Hp = round_up(H, HB);
    const int64_t Kp = round_up(R + P, 16), Rp = round_up(R, 16), L1 = max_cache_len + 1, Tp = round_up(L1, 16);
    size_t off = 0;
    ws_layout w;
#define REGION(name, count)                                                                    \
    w.name = off;                                                                              \
    off = add_sat(off, mul_sat((size_t)(count), 4));                                           \
    off = off > SIZE_MAX - 256 ? SIZE_MAX : (off + 255) / 256 * 256;
    REGION(lens, B)
    REGION(xf, mul_sat(B, c->dim))
    REGION(lora, mul_sat(B, c->q_lora_rank + R + P))
    REGION(q, mul_sat(mul_sat(B, H), c->nope_dim + P))
    REGION(qcat, mul_sat(mul_sat(B, Hp), Kp))
    REGION(keys, mul_sat(L1, Kp))
    REGION(probs, mul_sat(Hp, Tp))
    REGION(olat, mul_sat(mul_sat(B, Hp), Rp))
    REGION(o, mul_sat(mul_sat(B, H), c->v_dim))
    REGION(ystage, mul_sat(B, c->dim))
#undef REGION
    w.total = off;
    return w;
}

size_t latte_cpu_mla_workspace_size(const struct latte_mla_plan_s *plan, int64_t batch, int64_t max_cache_len) {
    return layout(&plan->config, batch, max_cache_len).total;
}

/* ---- plan ----------------------------------------------------------------------------- */
static float *alloc_f32(size_t count) {
    size_t bytes = mul_sat(count, 4);
    if (bytes > SIZE_MAX - 64) return NULL;
    return (float *)aligned_alloc(64, (bytes + 63) / 64 * 64);
}

static void free_impl(cpu_mla *m) {
    if (!m) return;
    free(m->w_down);
    free(m->w_q_up);
    free(m->w_uk_t);
    free(m->w_uv);
    free(m->w_o);
    free(m);
}

/* dst[i] = float(src[i]) */
static void widen(float *dst, const uint16_t *src, int64_t n) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) dst[i] = latte_bf16_to_f32(src[i]);
}

latte_status latte_cpu_mla_plan_init(struct latte_mla_plan_s *plan, const latte_mla_weights *w) {
    const latte_mla_config *c = &plan->config;
    const int64_t dim = c->dim, dq = c->q_lora_rank, R = c->kv_lora_rank, P = c->rope_dim, nope = c->nope_dim,
                  v = c->v_dim, H = c->n_heads;
    cpu_mla *m = (cpu_mla *)calloc(1, sizeof *m);
    if (!m) return latte_set_error(LATTE_STATUS_OUT_OF_MEMORY, "plan: host allocation of %zu bytes failed", sizeof *m);
    const size_t n_down = mul_sat(dq + R + P, dim), n_q_up = mul_sat(mul_sat(H, nope + P), dq),
                 n_uk = mul_sat(mul_sat(H, R), nope), n_uv = mul_sat(mul_sat(H, v), R), n_o = mul_sat(dim, mul_sat(H, v));
    m->w_down = alloc_f32(n_down);
    m->w_q_up = alloc_f32(n_q_up);
    m->w_uk_t = alloc_f32(n_uk);
    m->w_uv = alloc_f32(n_uv);
    m->w_o = alloc_f32(n_o);
    if (!m->w_down || !m->w_q_up || !m->w_uk_t || !m->w_uv || !m->w_o) {
        free_impl(m);
        return latte_set_error(LATTE_STATUS_OUT_OF_MEMORY,
                               "plan: host allocation of the fp32 weight copies (%.3g GB) failed",
                               4e-9 * ((double)n_down + (double)n_q_up + (double)n_uk + (double)n_uv + (double)n_o));
    }
    widen(m->w_down, (const uint16_t *)w->wq_down, dq * dim);
    widen(m->w_down + dq * dim, (const uint16_t *)w->wkv_down, (R + P) * dim);
    widen(m->w_q_up, (const uint16_t *)w->wq_up, H * (nope + P) * dq);
    widen(m->w_o, (const uint16_t *)w->wo, dim * H * v);
    const uint16_t *kv_up = (const uint16_t *)w->wkv_up;
#pragma omp parallel for schedule(static)
    for (int64_t h = 0; h < H; h++) {
        const uint16_t *wh = kv_up + h * (nope + v) * R;
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < nope; j++) m->w_uk_t[(h * R + r) * nope + j] = latte_bf16_to_f32(wh[j * R + r]);
        for (int64_t j = 0; j < v * R; j++) m->w_uv[h * v * R + j] = latte_bf16_to_f32(wh[nope * R + j]);
    }
    plan->impl = m;
    return LATTE_STATUS_SUCCESS;
}

void latte_cpu_mla_plan_free(struct latte_mla_plan_s *plan) {
    free_impl((cpu_mla *)plan->impl);
    plan->impl = NULL;
}

latte_status latte_cpu_mla_bad_lengths(struct latte_mla_plan_s *plan, int64_t *count, int reset) {
    cpu_mla *m = (cpu_mla *)plan->impl;
    *count = reset ? __atomic_exchange_n(&m->bad_lengths, 0, __ATOMIC_ACQ_REL)
                   : __atomic_load_n(&m->bad_lengths, __ATOMIC_ACQUIRE);
    return LATTE_STATUS_SUCCESS;
}

/* ---- GEMM: C[m][n] = bf16(Σ_k A[m][k]·B[n][k]) ------------------------------------------ */
/* The fp32 sums go to C; at the end they are rounded to bf16, in place in C, or into Y (bits). */
typedef struct gemm {
    int64_t M, N, K;
    const float *A;
    int64_t lda;
    const float *B;
    int64_t ldb;
    float *C;
    int64_t ldc;
    uint16_t *Y; /* NULL: the rounded values stay in C */
    int64_t ldy;
} gemm;

/* 8 fp32 lanes: one AVX register in the FMA clone, two SSE registers in the default one */
typedef float v8f __attribute__((vector_size(32)));
LATTE_INLINE v8f load8(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}
/* the fixed reduction order of the 8 lanes */
LATTE_INLINE float hsum8(const v8f *v) {
    const v8f a = *v;
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

/* mr (<= 4, a constant after inlining) rows of A against 2 rows of B over k < klen: 8 independent
 * 8-lane accumulators, then the fixed reduction, then the scalar tail. */
LATTE_INLINE void gemm_micro(const int mr, const float *const a[4], const float *b0, const float *b1, int64_t klen,
                             float out[4][2]) {
    v8f acc[4][2];
    for (int i = 0; i < 4; i++) acc[i][0] = acc[i][1] = (v8f){0};
    int64_t k = 0;
    for (; k + 8 <= klen; k += 8) {
        const v8f w0 = load8(b0 + k), w1 = load8(b1 + k);
        for (int i = 0; i < mr; i++) {
            const v8f ai = load8(a[i] + k);
            acc[i][0] += ai * w0;
            acc[i][1] += ai * w1;
        }
    }
    for (int i = 0; i < mr; i++) {
        float s0 = hsum8(&acc[i][0]), s1 = hsum8(&acc[i][1]);
        for (int64_t kk = k; kk < klen; kk++) {
            s0 += a[i][kk] * b0[kk];
            s1 += a[i][kk] * b1[kk];
        }
        out[i][0] = s0;
        out[i][1] = s1;
    }
}

/* columns n0 <= n < n1 of one GEMM, all rows, all of K: one task, one thread */
LATTE_HOT static void gemm_task(const gemm *g, int64_t n0, int64_t n1) {
    for (int64_t k0 = 0; k0 < g->K; k0 += GEMM_KB) {
        const int64_t klen = g->K - k0 < GEMM_KB ? g->K - k0 : GEMM_KB;
        for (int64_t m0 = 0; m0 < g->M; m0 += 4) {
            const int64_t mr = g->M - m0 < 4 ? g->M - m0 : 4;
            const float *a[4];
            for (int i = 0; i < 4; i++) a[i] = g->A + (m0 + (i < mr ? i : 0)) * g->lda + k0;
            for (int64_t n = n0; n < n1; n += 2) {
                const int two = n + 1 < n1;
                const float *b0 = g->B + n * g->ldb + k0, *b1 = two ? b0 + g->ldb : b0;
                float out[4][2];
                switch (mr) {
                case 4: gemm_micro(4, a, b0, b1, klen, out); break;
                case 3: gemm_micro(3, a, b0, b1, klen, out); break;
                case 2: gemm_micro(2, a, b0, b1, klen, out); break;
                default: gemm_micro(1, a, b0, b1, klen, out); break;
                }
                for (int64_t i = 0; i < mr; i++)
                    for (int j = 0; j <= two; j++) {
                        float *cij = g->C + (m0 + i) * g->ldc + n + j;
                        *cij = k0 == 0 ? out[i][j] : *cij + out[i][j];
                    }
            }
        }
    }
    for (int64_t m = 0; m < g->M; m++)
        for (int64_t n = n0; n < n1; n++) {
            float *cmn = g->C + m * g->ldc + n;
            if (g->Y)
                g->Y[m * g->ldy + n] = latte_f32_to_bf16(*cmn);
            else
                *cmn = latte_round_bf16(*cmn);
        }
}

/* The per-head absorptions: for every head h, C_h[B, N] = bf16(A_h[B, K] · W_hᵀ) with W_h = W + h·N·K ([N][K]),
 * A_h = A + h·a_head (rows lda apart), C_h = C + h·c_head (rows ldc apart). Blocks of GEMM_NB columns per task. */
static void gemm_per_head(int64_t H, int64_t B, int64_t N, int64_t K, const float *A, int64_t a_head, int64_t lda,
                          const float *W, float *C, int64_t c_head, int64_t ldc) {
    const int64_t nb = (N + GEMM_NB - 1) / GEMM_NB;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < H * nb; i++) {
        const int64_t h = i / nb, n0 = (i % nb) * GEMM_NB, n1 = n0 + GEMM_NB < N ? n0 + GEMM_NB : N;
        const gemm g = {B, N, K, A + h * a_head, lda, W + h * N * K, K, C + h * c_head, ldc, NULL, 0};
        gemm_task(&g, n0, n1);
    }
}

static void gemm_run(const gemm *g) {
    const int64_t nb = (g->N + GEMM_NB - 1) / GEMM_NB;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < nb; i++) {
        const int64_t n0 = i * GEMM_NB, n1 = n0 + GEMM_NB < g->N ? n0 + GEMM_NB : g->N;
        gemm_task(g, n0, n1);
    }
}

/* ---- rope and attention ---------------------------------------------------------------- */
/* out = rope_bf16(x, row t of the tables); x holds bf16 values; out may be x (each pair i, i+P/2 is
 * read before it is written) */
static void rope_bf16(const float *x, float *out, const uint16_t *cos_t, const uint16_t *sin_t, int64_t P) {
    const int64_t half = P / 2;
    for (int64_t i = 0; i < half; i++) {
        const float lo = x[i], hi = x[i + half]; /* rotate_half([lo, hi]) = [-hi, lo] */
        out[i] = latte_round_bf16(latte_round_bf16(lo * latte_bf16_to_f32(cos_t[i])) +
                                  latte_round_bf16(-hi * latte_bf16_to_f32(sin_t[i])));
        out[i + half] = latte_round_bf16(latte_round_bf16(hi * latte_bf16_to_f32(cos_t[i + half])) +
                                         latte_round_bf16(lo * latte_bf16_to_f32(sin_t[i + half])));
    }
}

/* s[hh][t] = scale · q[hh]·keys[t] for HB heads and keys t0 <= t < t1 (rows Kp long, zero padded) */
LATTE_HOT static void score_task(const float *q, const float *keys, int64_t Kp, int64_t t0, int64_t t1, float scale,
                                 float *s, int64_t Tp) {
    for (int64_t t = t0; t < t1; t++) {
        const float *k = keys + t * Kp;
        v8f acc[HB];
        for (int hh = 0; hh < HB; hh++) acc[hh] = (v8f){0};
        for (int64_t j = 0; j < Kp; j += 8) {
            const v8f kj = load8(k + j);
            for (int hh = 0; hh < HB; hh++) acc[hh] += load8(q + hh * Kp + j) * kj;
        }
        /* rounded as the reference rounds its scores: bf16 out of the QKᵀ matmul, bf16 again after the scale */
        for (int hh = 0; hh < HB; hh++) s[hh * Tp + t] = latte_round_bf16(latte_round_bf16(hsum8(&acc[hh])) * scale);
    }
}

/* o[hh][r0 + l] = bf16(Σ_t p[hh][t]·keys[t][r0 + l]) for HB heads, l < 16, in token order */
LATTE_HOT static void olat_task(const float *p, int64_t Tp, const float *keys, int64_t Kp, int64_t T, int64_t r0,
                                float *o, int64_t ldo) {
    v8f acc[HB][2];
    for (int hh = 0; hh < HB; hh++) acc[hh][0] = acc[hh][1] = (v8f){0};
    for (int64_t t = 0; t < T; t++) {
        const v8f c0 = load8(keys + t * Kp + r0), c1 = load8(keys + t * Kp + r0 + 8);
        for (int hh = 0; hh < HB; hh++) {
            const float ph = p[hh * Tp + t];
            acc[hh][0] += ph * c0;
            acc[hh][1] += ph * c1;
        }
    }
    for (int hh = 0; hh < HB; hh++)
        for (int l = 0; l < 8; l++) {
            o[hh * ldo + r0 + l] = latte_round_bf16(acc[hh][0][l]);
            o[hh * ldo + r0 + 8 + l] = latte_round_bf16(acc[hh][1][l]);
        }
}

/* ---- one decode step -------------------------------------------------------------------- */
latte_status latte_cpu_mla_run(struct latte_mla_plan_s *plan, const latte_mla_run_args *a, void *workspace,
                               size_t workspace_bytes) {
    (void)workspace_bytes; /* checked by the API layer against the same layout */
    const latte_mla_config *c = &plan->config;
    cpu_mla *m = (cpu_mla *)plan->impl;
    const int64_t B = a->batch, dim = c->dim, dq = c->q_lora_rank, R = c->kv_lora_rank, P = c->rope_dim,
                  nope = c->nope_dim, v = c->v_dim, H = c->n_heads, Hp = round_up(H, HB), Kp = round_up(R + P, 16),
                  Rp = round_up(R, 16), Tp = round_up(a->max_cache_len + 1, 16), dl = dq + R + P, qw = nope + P;
    const int rotated_at_read = c->key_convention == LATTE_MLA_KEYS_ROTATED_AT_READ;
    const float scale = c->softmax_scale;
    const ws_layout wl = layout(c, B, a->max_cache_len);
    char *ws = (char *)workspace;
    int32_t *lens = (int32_t *)(ws + wl.lens);
    float *xf = (float *)(ws + wl.xf), *lora = (float *)(ws + wl.lora), *q = (float *)(ws + wl.q),
          *qcat = (float *)(ws + wl.qcat), *keys = (float *)(ws + wl.keys), *probs = (float *)(ws + wl.probs),
          *olat = (float *)(ws + wl.olat), *o = (float *)(ws + wl.o), *ystage = (float *)(ws + wl.ystage);
    const uint16_t *x = (const uint16_t *)a->x, *cos_tab = (const uint16_t *)a->rope_cos,
                   *sin_tab = (const uint16_t *)a->rope_sin;
    uint16_t *cache = (uint16_t *)a->kv_cache.data, *y = (uint16_t *)a->y;
    const int64_t cbs = a->kv_cache.batch_stride, crs = a->kv_cache.row_stride;

    /* lengths: read once; a bad one is counted and marked -1 */
    int64_t bad = 0;
    for (int64_t b = 0; b < B; b++) {
        const int32_t len = a->cache_lens[b];
        const int ok = len >= 0 && (int64_t)len <= a->max_cache_len;
        lens[b] = ok ? len : -1;
        bad += !ok;
    }
    if (bad) __atomic_fetch_add(&m->bad_lengths, bad, __ATOMIC_ACQ_REL);

    /* 1. down-projections */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < B * dim; i++) xf[i] = latte_bf16_to_f32(x[(i / dim) * a->x_row_stride + i % dim]);
    {
        const gemm g = {B, dl, dim, xf, dim, m->w_down, dim, lora, dl, NULL, 0};
        gemm_run(&g);
    }
    /* 3. up-projection of q */
    {
        const gemm g = {B, H * qw, dq, lora, dl, m->w_q_up, dq, q, H * qw, NULL, 0};
        gemm_run(&g);
    }
    /* 3-4. roped q_pe into qcat[b][h][R:R+P], zero padding; q_lat = bf16(W_UK[h]ᵀ q_nope[h]) into qcat[b][h][0:R] */
#pragma omp parallel for schedule(static)
    for (int64_t bh = 0; bh < B * Hp; bh++) {
        const int64_t b = bh / Hp, h = bh % Hp;
        float *qc = qcat + bh * Kp;
        if (h >= H || lens[b] < 0) {
            for (int64_t j = 0; j < Kp; j++) qc[j] = 0.0f;
            continue;
        }
        rope_bf16(q + (b * H + h) * qw + nope, qc + R, cos_tab + lens[b] * P, sin_tab + lens[b] * P, P);
        for (int64_t j = R + P; j < Kp; j++) qc[j] = 0.0f;
    }
    gemm_per_head(H, B, R, nope, q, qw, H * qw, m->w_uk_t, qcat, Kp, Hp * Kp);
    /* 2. append (after every read of x: the API does not forbid x inside the cache) */
    for (int64_t b = 0; b < B; b++) {
        if (lens[b] < 0) continue;
        float *kv = lora + b * dl + dq; /* k_pe is roped in place: nothing reads kv_lora after this */
        uint16_t *row = cache + b * cbs + (int64_t)lens[b] * crs;
        if (!rotated_at_read) rope_bf16(kv + R, kv + R, cos_tab + lens[b] * P, sin_tab + lens[b] * P, P);
        for (int64_t r = 0; r < R + P; r++) row[r] = latte_f32_to_bf16(kv[r]);
    }
    /* 5-6. attention, one sequence at a time */
    for (int64_t b = 0; b < B; b++) {
        float *ol = olat + b * Hp * Rp;
        if (lens[b] < 0) {
            for (int64_t i = 0; i < Hp * Rp; i++) ol[i] = 0.0f;
            continue;
        }
        const int64_t T = (int64_t)lens[b] + 1;
        const uint16_t *seq = cache + b * cbs;
#pragma omp parallel for schedule(static)
        for (int64_t t = 0; t < T; t++) {
            const uint16_t *row = seq + t * crs;
            float *k = keys + t * Kp;
            for (int64_t r = 0; r < R + P; r++) k[r] = latte_bf16_to_f32(row[r]);
            if (rotated_at_read) rope_bf16(k + R, k + R, cos_tab + t * P, sin_tab + t * P, P);
            for (int64_t j = R + P; j < Kp; j++) k[j] = 0.0f;
        }
        const int64_t n_hb = Hp / HB, n_tc = (T + SCORE_TC - 1) / SCORE_TC, n_rc = Rp / 16;
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t i = 0; i < n_hb * n_tc; i++) {
            const int64_t hb = i / n_tc, t0 = (i % n_tc) * SCORE_TC, t1 = t0 + SCORE_TC < T ? t0 + SCORE_TC : T;
            score_task(qcat + (b * Hp + hb * HB) * Kp, keys, Kp, t0, t1, scale, probs + hb * HB * Tp, Tp);
        }
#pragma omp parallel for schedule(static)
        for (int64_t h = 0; h < Hp; h++) {
            float *s = probs + h * Tp, mx = s[0], sum = 0.0f;
            for (int64_t t = 1; t < T; t++) mx = s[t] > mx ? s[t] : mx;
            for (int64_t t = 0; t < T; t++) {
                s[t] = expf(s[t] - mx);
                sum += s[t];
            }
            for (int64_t t = 0; t < T; t++) s[t] = latte_round_bf16(s[t] / sum);
        }
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t i = 0; i < n_hb * n_rc; i++) {
            const int64_t hb = i / n_rc, r0 = (i % n_rc) * 16;
            olat_task(probs + hb * HB * Tp, Tp, keys, Kp, T, r0, ol + hb * HB * Rp, Rp);
        }
    }
    /* 7. o = bf16(W_UV[h] o_lat[h]), y = bf16(o Woᵀ) */
    gemm_per_head(H, B, v, R, olat, Rp, Hp * Rp, m->w_uv, o, v, H * v);
    {
        const gemm g = {B, dim, H * v, o, H * v, m->w_o, H * v, ystage, dim, y, a->y_row_stride};
        gemm_run(&g);
    }
    for (int64_t b = 0; b < B; b++)
        if (lens[b] < 0)
            for (int64_t j = 0; j < dim; j++) y[b * a->y_row_stride + j] = 0x7fc0; /* NaN */
    return LATTE_STATUS_SUCCESS;
}
