/*
 * Reliability of the CUDA backend: streams, host threads, determinism, guard regions, device-side bad
 * lengths, device-memory hygiene. Skips without a GPU.
 *
 *   - two plans on two streams, and one plan from several host threads on their own streams (own workspace,
 *     cache and outputs each), give bit-identical results to serial runs;
 *   - 100 runs of QK norm and of the MLA layer are bitwise identical;
 *   - guard regions before/after y (and the gaps between its rows) and before/after every cache sequence are
 *     unchanged, and no cache row other than the appended one changes;
 *   - a device-side length < 0 or > max_cache_len: NaN row, nothing appended, the plan's counter counts it,
 *     the other sequences' results are unchanged;
 *   - 1,000 plan create/destroy cycles leak no device memory: after a warm-up cycle, cudaMemGetInfo's free
 *     bytes come back to within 2 MiB (the driver maps device memory in 2 MiB pages; a page the runtime keeps
 *     for its own bookkeeping after the first cycle may stay mapped, a leak of even one small plan per cycle
 *     would show as >= 1,000 x the plan's size).
 * LATTE_TEST_QUICK=1 (compute-sanitizer runs) uses smaller counts.
 */
#include "test_util.h"

#include <cuda_runtime_api.h>
#include <pthread.h>

static int quick;

#define CUDA_OK(call)                                                                                  \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        CHECK(e_ == cudaSuccess, "%s -> %s", #call, cudaGetErrorString(e_));                           \
    } while (0)

#define GUARD 64                 /* bf16 elements of guard before/after every region */
#define GUARD_BYTE 0x55          /* pattern: bf16 0x5555, a finite value nothing computes by chance */

static latte_mla_config gpu_config(int64_t n_heads, int64_t dim, int64_t q_lora_rank) {
    latte_mla_config c = latte_mla_config_deepseek_r1();
    c.n_heads = n_heads;
    c.dim = dim;
    c.q_lora_rank = q_lora_rank;
    return c;
}

static void *dev_alloc_copy(const void *host, size_t bytes) {
    void *d = NULL;
    CUDA_OK(cudaMalloc(&d, bytes));
    if (host) CUDA_OK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize()); /* pageable copies may still be in flight on return */
    return d;
}

static latte_mla_plan make_plan(const latte_mla_config *c) {
    const int64_t H = c->n_heads, R = c->kv_lora_rank, P = c->rope_dim;
    size_t n[5] = {(size_t)(c->q_lora_rank * c->dim), (size_t)((R + P) * c->dim),
                   (size_t)(H * (c->nope_dim + P) * c->q_lora_rank), (size_t)(H * (c->nope_dim + c->v_dim) * R),
                   (size_t)(c->dim * H * c->v_dim)};
    double fan_in[5] = {(double)c->dim, (double)c->dim, (double)c->q_lora_rank, (double)R, (double)(H * c->v_dim)};
    void *d[5];
    for (int i = 0; i < 5; i++) {
        uint16_t *h = (uint16_t *)malloc(n[i] * 2);
        fill_bf16(h, n[i], 1.0 / sqrt(fan_in[i]));
        d[i] = dev_alloc_copy(h, n[i] * 2);
        free(h);
    }
    latte_mla_weights w = {d[0], d[1], d[2], d[3], d[4]};
    latte_mla_plan plan = NULL;
    CHECK_OK(latte_mla_plan_create(&plan, c, &w, LATTE_BACKEND_CUDA, NULL));
    for (int i = 0; i < 5; i++) cudaFree(d[i]); /* the plan copied what it needs */
    return plan;
}

/* ---- one problem: shared read-only inputs ------------------------------------------------------ */
typedef struct {
    latte_mla_config cfg;
    int64_t batch, max_len, capacity, row, row_stride, seq_stride, y_stride;
    size_t cache_elems, y_elems; /* with guards */
    void *x, *cache_init, *cos, *sin;
    int32_t lens[8];
    void *lens_d;
} problem;

/* one set of outputs: a cache (with guards) and y (with guards and row gaps), a workspace */
typedef struct {
    const problem *p;
    latte_mla_plan plan;
    void *cache, *y, *ws, *lens_d; /* lens_d: NULL = the problem's */
    size_t ws_bytes;
    uint16_t *cache_h, *y_h;
} outputs;

static void make_problem(problem *p, const latte_mla_config *c, int64_t batch, int64_t max_len) {
    memset(p, 0, sizeof *p);
    p->cfg = *c;
    p->batch = batch;
    p->max_len = max_len;
    p->capacity = max_len + 5;
    p->row = c->kv_lora_rank + c->rope_dim;
    p->row_stride = p->row + 8; /* a gap after every row, also checked */
    p->seq_stride = p->capacity * p->row_stride + GUARD;
    p->y_stride = c->dim + 16;
    p->cache_elems = (size_t)(GUARD + batch * p->seq_stride);
    p->y_elems = (size_t)(GUARD + batch * p->y_stride + GUARD);
    uint16_t *h = (uint16_t *)malloc(p->cache_elems * 2);
    memset(h, GUARD_BYTE, p->cache_elems * 2);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t t = 0; t < p->capacity; t++) fill_bf16(h + GUARD + b * p->seq_stride + t * p->row_stride, (size_t)p->row, 1.0);
    p->cache_init = dev_alloc_copy(h, p->cache_elems * 2);
    free(h);
    size_t xn = (size_t)(batch * c->dim);
    h = (uint16_t *)malloc(xn * 2);
    fill_bf16(h, xn, 1.0);
    p->x = dev_alloc_copy(h, xn * 2);
    free(h);
    for (int64_t b = 0; b < batch; b++) p->lens[b] = (int32_t)test_randint(0, max_len);
    p->lens[0] = (int32_t)max_len;
    p->lens_d = dev_alloc_copy(p->lens, (size_t)batch * 4);
    size_t tn = (size_t)((max_len + 1) * c->rope_dim);
    p->cos = dev_alloc_copy(NULL, tn * 2);
    p->sin = dev_alloc_copy(NULL, tn * 2);
    CHECK_OK(latte_rope_tables(LATTE_ROPE_BF16_REFERENCE, max_len + 1, c->rope_dim, 10000.0f, p->cos, p->sin,
                               LATTE_BACKEND_CUDA, NULL));
    CUDA_OK(cudaDeviceSynchronize());
}
static void free_problem(problem *p) {
    cudaFree(p->x), cudaFree(p->cache_init), cudaFree(p->cos), cudaFree(p->sin), cudaFree(p->lens_d);
}

static void make_outputs(outputs *o, const problem *p, latte_mla_plan plan) {
    memset(o, 0, sizeof *o);
    o->p = p;
    o->plan = plan;
    o->cache = dev_alloc_copy(NULL, p->cache_elems * 2);
    o->y = dev_alloc_copy(NULL, p->y_elems * 2);
    CHECK_OK(latte_mla_workspace_size(plan, p->batch, p->max_len, &o->ws_bytes));
    o->ws = dev_alloc_copy(NULL, o->ws_bytes ? o->ws_bytes : 256);
    o->cache_h = (uint16_t *)malloc(p->cache_elems * 2);
    o->y_h = (uint16_t *)malloc(p->y_elems * 2);
}
static void free_outputs(outputs *o) {
    cudaFree(o->cache), cudaFree(o->y), cudaFree(o->ws);
    free(o->cache_h), free(o->y_h);
}

/* enqueues: reset the cache and y, one step. Nothing synchronizes. */
static latte_status enqueue(outputs *o, cudaStream_t s) {
    const problem *p = o->p;
    cudaMemcpyAsync(o->cache, p->cache_init, p->cache_elems * 2, cudaMemcpyDeviceToDevice, s);
    cudaMemsetAsync(o->y, GUARD_BYTE, p->y_elems * 2, s);
    latte_mla_run_args a;
    memset(&a, 0, sizeof a);
    a.batch = p->batch;
    a.x = p->x;
    a.kv_cache.data = (uint16_t *)o->cache + GUARD;
    a.kv_cache.row_stride = p->row_stride;
    a.kv_cache.batch_stride = p->seq_stride;
    a.kv_cache.capacity = p->capacity;
    a.cache_lens = (const int32_t *)(o->lens_d ? o->lens_d : p->lens_d);
    a.max_cache_len = p->max_len;
    a.rope_cos = p->cos;
    a.rope_sin = p->sin;
    a.rope_max_pos = p->max_len + 1;
    a.y = (uint16_t *)o->y + GUARD;
    a.y_row_stride = p->y_stride;
    return latte_mla_run(o->plan, &a, o->ws, o->ws_bytes, (latte_stream_t)s);
}
static void download(outputs *o, cudaStream_t s) {
    cudaMemcpyAsync(o->cache_h, o->cache, o->p->cache_elems * 2, cudaMemcpyDeviceToHost, s);
    cudaMemcpyAsync(o->y_h, o->y, o->p->y_elems * 2, cudaMemcpyDeviceToHost, s);
    CUDA_OK(cudaStreamSynchronize(s));
}
static int same(const outputs *a, const outputs *b) {
    return !memcmp(a->cache_h, b->cache_h, a->p->cache_elems * 2) && !memcmp(a->y_h, b->y_h, a->p->y_elems * 2);
}

/* guards and untouched cache rows: everything but y's rows and the appended rows equals the initial state */
static void check_guards(const char *what, const outputs *o, const int32_t *lens) {
    const problem *p = o->p;
    uint16_t *init = (uint16_t *)malloc(p->cache_elems * 2);
    CUDA_OK(cudaMemcpy(init, p->cache_init, p->cache_elems * 2, cudaMemcpyDeviceToHost));
    size_t bad_cache = 0, bad_y = 0, nan_y = 0;
    for (size_t i = 0; i < p->cache_elems; i++) {
        int64_t e = (int64_t)i - GUARD, b = e >= 0 ? e / p->seq_stride : -1, in = e - b * p->seq_stride;
        int64_t t = in / p->row_stride, col = in % p->row_stride;
        int appended = b >= 0 && b < p->batch && in < p->capacity * p->row_stride && col < p->row && lens[b] >= 0 &&
                       lens[b] <= p->max_len && t == lens[b];
        if (!appended && o->cache_h[i] != init[i]) bad_cache++;
    }
    for (size_t i = 0; i < p->y_elems; i++) {
        int64_t e = (int64_t)i - GUARD, b = e >= 0 ? e / p->y_stride : -1, col = e - b * p->y_stride;
        int in_row = b >= 0 && b < p->batch && col < p->cfg.dim;
        uint16_t v = o->y_h[i];
        if (!in_row && v != 0x5555) bad_y++;
        int good_len = in_row && lens[b] >= 0 && lens[b] <= p->max_len;
        if (good_len && (v & 0x7fff) > 0x7f80) nan_y++;
    }
    CHECK(bad_cache == 0, "%s: %zu cache elements outside the appended rows changed (guards, gaps, other rows)", what,
          bad_cache);
    CHECK(bad_y == 0, "%s: %zu elements of y's guards / row gaps changed", what, bad_y);
    CHECK(nan_y == 0, "%s: %zu NaN outputs for sequences with valid lengths", what, nan_y);
    free(init);
}

/* ---- threads sharing one plan, each on its own stream ------------------------------------------ */
typedef struct {
    outputs out;
    const outputs *ref;
    int iters;
    long mismatches, failures;
} thread_arg;
static void *run_thread(void *vp) {
    thread_arg *t = (thread_arg *)vp;
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        t->failures++;
        return NULL;
    }
    for (int i = 0; i < t->iters; i++) {
        if (enqueue(&t->out, s) != LATTE_STATUS_SUCCESS) {
            t->failures++;
            continue;
        }
        download(&t->out, s);
        if (!same(&t->out, t->ref)) t->mismatches++;
    }
    cudaStreamDestroy(s);
    return NULL;
}

static void test_mla(void) {
    latte_mla_config ca = gpu_config(16, 512, 256), cb = gpu_config(32, 256, 128);
    latte_mla_plan pa = make_plan(&ca), pb = make_plan(&cb);
    if (!pa || !pb) {
        CHECK(0, "could not create the CUDA plans: %s", latte_last_error());
        latte_mla_plan_destroy(pa), latte_mla_plan_destroy(pb);
        return;
    }
    const int64_t max_len = quick ? 150 : 700;
    problem A, B;
    make_problem(&A, &ca, 4, max_len);
    make_problem(&B, &cb, 3, max_len / 2 + 1);

    /* serial references (legacy default stream, synchronized) */
    outputs refA, refB;
    make_outputs(&refA, &A, pa);
    make_outputs(&refB, &B, pb);
    CHECK_OK(enqueue(&refA, NULL));
    download(&refA, NULL);
    CHECK_OK(enqueue(&refB, NULL));
    download(&refB, NULL);
    check_guards("serial plan A", &refA, A.lens);
    check_guards("serial plan B", &refB, B.lens);

    /* two plans, two streams, interleaved */
    {
        cudaStream_t s1, s2;
        CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
        CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
        outputs oa, ob;
        make_outputs(&oa, &A, pa);
        make_outputs(&ob, &B, pb);
        int iters = quick ? 3 : 20, differ = 0;
        for (int i = 0; i < iters; i++) {
            CHECK_OK(enqueue(&oa, s1));
            CHECK_OK(enqueue(&ob, s2));
            download(&oa, s1);
            download(&ob, s2);
            differ += !same(&oa, &refA) + !same(&ob, &refB);
        }
        CHECK(differ == 0, "two plans on two streams: %d of %d results differ from serial runs", differ, 2 * iters);
        free_outputs(&oa), free_outputs(&ob);
        cudaStreamDestroy(s1), cudaStreamDestroy(s2);
    }

    /* one plan, several host threads, own streams and outputs */
    {
        enum { NT = 4 };
        thread_arg t[NT];
        pthread_t th[NT];
        for (int i = 0; i < NT; i++) {
            memset(&t[i], 0, sizeof t[i]);
            make_outputs(&t[i].out, &A, pa);
            t[i].ref = &refA;
            t[i].iters = quick ? 3 : 15;
        }
        for (int i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, run_thread, &t[i]) == 0, "pthread_create");
        for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
        for (int i = 0; i < NT; i++) {
            CHECK(t[i].failures == 0, "thread %d: %ld failed runs", i, t[i].failures);
            CHECK(t[i].mismatches == 0, "thread %d on the shared plan: %ld of %d results differ from the serial run", i,
                  t[i].mismatches, t[i].iters);
            free_outputs(&t[i].out);
        }
    }

    /* determinism: 100 runs */
    {
        outputs o;
        make_outputs(&o, &A, pa);
        int runs = quick ? 10 : 100, differ = 0;
        for (int i = 0; i < runs; i++) {
            CHECK_OK(enqueue(&o, NULL));
            download(&o, NULL);
            differ += !same(&o, &refA);
        }
        CHECK(differ == 0, "mla determinism: %d of %d runs differ", differ, runs);
        free_outputs(&o);
    }

    /* device-side bad lengths: NaN row, no append, counted; the other sequences as before */
    {
        outputs o;
        make_outputs(&o, &A, pa);
        int32_t lens[8];
        memcpy(lens, A.lens, sizeof lens);
        lens[1] = -1;
        lens[3] = (int32_t)A.max_len + 1;
        o.lens_d = dev_alloc_copy(lens, (size_t)A.batch * 4);
        int64_t count = -1;
        CHECK_OK(latte_mla_plan_bad_lengths(pa, &count, 1, NULL));
        CHECK_OK(enqueue(&o, NULL));
        download(&o, NULL);
        CHECK_OK(latte_mla_plan_bad_lengths(pa, &count, 0, NULL));
        CHECK(count == 2, "bad-length counter %lld, expected 2", (long long)count);
        check_guards("bad lengths", &o, lens);
        for (int64_t b = 0; b < A.batch; b++) {
            const uint16_t *yr = o.y_h + GUARD + b * A.y_stride, *yref = refA.y_h + GUARD + b * A.y_stride;
            int bad = b == 1 || b == 3;
            size_t non_nan = 0;
            for (int64_t j = 0; j < ca.dim; j++) non_nan += (yr[j] & 0x7fff) <= 0x7f80;
            if (bad) CHECK(non_nan == 0, "sequence %lld with a bad length: %zu of y's elements are not NaN", (long long)b, non_nan);
            else CHECK(!memcmp(yr, yref, (size_t)ca.dim * 2), "sequence %lld: y changed when others had bad lengths", (long long)b);
            const uint16_t *cs = o.cache_h + GUARD + b * A.seq_stride, *cref = refA.cache_h + GUARD + b * A.seq_stride;
            if (!bad) CHECK(!memcmp(cs, cref, (size_t)A.seq_stride * 2), "sequence %lld: cache differs from the serial run", (long long)b);
        }
        CHECK_OK(latte_mla_plan_bad_lengths(pa, &count, 1, NULL));
        cudaFree(o.lens_d);
        free_outputs(&o);
    }

    free_outputs(&refA), free_outputs(&refB);
    free_problem(&A), free_problem(&B);
    CHECK_OK(latte_mla_plan_destroy(pa));
    CHECK_OK(latte_mla_plan_destroy(pb));
}

/* ---- QK norm: 100 runs bitwise identical (out of place, so every run sees the same input) -------- */
static void test_qknorm_determinism(void) {
    const int64_t n = 128, dq = 5120 + 24, dk = 1024 + 8; /* odd widths: the vector path and its tail */
    size_t qn = (size_t)(n * dq), kn = (size_t)(n * dk);
    uint16_t *h = (uint16_t *)malloc((qn + kn + (size_t)(dq + dk)) * 2);
    fill_bf16(h, qn + kn, 3.0);
    fill_bf16(h + qn + kn, (size_t)(dq + dk), 1.0);
    void *q = dev_alloc_copy(h, qn * 2), *k = dev_alloc_copy(h + qn, kn * 2);
    void *qw = dev_alloc_copy(h + qn + kn, (size_t)dq * 2), *kw = dev_alloc_copy(h + qn + kn + dq, (size_t)dk * 2);
    void *qo = dev_alloc_copy(NULL, qn * 2), *ko = dev_alloc_copy(NULL, kn * 2);
    uint16_t *r0 = (uint16_t *)malloc((qn + kn) * 2), *r = (uint16_t *)malloc((qn + kn) * 2);
    latte_qknorm_params p = latte_qknorm_params_default(n, q, dq, k, dk, qw, kw, LATTE_DTYPE_BF16);
    p.q_out = qo;
    p.q_out_row_stride = dq;
    p.k_out = ko;
    p.k_out_row_stride = dk;
    int runs = quick ? 10 : 100, differ = 0;
    for (int i = 0; i <= runs; i++) {
        CUDA_OK(cudaMemset(qo, 0xff, qn * 2));
        CUDA_OK(cudaMemset(ko, 0xff, kn * 2));
        CHECK_OK(latte_qknorm_across_heads(&p, LATTE_BACKEND_CUDA, NULL));
        uint16_t *dst = i == 0 ? r0 : r;
        CUDA_OK(cudaMemcpy(dst, qo, qn * 2, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(dst + qn, ko, kn * 2, cudaMemcpyDeviceToHost));
        if (i) differ += memcmp(r, r0, (qn + kn) * 2) != 0;
    }
    CHECK(differ == 0, "qknorm determinism: %d of %d runs differ", differ, runs);
    cudaFree(q), cudaFree(k), cudaFree(qw), cudaFree(kw), cudaFree(qo), cudaFree(ko);
    free(h), free(r0), free(r);
}

/* ---- 1,000 plan create/destroy cycles: no device memory leaks ---------------------------------- */
static void test_plan_cycles(void) {
    latte_mla_config c = gpu_config(16, 64, 64);
    const int64_t H = c.n_heads, R = c.kv_lora_rank, P = c.rope_dim;
    size_t n[5] = {(size_t)(c.q_lora_rank * c.dim), (size_t)((R + P) * c.dim), (size_t)(H * (c.nope_dim + P) * c.q_lora_rank),
                   (size_t)(H * (c.nope_dim + c.v_dim) * R), (size_t)(c.dim * H * c.v_dim)};
    void *d[5];
    for (int i = 0; i < 5; i++) {
        d[i] = dev_alloc_copy(NULL, n[i] * 2);
        CUDA_OK(cudaMemset(d[i], 0x3c, n[i] * 2));
    }
    latte_mla_weights w = {d[0], d[1], d[2], d[3], d[4]};
    latte_mla_plan plan = NULL;
    CHECK_OK(latte_mla_plan_create(&plan, &c, &w, LATTE_BACKEND_CUDA, NULL)); /* warm-up: first-use allocations */
    CHECK_OK(latte_mla_plan_destroy(plan));
    CUDA_OK(cudaDeviceSynchronize());
    size_t free0 = 0, free1 = 0, total = 0;
    CUDA_OK(cudaMemGetInfo(&free0, &total));
    int cycles = quick ? 100 : 1000, failed = 0;
    for (int i = 0; i < cycles; i++) {
        plan = NULL;
        if (latte_mla_plan_create(&plan, &c, &w, LATTE_BACKEND_CUDA, NULL) != LATTE_STATUS_SUCCESS) failed++;
        else if (latte_mla_plan_destroy(plan) != LATTE_STATUS_SUCCESS) failed++;
    }
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemGetInfo(&free1, &total));
    CHECK(failed == 0, "plan create/destroy: %d of %d cycles failed (%s)", failed, cycles, latte_last_error());
    long long lost = (long long)free0 - (long long)free1;
    printf("gpu_reliability: %d plan cycles, device free memory %zu -> %zu (%lld bytes)\n", cycles, free0, free1, lost);
    /* LATTE_TEST_DEVICE_LEAK_CHECK=0 (set by scripts/gpu_sanitize.sh for racecheck/initcheck, whose own device
     * allocations move the free-memory figure; memcheck --leak-check full checks leaks there) */
    const char *lc = getenv("LATTE_TEST_DEVICE_LEAK_CHECK");
    if (lc && lc[0] == '0') printf("gpu_reliability: device leak check off (LATTE_TEST_DEVICE_LEAK_CHECK=0)\n");
    else CHECK(lost <= 2ll << 20, "plan create/destroy leaks device memory: %lld bytes after %d cycles", lost, cycles);
    for (int i = 0; i < 5; i++) cudaFree(d[i]);
}

int main(void) {
    if (!test_gpu_available("gpu_reliability")) return TEST_SKIP;
    const char *q = getenv("LATTE_TEST_QUICK");
    quick = q && q[0] == '1';
    test_seed("gpu_reliability");
    test_qknorm_determinism();
    test_mla();
    test_plan_cycles();
    return test_finish("gpu_reliability");
}
