/*
 * Reliability of the CPU backend: concurrency, determinism, resource hygiene, thread-local errors.
 *
 *   - several host threads share one MLA plan (own workspace, cache and outputs each) and others use their
 *     own plans: every result is bit-identical to a serial run; the shared plan's bad-length counter counts
 *     every thread's bad sequences exactly (it is updated atomically);
 *   - QK norm from many threads at once, each with its own tensors and dtype: bit-identical to serial runs;
 *   - 100 repeated runs of each operation are bitwise identical;
 *   - 1,000 plan create/destroy cycles (under the ASan build, LeakSanitizer checks that nothing leaks);
 *   - latte_last_error() is thread-local: thread A's message never shows in thread B.
 * LATTE_TEST_QUICK=1 uses smaller counts.
 */
#include "test_util.h"

#include <pthread.h>

static int quick;

/* ---- a small MLA problem: weights, inputs, an initial cache, and the outputs of one step ------ */
typedef struct {
    latte_mla_config cfg;
    int64_t batch, max_len, capacity, row;
    uint16_t *x, *cache0, *cos, *sin;
    int32_t lens[4];
} mla_problem;

static uint16_t *alloc_bf16(size_t n) { return (uint16_t *)malloc(n * 2 + 2); }

static latte_mla_config small_config(int64_t n_heads, int64_t dim) {
    latte_mla_config c = latte_mla_config_deepseek_r1();
    c.dim = dim;
    c.q_lora_rank = 48;
    c.kv_lora_rank = 32;
    c.rope_dim = 16;
    c.nope_dim = 16;
    c.v_dim = 16;
    c.n_heads = n_heads;
    return c;
}

/* creates a plan with fresh random weights (scaled 1/sqrt(fan_in)); frees the weights right away */
static latte_mla_plan make_plan(const latte_mla_config *c) {
    const int64_t H = c->n_heads, R = c->kv_lora_rank, P = c->rope_dim;
    size_t n[5] = {(size_t)(c->q_lora_rank * c->dim), (size_t)((R + P) * c->dim),
                   (size_t)(H * (c->nope_dim + P) * c->q_lora_rank), (size_t)(H * (c->nope_dim + c->v_dim) * R),
                   (size_t)(c->dim * H * c->v_dim)};
    double fan_in[5] = {(double)c->dim, (double)c->dim, (double)c->q_lora_rank, (double)R, (double)(H * c->v_dim)};
    uint16_t *w[5];
    for (int i = 0; i < 5; i++) {
        w[i] = alloc_bf16(n[i]);
        fill_bf16(w[i], n[i], 1.0 / sqrt(fan_in[i]));
    }
    latte_mla_weights ws = {w[0], w[1], w[2], w[3], w[4]};
    latte_mla_plan plan = NULL;
    CHECK_OK(latte_mla_plan_create(&plan, c, &ws, LATTE_BACKEND_CPU, NULL));
    for (int i = 0; i < 5; i++) free(w[i]);
    return plan;
}

static void make_problem(mla_problem *p, const latte_mla_config *c, int64_t batch, int64_t max_len) {
    p->cfg = *c;
    p->batch = batch;
    p->max_len = max_len;
    p->capacity = max_len + 3;
    p->row = c->kv_lora_rank + c->rope_dim;
    p->x = alloc_bf16((size_t)(batch * c->dim));
    fill_bf16(p->x, (size_t)(batch * c->dim), 1.0);
    size_t cn = (size_t)(batch * p->capacity * p->row);
    p->cache0 = alloc_bf16(cn);
    fill_bf16(p->cache0, cn, 1.0);
    for (int64_t b = 0; b < batch; b++) p->lens[b] = (int32_t)test_randint(0, max_len);
    p->lens[0] = (int32_t)max_len;
    p->cos = alloc_bf16((size_t)((max_len + 1) * c->rope_dim));
    p->sin = alloc_bf16((size_t)((max_len + 1) * c->rope_dim));
    CHECK_OK(latte_rope_tables(LATTE_ROPE_BF16_REFERENCE, max_len + 1, c->rope_dim, 10000.0f, p->cos, p->sin,
                               LATTE_BACKEND_CPU, NULL));
}
static void free_problem(mla_problem *p) {
    free(p->x);
    free(p->cache0);
    free(p->cos);
    free(p->sin);
}

/* one step from the problem's initial cache into `cache` (reset first) and `y`; returns the status */
static latte_status run_step(latte_mla_plan plan, const mla_problem *p, const int32_t *lens, uint16_t *cache,
                             uint16_t *y, void *ws, size_t ws_bytes) {
    size_t cn = (size_t)(p->batch * p->capacity * p->row);
    memcpy(cache, p->cache0, cn * 2);
    for (size_t i = 0; i < (size_t)(p->batch * p->cfg.dim); i++) y[i] = BF16_NAN;
    latte_mla_run_args a;
    memset(&a, 0, sizeof a);
    a.batch = p->batch;
    a.x = p->x;
    a.kv_cache.data = cache;
    a.kv_cache.row_stride = p->row;
    a.kv_cache.batch_stride = p->capacity * p->row;
    a.kv_cache.capacity = p->capacity;
    a.cache_lens = lens;
    a.max_cache_len = p->max_len;
    a.rope_cos = p->cos;
    a.rope_sin = p->sin;
    a.rope_max_pos = p->max_len + 1;
    a.y = y;
    return latte_mla_run(plan, &a, ws, ws_bytes, NULL);
}

static void *alloc_ws(latte_mla_plan plan, const mla_problem *p, size_t *bytes) {
    *bytes = 0;
    CHECK_OK(latte_mla_workspace_size(plan, p->batch, p->max_len, bytes));
    void *ws = NULL;
    if (posix_memalign(&ws, 256, *bytes ? *bytes : 256)) return NULL;
    return ws;
}

/* ---- 1. threads sharing one plan, and threads with their own plans ---------------------------- */
typedef struct {
    latte_mla_plan plan;
    const mla_problem *prob;
    const uint16_t *y_ref, *cache_ref;
    int iters, bad_lengths_per_iter;
    long mismatches, failures;
} mla_thread_arg;

static void *mla_thread(void *vp) {
    mla_thread_arg *t = (mla_thread_arg *)vp;
    const mla_problem *p = t->prob;
    size_t ws_bytes;
    void *ws = alloc_ws(t->plan, p, &ws_bytes);
    size_t yn = (size_t)(p->batch * p->cfg.dim), cn = (size_t)(p->batch * p->capacity * p->row);
    uint16_t *y = alloc_bf16(yn), *cache = alloc_bf16(cn);
    int32_t lens[4];
    memcpy(lens, p->lens, sizeof lens);
    for (int it = 0; it < t->iters; it++) {
        if (run_step(t->plan, p, lens, cache, y, ws, ws_bytes) != LATTE_STATUS_SUCCESS) {
            t->failures++;
            continue;
        }
        if (memcmp(y, t->y_ref, yn * 2) || memcmp(cache, t->cache_ref, cn * 2)) t->mismatches++;
        if (t->bad_lengths_per_iter) { /* one out-of-range length: NaN row, counted on the shared plan */
            int32_t bad[4];
            memcpy(bad, p->lens, sizeof bad);
            bad[p->batch - 1] = (int32_t)p->max_len + 1;
            if (run_step(t->plan, p, bad, cache, y, ws, ws_bytes) != LATTE_STATUS_SUCCESS) t->failures++;
        }
    }
    free(ws);
    free(y);
    free(cache);
    return NULL;
}

static void test_mla_threads(void) {
    const int n_threads = 4, iters = quick ? 3 : 10;
    latte_mla_config ca = small_config(4, 64), cb = small_config(3, 40);
    latte_mla_plan shared = make_plan(&ca), own[2] = {make_plan(&cb), make_plan(&ca)};
    if (!shared || !own[0] || !own[1]) {
        CHECK(0, "mla plans (CPU backend) could not be created: %s", latte_last_error());
        latte_mla_plan_destroy(shared), latte_mla_plan_destroy(own[0]), latte_mla_plan_destroy(own[1]);
        return;
    }
    mla_problem pa, pb;
    make_problem(&pa, &ca, 3, 24);
    make_problem(&pb, &cb, 2, 17);

    /* serial references */
    latte_mla_plan plans[3] = {shared, own[0], own[1]};
    const mla_problem *probs[3] = {&pa, &pb, &pa};
    uint16_t *y_ref[3], *cache_ref[3];
    for (int i = 0; i < 3; i++) {
        const mla_problem *p = probs[i];
        size_t ws_bytes;
        void *ws = alloc_ws(plans[i], p, &ws_bytes);
        y_ref[i] = alloc_bf16((size_t)(p->batch * p->cfg.dim));
        cache_ref[i] = alloc_bf16((size_t)(p->batch * p->capacity * p->row));
        CHECK_OK(run_step(plans[i], p, p->lens, cache_ref[i], y_ref[i], ws, ws_bytes));
        free(ws);
    }
    int64_t count = -1;
    CHECK_OK(latte_mla_plan_bad_lengths(shared, &count, 1, NULL));

    /* threads 0..n-1 share `shared` (and feed it bad lengths); two more use their own plans */
    pthread_t th[6];
    mla_thread_arg args[6];
    int n_all = n_threads + 2;
    for (int i = 0; i < n_all; i++) {
        int which = i < n_threads ? 0 : i - n_threads + 1;
        mla_thread_arg t = {plans[which], probs[which], y_ref[which], cache_ref[which], iters, i < n_threads, 0, 0};
        args[i] = t;
        CHECK(pthread_create(&th[i], NULL, mla_thread, &args[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < n_all; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < n_all; i++) {
        CHECK(args[i].failures == 0, "mla thread %d: %ld failed runs", i, args[i].failures);
        CHECK(args[i].mismatches == 0, "mla thread %d (%s plan): %ld of %d runs differ from the serial run", i,
              i < n_threads ? "shared" : "own", args[i].mismatches, iters);
    }
    CHECK_OK(latte_mla_plan_bad_lengths(shared, &count, 0, NULL));
    CHECK(count == (int64_t)n_threads * iters, "shared plan's bad-length counter %lld, expected %lld (%d threads x %d)",
          (long long)count, (long long)n_threads * iters, n_threads, iters);

    /* ---- 3. determinism: 100 runs of one plan, bitwise identical ---- */
    {
        size_t ws_bytes;
        void *ws = alloc_ws(shared, &pa, &ws_bytes);
        size_t yn = (size_t)(pa.batch * ca.dim), cn = (size_t)(pa.batch * pa.capacity * pa.row);
        uint16_t *y = alloc_bf16(yn), *cache = alloc_bf16(cn);
        int runs = quick ? 20 : 100, differ = 0;
        for (int r = 0; r < runs; r++) {
            CHECK_OK(run_step(shared, &pa, pa.lens, cache, y, ws, ws_bytes));
            differ += memcmp(y, y_ref[0], yn * 2) != 0 || memcmp(cache, cache_ref[0], cn * 2) != 0;
        }
        CHECK(differ == 0, "mla determinism: %d of %d runs differ", differ, runs);
        free(ws);
        free(y);
        free(cache);
    }
    for (int i = 0; i < 3; i++) {
        free(y_ref[i]);
        free(cache_ref[i]);
        CHECK_OK(latte_mla_plan_destroy(plans[i]));
    }
    free_problem(&pa);
    free_problem(&pb);
}

/* ---- 2. QK norm from many threads ----------------------------------------------------------- */
typedef struct {
    latte_dtype dtype;
    int64_t n, dq, dk;
    uint8_t *q0, *k0, *qw, *kw; /* inputs */
    uint8_t *q_ref, *k_ref;     /* serial results */
    int iters;
    long mismatches, failures;
} qk_thread_arg;

static size_t esize(latte_dtype d) { return d == LATTE_DTYPE_F32 ? 4 : 2; }
static void fill_typed(uint8_t *p, size_t n, latte_dtype d, double scale) {
    for (size_t i = 0; i < n; i++) {
        float f = (float)(test_normal() * scale);
        if (d == LATTE_DTYPE_F32) memcpy(p + 4 * i, &f, 4);
        else {
            uint16_t h = d == LATTE_DTYPE_BF16 ? f32_to_bf16(f) : f32_to_f16(f);
            memcpy(p + 2 * i, &h, 2);
        }
    }
}
/* out-of-place: the inputs stay pristine, so every iteration computes the same thing */
static latte_status qk_once(const qk_thread_arg *t, uint8_t *q_out, uint8_t *k_out) {
    latte_qknorm_params p = latte_qknorm_params_default(t->n, t->q0, t->dq, t->k0, t->dk, t->qw, t->kw, t->dtype);
    p.q_out = q_out;
    p.q_out_row_stride = t->dq;
    p.k_out = k_out;
    p.k_out_row_stride = t->dk;
    return latte_qknorm_across_heads(&p, LATTE_BACKEND_CPU, NULL);
}
static void *qk_thread(void *vp) {
    qk_thread_arg *t = (qk_thread_arg *)vp;
    size_t qb = (size_t)(t->n * t->dq) * esize(t->dtype), kb = (size_t)(t->n * t->dk) * esize(t->dtype);
    uint8_t *q = (uint8_t *)malloc(qb), *k = (uint8_t *)malloc(kb);
    for (int it = 0; it < t->iters; it++) {
        memset(q, 0xff, qb);
        memset(k, 0xff, kb);
        if (qk_once(t, q, k) != LATTE_STATUS_SUCCESS) t->failures++;
        else if (memcmp(q, t->q_ref, qb) || memcmp(k, t->k_ref, kb)) t->mismatches++;
    }
    free(q);
    free(k);
    return NULL;
}

static void test_qknorm_threads(void) {
    enum { NT = 8 };
    static const latte_dtype dts[3] = {LATTE_DTYPE_BF16, LATTE_DTYPE_F16, LATTE_DTYPE_F32};
    qk_thread_arg a[NT];
    pthread_t th[NT];
    for (int i = 0; i < NT; i++) {
        qk_thread_arg *t = &a[i];
        memset(t, 0, sizeof *t);
        t->dtype = dts[i % 3];
        t->n = test_randint(1, 40);
        t->dq = test_randint(1, 700);
        t->dk = test_randint(1, 300);
        t->iters = quick ? 20 : 100; /* also the determinism check: 100 runs, bitwise identical */
        size_t es = esize(t->dtype);
        t->q0 = (uint8_t *)malloc((size_t)(t->n * t->dq) * es);
        t->k0 = (uint8_t *)malloc((size_t)(t->n * t->dk) * es);
        t->qw = (uint8_t *)malloc((size_t)t->dq * es);
        t->kw = (uint8_t *)malloc((size_t)t->dk * es);
        t->q_ref = (uint8_t *)malloc((size_t)(t->n * t->dq) * es);
        t->k_ref = (uint8_t *)malloc((size_t)(t->n * t->dk) * es);
        double scale = i % 2 ? 1e-3 : 30.0; /* other magnitudes */
        fill_typed(t->q0, (size_t)(t->n * t->dq), t->dtype, scale);
        fill_typed(t->k0, (size_t)(t->n * t->dk), t->dtype, scale);
        fill_typed(t->qw, (size_t)t->dq, t->dtype, 1.0);
        fill_typed(t->kw, (size_t)t->dk, t->dtype, 1.0);
        CHECK_OK(qk_once(t, t->q_ref, t->k_ref));
    }
    for (int i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, qk_thread, &a[i]) == 0, "pthread_create");
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NT; i++) {
        qk_thread_arg *t = &a[i];
        CHECK(t->failures == 0, "qknorm thread %d: %ld failed calls (%s)", i, t->failures, latte_last_error());
        CHECK(t->mismatches == 0, "qknorm thread %d (dtype %d, n %lld, dq %lld, dk %lld): %ld of %d runs differ from serial",
              i, (int)t->dtype, (long long)t->n, (long long)t->dq, (long long)t->dk, t->mismatches, t->iters);
        free(t->q0), free(t->k0), free(t->qw), free(t->kw), free(t->q_ref), free(t->k_ref);
    }
}

/* ---- 3b. RoPE tables: 100 builds bitwise identical -------------------------------------------- */
static void test_rope_determinism(void) {
    const int64_t pos = 300, dim = 64;
    size_t n = (size_t)(pos * dim);
    uint16_t *c0 = alloc_bf16(n), *s0 = alloc_bf16(n), *c = alloc_bf16(n), *s = alloc_bf16(n);
    for (int kind = 0; kind < 2; kind++) {
        CHECK_OK(latte_rope_tables((latte_rope_kind)kind, pos, dim, 10000.0f, c0, s0, LATTE_BACKEND_CPU, NULL));
        int runs = quick ? 20 : 100, differ = 0;
        for (int r = 0; r < runs; r++) {
            memset(c, 0xff, n * 2);
            memset(s, 0xff, n * 2);
            CHECK_OK(latte_rope_tables((latte_rope_kind)kind, pos, dim, 10000.0f, c, s, LATTE_BACKEND_CPU, NULL));
            differ += memcmp(c, c0, n * 2) != 0 || memcmp(s, s0, n * 2) != 0;
        }
        CHECK(differ == 0, "rope kind %d: %d of %d builds differ", kind, differ, runs);
    }
    free(c0), free(s0), free(c), free(s);
}

/* ---- 4. 1,000 plan create/destroy cycles ---------------------------------------------------- */
static void test_plan_cycles(void) {
    latte_mla_config c = small_config(2, 32);
    c.q_lora_rank = 16;
    c.kv_lora_rank = 16;
    c.rope_dim = 8;
    c.nope_dim = 8;
    c.v_dim = 8;
    const int64_t H = c.n_heads, R = c.kv_lora_rank, P = c.rope_dim;
    size_t n[5] = {(size_t)(c.q_lora_rank * c.dim), (size_t)((R + P) * c.dim), (size_t)(H * (c.nope_dim + P) * c.q_lora_rank),
                   (size_t)(H * (c.nope_dim + c.v_dim) * R), (size_t)(c.dim * H * c.v_dim)};
    uint16_t *w[5];
    for (int i = 0; i < 5; i++) {
        w[i] = alloc_bf16(n[i]);
        fill_bf16(w[i], n[i], 0.1);
    }
    latte_mla_weights ws = {w[0], w[1], w[2], w[3], w[4]};
    int cycles = quick ? 200 : 1000, failed = 0;
    for (int i = 0; i < cycles; i++) {
        latte_mla_plan plan = NULL;
        if (latte_mla_plan_create(&plan, &c, &ws, LATTE_BACKEND_CPU, NULL) != LATTE_STATUS_SUCCESS) {
            failed++;
            continue;
        }
        size_t bytes = 0;
        if (latte_mla_workspace_size(plan, 2, 8, &bytes) != LATTE_STATUS_SUCCESS) failed++;
        if (latte_mla_plan_destroy(plan) != LATTE_STATUS_SUCCESS) failed++;
    }
    CHECK(failed == 0, "plan create/destroy: %d of %d cycles failed (%s)", failed, cycles, latte_last_error());
    /* a failing creation (bad config) must not leak either */
    c.rope_dim = 7;
    for (int i = 0; i < 10; i++) {
        latte_mla_plan plan = NULL;
        CHECK(latte_mla_plan_create(&plan, &c, &ws, LATTE_BACKEND_CPU, NULL) == LATTE_STATUS_INVALID_ARGUMENT && !plan,
              "odd rope_dim must be rejected without a plan");
    }
    for (int i = 0; i < 5; i++) free(w[i]);
}

/* ---- 5. latte_last_error is thread-local ---------------------------------------------------- */
static pthread_barrier_t err_barrier;
static int err_results[2][4];
static void *error_thread(void *vp) {
    int id = (int)(intptr_t)vp;
    int *res = err_results[id];
    /* step 1: thread 0 fails a call, thread 1 succeeds one */
    if (id == 0) {
        res[0] = latte_qknorm_across_heads(NULL, LATTE_BACKEND_CPU, NULL) == LATTE_STATUS_INVALID_ARGUMENT;
    } else {
        size_t b;
        res[0] = latte_mla_workspace_size(NULL, 1, 1, &b) != LATTE_STATUS_SUCCESS; /* fail ... */
        res[0] &= latte_mla_plan_destroy(NULL) == LATTE_STATUS_SUCCESS;           /* ... then succeed: cleared */
    }
    pthread_barrier_wait(&err_barrier);
    /* step 2: each sees only its own state */
    const char *e = latte_last_error();
    res[1] = id == 0 ? strstr(e, "params") != NULL : e[0] == '\0';
    pthread_barrier_wait(&err_barrier);
    /* step 3: thread 1 fails with another message; thread 0's message must not change */
    if (id == 1) res[2] = latte_rope_tables(LATTE_ROPE_FP32, -5, 2, 1.0f, NULL, NULL, LATTE_BACKEND_CPU, NULL) != 0;
    else res[2] = 1;
    pthread_barrier_wait(&err_barrier);
    e = latte_last_error();
    res[3] = id == 0 ? strstr(e, "params") != NULL && strstr(e, "max_pos") == NULL : strstr(e, "max_pos") != NULL;
    return NULL;
}
static void test_error_thread_local(void) {
    pthread_t th[2];
    pthread_barrier_init(&err_barrier, NULL, 2);
    for (intptr_t i = 0; i < 2; i++) pthread_create(&th[i], NULL, error_thread, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&err_barrier);
    for (int i = 0; i < 2; i++)
        for (int s = 0; s < 4; s++) CHECK(err_results[i][s], "last_error thread-locality: thread %d step %d", i, s);
}

int main(void) {
    const char *q = getenv("LATTE_TEST_QUICK");
    quick = q && q[0] == '1';
    test_seed("test_reliability");
    test_error_thread_local();
    test_qknorm_threads();
    test_rope_determinism();
    test_plan_cycles();
    test_mla_threads();
    return test_finish("test_reliability");
}
