/*
 * latte-demo (make demo): the MLA decode layer of DeepSeek-R1 at the reference shapes, checked and timed.
 *
 * With a GPU: batch 128, cache lengths 512, 2048, 4096, 6144 (capacity 8192), random weights and cache
 * like the reference problem. For each length it
 *   1. runs the layer on the GPU,
 *   2. checks 4 sampled sequences against the CPU backend (the same layer in plain C): every element of
 *      y must satisfy |y - y_ref| <= 8e-3 + 2e-2 |y_ref| (the reference's check), and the appended cache
 *      row must match,
 *   3. times it: median of 50 replays of a CUDA graph holding one decode step.
 * Without a GPU: the real sizes with batch 2 on the CPU backend, and a QK-norm call.
 *
 * It is also the longer example of the C API: plan -> workspace -> tune (optional, once) -> run (or capture
 * into a graph) -> destroy.
 * Exit status: 0 when every check passed, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "latte.h"

#include <cuda_runtime_api.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- small helpers ---------------------------------------------------------------------------- */

/* Stop on a CUDA runtime error: this is a demo, not a library. */
#define CUDA_OK(call)                                                                                   \
    do {                                                                                                \
        cudaError_t e_ = (call);                                                                        \
        if (e_ != cudaSuccess) {                                                                        \
            fprintf(stderr, "latte-demo: %s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

/* Report a failed latte call with the library's message; returns 1 on failure. */
static int failed(latte_status st, const char *what) {
    if (st == LATTE_STATUS_SUCCESS) return 0;
    fprintf(stderr, "latte-demo: %s: %s\n  %s\n", what, latte_status_string(st), latte_last_error());
    return 1;
}

static float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t f32_to_bf16(float f) { /* round to nearest even */
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Pseudo-random N(0,1)-like values from a counter-based hash: the sum of four 16-bit uniforms (Irwin-Hall),
 * scaled to unit variance. Cheap enough to make DeepSeek's 374 MB of weights in about a second. */
static uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static void fill_normal_bf16(uint16_t *p, size_t n, uint64_t seed, float scale) {
    const float k = 1.7320508f / 65536.0f; /* sqrt(12 / 4) per 16-bit unit */
    for (size_t i = 0; i < n; i++) {
        uint64_t h = mix64(seed * 0xd1342543de82ef95ull + i);
        float s = (float)(h & 0xffff) + (float)((h >> 16) & 0xffff) + (float)((h >> 32) & 0xffff) + (float)(h >> 48);
        p[i] = f32_to_bf16(scale * k * (s - 131070.0f));
    }
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* host workspace for the CPU backend: 16-byte aligned at least (latte.h); 64 = a cache line */
static void *host_workspace(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- the layer's weights, made on the host ---------------------------------------------------- */

/* The five matrices in latte_mla_weights order: randn / sqrt(fan_in), as the reference makes them. */
typedef struct {
    uint16_t *m[5];
    size_t rows[5], cols[5];
} host_weights;

static host_weights make_weights(const latte_mla_config *c, uint64_t seed) {
    host_weights w;
    const size_t rows[5] = {(size_t)c->q_lora_rank, (size_t)(c->kv_lora_rank + c->rope_dim),
                            (size_t)(c->n_heads * (c->nope_dim + c->rope_dim)),
                            (size_t)(c->n_heads * (c->nope_dim + c->v_dim)), (size_t)c->dim};
    const size_t cols[5] = {(size_t)c->dim, (size_t)c->dim, (size_t)c->q_lora_rank, (size_t)c->kv_lora_rank,
                            (size_t)(c->n_heads * c->v_dim)};
    for (int i = 0; i < 5; i++) {
        w.rows[i] = rows[i];
        w.cols[i] = cols[i];
        w.m[i] = (uint16_t *)malloc(rows[i] * cols[i] * 2);
        if (!w.m[i]) {
            fprintf(stderr, "latte-demo: out of host memory\n");
            exit(1);
        }
        fill_normal_bf16(w.m[i], rows[i] * cols[i], seed + (uint64_t)i, 1.0f / sqrtf((float)cols[i]));
    }
    return w;
}

static latte_mla_weights as_latte_weights(void *const m[5]) {
    latte_mla_weights w = {m[0], m[1], m[2], m[3], m[4]};
    return w;
}

static void free_weights(host_weights *w) {
    for (int i = 0; i < 5; i++) free(w->m[i]), w->m[i] = NULL;
}

/* the reference's check; returns the elements outside the tolerance (NaN patterns must agree) */
static int64_t reference_misses(const uint16_t *got, const uint16_t *want, size_t n, double *rel_err) {
    int64_t miss = 0;
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        float g = bf16_to_f32(got[i]), e = bf16_to_f32(want[i]);
        if (isnan(g) || isnan(e)) {
            miss += isnan(g) != isnan(e);
            continue;
        }
        if (fabsf(g - e) > 8e-3f + 2e-2f * fabsf(e)) miss++;
        num += (double)(g - e) * (g - e);
        den += (double)e * e;
    }
    *rel_err = den > 0 ? sqrt(num / den) : sqrt(num);
    return miss;
}

/* ================================================================================================ */
/* GPU: the reference shapes                                                                        */
/* ================================================================================================ */
static int gpu_demo(void) {
    enum { BATCH = 128, N_LENS = 4, N_CHECK = 4, REPS = 50 };
    const int64_t lens[N_LENS] = {512, 2048, 4096, 6144};
    const int64_t max_len = 6144, capacity = 8192;
    const int check_seq[N_CHECK] = {0, 37, 90, 127}; /* sampled sequences checked on the CPU */
    const latte_mla_config cfg = latte_mla_config_deepseek_r1();
    const int64_t dim = cfg.dim, row = cfg.kv_lora_rank + cfg.rope_dim;
    int bad = 0;

    struct cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    printf("latte-demo: %s (%d SMs); MLA decode layer, DeepSeek-R1 sizes, batch %d, cache capacity %lld\n",
           prop.name, prop.multiProcessorCount, BATCH, (long long)capacity);

    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    /* 1. Weights: made on the host, uploaded, handed to a CUDA plan (which keeps its own copy, so the
     *    uploaded ones can be freed) and to a CPU plan (the checker). */
    double t0 = now_s();
    host_weights hw = make_weights(&cfg, 1);
    void *dw[5];
    for (int i = 0; i < 5; i++) {
        CUDA_OK(cudaMalloc(&dw[i], hw.rows[i] * hw.cols[i] * 2));
        CUDA_OK(cudaMemcpy(dw[i], hw.m[i], hw.rows[i] * hw.cols[i] * 2, cudaMemcpyHostToDevice));
    }
    latte_mla_weights weights = as_latte_weights(dw);
    latte_mla_plan plan = NULL, cpu_plan = NULL;
    if (failed(latte_mla_plan_create(&plan, &cfg, &weights, LATTE_BACKEND_CUDA, stream), "CUDA plan")) return 1;
    for (int i = 0; i < 5; i++) CUDA_OK(cudaFree(dw[i]));
    latte_mla_weights host_w = as_latte_weights((void *const *)hw.m);
    if (failed(latte_mla_plan_create(&cpu_plan, &cfg, &host_w, LATTE_BACKEND_CPU, NULL), "CPU plan (checker)")) {
        cpu_plan = NULL;
        bad = 1;
    }
    free_weights(&hw);

    /* 2. Inputs: x, the cache (rows < max_len random, the rest zero), RoPE tables (the reference's bf16 kind). */
    uint16_t *x = (uint16_t *)malloc((size_t)(BATCH * dim) * 2);
    fill_normal_bf16(x, (size_t)(BATCH * dim), 100, 1.0f);
    void *x_d, *y_d, *cache_d, *cos_d, *sin_d;
    int32_t *lens_d;
    CUDA_OK(cudaMalloc(&x_d, (size_t)(BATCH * dim) * 2));
    CUDA_OK(cudaMalloc(&y_d, (size_t)(BATCH * dim) * 2));
    CUDA_OK(cudaMalloc(&cache_d, (size_t)(BATCH * capacity * row) * 2));
    CUDA_OK(cudaMalloc((void **)&lens_d, BATCH * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&cos_d, (size_t)(capacity * cfg.rope_dim) * 2));
    CUDA_OK(cudaMalloc(&sin_d, (size_t)(capacity * cfg.rope_dim) * 2));
    CUDA_OK(cudaMemcpy(x_d, x, (size_t)(BATCH * dim) * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(cache_d, 0, (size_t)(BATCH * capacity * row) * 2));
    uint16_t *seq = (uint16_t *)malloc((size_t)(max_len * row) * 2);
    for (int b = 0; b < BATCH; b++) { /* one sequence at a time: little host memory */
        fill_normal_bf16(seq, (size_t)(max_len * row), 1000 + (uint64_t)b, 1.0f);
        CUDA_OK(cudaMemcpy((uint16_t *)cache_d + (size_t)b * capacity * row, seq, (size_t)(max_len * row) * 2,
                           cudaMemcpyHostToDevice));
    }
    free(seq);
    if (failed(latte_rope_tables(LATTE_ROPE_BF16_REFERENCE, capacity, cfg.rope_dim, 10000.0f, cos_d, sin_d,
                                 LATTE_BACKEND_CUDA, stream), "rope tables (CUDA)"))
        return 1;
    uint16_t *cos_h = (uint16_t *)malloc((size_t)(capacity * cfg.rope_dim) * 2);
    uint16_t *sin_h = (uint16_t *)malloc((size_t)(capacity * cfg.rope_dim) * 2);
    if (failed(latte_rope_tables(LATTE_ROPE_BF16_REFERENCE, capacity, cfg.rope_dim, 10000.0f, cos_h, sin_h,
                                 LATTE_BACKEND_CPU, NULL), "rope tables (CPU)"))
        return 1;

    /* 3. Workspace: sized once for the largest length, reused by every run. */
    size_t ws_bytes = 0;
    void *ws = NULL;
    if (failed(latte_mla_workspace_size(plan, BATCH, max_len, &ws_bytes), "workspace size")) return 1;
    CUDA_OK(cudaMalloc(&ws, ws_bytes));
    CUDA_OK(cudaStreamSynchronize(stream));
    printf("setup (weights, cache %.1f GB, plans): %.1f s; workspace %.1f MB\n",
           (double)(BATCH * capacity * row) * 2 / 1e9, now_s() - t0, ws_bytes / 1e6);

    /* 4. Optional, once at startup (before capturing graphs): measure the projection GEMMs' candidates for
     *    this batch and keep the fastest in the plan. Every later run of this batch uses them. */
    const double t_tune = now_s();
    if (failed(latte_mla_plan_tune(plan, BATCH, max_len, ws, ws_bytes, stream), "latte_mla_plan_tune")) {
        bad = 1;
    } else {
        char desc[1024];
        if (!failed(latte_mla_plan_describe(plan, BATCH, desc, sizeof desc), "latte_mla_plan_describe"))
            printf("projections tuned for batch %d in %.2f s:\n%s", BATCH, now_s() - t_tune, desc);
    }
    printf("\n");

    /* host buffers of the check: the sampled sequences as a small batch of their own */
    uint16_t *cx = (uint16_t *)malloc((size_t)(N_CHECK * dim) * 2);
    uint16_t *cy = (uint16_t *)malloc((size_t)(N_CHECK * dim) * 2);
    uint16_t *gy = (uint16_t *)malloc((size_t)(N_CHECK * dim) * 2);
    uint16_t *grow = (uint16_t *)malloc((size_t)row * 2);
    uint16_t *ccache = (uint16_t *)malloc((size_t)(N_CHECK * (max_len + 1) * row) * 2);
    int32_t clens[N_CHECK];
    for (int i = 0; i < N_CHECK; i++) memcpy(cx + (size_t)i * dim, x + (size_t)check_seq[i] * dim, (size_t)dim * 2);
    size_t cws_bytes = 0;
    void *cws = NULL;
    if (cpu_plan && !failed(latte_mla_workspace_size(cpu_plan, N_CHECK, max_len, &cws_bytes), "CPU workspace size"))
        cws = host_workspace(cws_bytes);

    cudaEvent_t ev0, ev1;
    CUDA_OK(cudaEventCreate(&ev0));
    CUDA_OK(cudaEventCreate(&ev1));
    double med_us[N_LENS];
    int64_t misses[N_LENS], row_misses[N_LENS];
    double rel[N_LENS];

    for (int li = 0; li < N_LENS; li++) {
        const int64_t L = lens[li];
        med_us[li] = NAN;
        misses[li] = row_misses[li] = -1;
        rel[li] = NAN;

        /* every sequence holds L tokens; the new token goes to row L */
        int32_t lens_h[BATCH];
        for (int b = 0; b < BATCH; b++) lens_h[b] = (int32_t)L;
        CUDA_OK(cudaMemcpy(lens_d, lens_h, sizeof lens_h, cudaMemcpyHostToDevice));

        /* the sampled sequences' cache rows as they are before this step */
        for (int i = 0; i < N_CHECK; i++)
            CUDA_OK(cudaMemcpy(ccache + (size_t)i * (L + 1) * row, (uint16_t *)cache_d + (size_t)check_seq[i] * capacity * row,
                               (size_t)(L * row) * 2, cudaMemcpyDeviceToHost));

        latte_mla_run_args args;
        memset(&args, 0, sizeof args);
        args.batch = BATCH;
        args.x = x_d;                          /* x_row_stride 0: dim */
        args.kv_cache.data = cache_d;
        args.kv_cache.batch_stride = capacity * row;
        args.kv_cache.row_stride = row;
        args.kv_cache.capacity = capacity;
        args.cache_lens = lens_d;
        args.max_cache_len = L;
        args.rope_cos = cos_d;
        args.rope_sin = sin_d;
        args.rope_max_pos = capacity;
        args.y = y_d;                          /* y_row_stride 0: dim */

        /* one decode step on the GPU */
        if (failed(latte_mla_run(plan, &args, ws, ws_bytes, stream), "latte_mla_run (CUDA)")) {
            bad = 1;
            continue;
        }
        CUDA_OK(cudaStreamSynchronize(stream));

        /* the same step for the sampled sequences on the CPU backend */
        if (cpu_plan && cws) {
            for (int i = 0; i < N_CHECK; i++) clens[i] = (int32_t)L;
            latte_mla_run_args c = args;
            c.batch = N_CHECK;
            c.x = cx;
            c.kv_cache.data = ccache;
            c.kv_cache.batch_stride = (L + 1) * row;
            c.kv_cache.capacity = L + 1;
            c.cache_lens = clens;
            c.rope_cos = cos_h;
            c.rope_sin = sin_h;
            c.y = cy;
            double tc = now_s();
            if (failed(latte_mla_run(cpu_plan, &c, cws, cws_bytes, NULL), "latte_mla_run (CPU)")) {
                bad = 1;
            } else {
                tc = now_s() - tc;
                misses[li] = row_misses[li] = 0;
                for (int i = 0; i < N_CHECK; i++) {
                    const int b = check_seq[i];
                    CUDA_OK(cudaMemcpy(gy + (size_t)i * dim, (uint16_t *)y_d + (size_t)b * dim, (size_t)dim * 2,
                                       cudaMemcpyDeviceToHost));
                    CUDA_OK(cudaMemcpy(grow, (uint16_t *)cache_d + ((size_t)b * capacity + L) * row, (size_t)row * 2,
                                       cudaMemcpyDeviceToHost));
                    double r;
                    row_misses[li] += reference_misses(grow, ccache + ((size_t)i * (L + 1) + L) * row, (size_t)row, &r);
                }
                misses[li] = reference_misses(gy, cy, (size_t)(N_CHECK * dim), &rel[li]);
                if (misses[li] || row_misses[li]) bad = 1;
                printf("len %5lld: check vs CPU backend on %d sequences (%.1f s): %lld of %lld y elements outside "
                       "tolerance, rel. error %.2e, appended rows %s\n",
                       (long long)L, N_CHECK, tc, (long long)misses[li], (long long)(N_CHECK * dim), rel[li],
                       row_misses[li] ? "DIFFER" : "match");
            }
        }

        /* timing: capture one step in a CUDA graph, replay it (each replay rewrites the same cache row) */
        cudaGraph_t graph = NULL;
        cudaGraphExec_t exec;
        CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        latte_status st = latte_mla_run(plan, &args, ws, ws_bytes, stream);
        cudaError_t ce = cudaStreamEndCapture(stream, &graph);
        if (failed(st, "latte_mla_run (capture)") || ce != cudaSuccess) {
            if (ce != cudaSuccess) fprintf(stderr, "latte-demo: graph capture: %s\n", cudaGetErrorString(ce));
            (void)cudaGetLastError();
            bad = 1;
            if (graph) cudaGraphDestroy(graph);
            continue;
        }
        CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
        for (int i = 0; i < 5; i++) CUDA_OK(cudaGraphLaunch(exec, stream));
        double us[REPS];
        for (int r = 0; r < REPS; r++) {
            float ms;
            CUDA_OK(cudaEventRecord(ev0, stream));
            CUDA_OK(cudaGraphLaunch(exec, stream));
            CUDA_OK(cudaEventRecord(ev1, stream));
            CUDA_OK(cudaEventSynchronize(ev1));
            CUDA_OK(cudaEventElapsedTime(&ms, ev0, ev1));
            us[r] = 1e3 * ms;
        }
        qsort(us, REPS, sizeof us[0], cmp_double);
        med_us[li] = 0.5 * (us[REPS / 2 - 1] + us[REPS / 2]);
        printf("len %5lld: %.1f us per decode step (median of %d graph replays)\n", (long long)L, med_us[li], REPS);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
    }

    int64_t bad_lens = 0;
    if (!failed(latte_mla_plan_bad_lengths(plan, &bad_lens, 0, stream), "bad lengths") && bad_lens) {
        printf("the plan rejected %lld sequence lengths (expected none)\n", (long long)bad_lens);
        bad = 1;
    }

    /* the table: bytes = weights + cache read once; flops = projections + attention (absorbed) */
    const double welems = (double)cfg.q_lora_rank * dim + (double)row * dim +
                          (double)cfg.n_heads * (cfg.nope_dim + cfg.rope_dim) * cfg.q_lora_rank +
                          (double)cfg.n_heads * (cfg.nope_dim + cfg.v_dim) * cfg.kv_lora_rank +
                          (double)dim * cfg.n_heads * cfg.v_dim;
    const double anchor_us[N_LENS] = {295, 369, 477, 597}; /* cuBLAS + FlashMLA, H200, shared/anchors.md */
    printf("\nMLA decode layer, %s, batch %d, DeepSeek-R1 sizes, reference key convention\n", prop.name, BATCH);
    printf("%6s %10s %8s %9s %14s %13s %20s\n", "len", "us", "TB/s", "TFLOP/s", "misses (of y)", "rel. error",
           "cuBLAS+FlashMLA*");
    double log_sum = 0;
    int n_timed = 0;
    for (int li = 0; li < N_LENS; li++) {
        const double T = (double)lens[li] + 1;
        const double bytes = 2 * welems + (double)BATCH * T * row * 2;
        const double flops = 2.0 * BATCH * welems + 2.0 * BATCH * cfg.n_heads * T * (row + cfg.kv_lora_rank);
        char miss[32] = "not checked";
        if (misses[li] >= 0) snprintf(miss, sizeof miss, "%lld of %lld", (long long)misses[li], (long long)(N_CHECK * dim));
        printf("%6lld %10.1f %8.2f %9.0f %14s %13.2e %12.0f us %5.2fx\n", (long long)lens[li], med_us[li],
               bytes / (med_us[li] * 1e-6) / 1e12, flops / (med_us[li] * 1e-6) / 1e12, miss, rel[li], anchor_us[li],
               anchor_us[li] / med_us[li]);
        if (isfinite(med_us[li])) log_sum += log(med_us[li]), n_timed++;
    }
    if (n_timed == N_LENS)
        printf("geometric mean %.1f us (cuBLAS+FlashMLA* 420 us)\n", exp(log_sum / N_LENS));
    printf("* cuBLAS+FlashMLA (keys stored rotated) measured on an H200 (shared/anchors.md), not in this run; "
           "\"x\" = its time / ours.\n");
    printf("latte-demo: %s\n", bad ? "FAILED" : "all checks passed");

    latte_mla_plan_destroy(plan);
    latte_mla_plan_destroy(cpu_plan);
    cudaEventDestroy(ev0);
    cudaEventDestroy(ev1);
    cudaFree(x_d), cudaFree(y_d), cudaFree(cache_d), cudaFree(lens_d), cudaFree(cos_d), cudaFree(sin_d), cudaFree(ws);
    cudaStreamDestroy(stream);
    free(x), free(cos_h), free(sin_h), free(cx), free(cy), free(gy), free(grow), free(ccache), free(cws);
    return bad;
}

/* ================================================================================================ */
/* No GPU: the real sizes with a small batch on the CPU backend                                     */
/* ================================================================================================ */
static int cpu_demo(void) {
    enum { BATCH = 2 };
    const int32_t lens[BATCH] = {100, 37};
    const int64_t capacity = 128;
    const latte_mla_config cfg = latte_mla_config_deepseek_r1();
    const int64_t dim = cfg.dim, row = cfg.kv_lora_rank + cfg.rope_dim;
    int bad = 0;
    printf("no CUDA device: running a small case on the CPU backend\n");

    double t0 = now_s();
    host_weights hw = make_weights(&cfg, 1);
    latte_mla_weights weights = as_latte_weights((void *const *)hw.m);
    latte_mla_plan plan = NULL;
    latte_status st = latte_mla_plan_create(&plan, &cfg, &weights, LATTE_BACKEND_CPU, NULL);
    free_weights(&hw); /* the plan has its own copy */
    if (failed(st, "CPU plan")) return 1;
    printf("weights and plan: %.1f s\n", now_s() - t0);

    uint16_t *x = (uint16_t *)malloc((size_t)(BATCH * dim) * 2), *y = (uint16_t *)malloc((size_t)(BATCH * dim) * 2);
    uint16_t *cache = (uint16_t *)calloc((size_t)(BATCH * capacity * row), 2);
    uint16_t *cos = (uint16_t *)malloc((size_t)(capacity * cfg.rope_dim) * 2);
    uint16_t *sin = (uint16_t *)malloc((size_t)(capacity * cfg.rope_dim) * 2);
    fill_normal_bf16(x, (size_t)(BATCH * dim), 100, 1.0f);
    for (int b = 0; b < BATCH; b++) fill_normal_bf16(cache + (size_t)b * capacity * row, (size_t)(lens[b] * row), 1000 + (uint64_t)b, 1.0f);
    bad |= failed(latte_rope_tables(LATTE_ROPE_BF16_REFERENCE, capacity, cfg.rope_dim, 10000.0f, cos, sin,
                                    LATTE_BACKEND_CPU, NULL), "rope tables");

    size_t ws_bytes = 0;
    void *ws = NULL;
    bad |= failed(latte_mla_workspace_size(plan, BATCH, 100, &ws_bytes), "workspace size");
    if (!bad) ws = host_workspace(ws_bytes);
    latte_mla_run_args a;
    memset(&a, 0, sizeof a);
    a.batch = BATCH;
    a.x = x;
    a.kv_cache.data = cache;
    a.kv_cache.batch_stride = capacity * row;
    a.kv_cache.row_stride = row;
    a.kv_cache.capacity = capacity;
    a.cache_lens = lens;
    a.max_cache_len = 100;
    a.rope_cos = cos;
    a.rope_sin = sin;
    a.rope_max_pos = capacity;
    a.y = y;
    if (!bad) {
        double t = now_s();
        bad |= failed(latte_mla_run(plan, &a, ws, ws_bytes, NULL), "latte_mla_run (CPU)");
        t = now_s() - t;
        for (int b = 0; b < BATCH && !bad; b++) {
            double s = 0;
            for (int64_t i = 0; i < dim; i++) s += (double)bf16_to_f32(y[b * dim + i]) * bf16_to_f32(y[b * dim + i]);
            printf("MLA decode step, sequence %d (cache length %d): |y| = %.4f\n", b, lens[b], sqrt(s));
        }
        if (!bad) printf("MLA decode step, batch %d: %.3f s on the CPU backend\n", BATCH, t);
    }
    latte_mla_plan_destroy(plan);
    free(x), free(y), free(cache), free(cos), free(sin), free(ws);

    /* QK RMSNorm across heads, in place: q [64, 16 heads x 128], k [64, 4 heads x 128] (GQA widths) */
    enum { N = 64, DQ = 2048, DK = 512 };
    uint16_t *q = (uint16_t *)malloc(N * DQ * 2), *k = (uint16_t *)malloc(N * DK * 2);
    uint16_t *wq = (uint16_t *)malloc(DQ * 2), *wk = (uint16_t *)malloc(DK * 2);
    fill_normal_bf16(q, N * DQ, 7, 3.0f);
    fill_normal_bf16(k, N * DK, 8, 0.5f);
    for (int i = 0; i < DQ; i++) wq[i] = f32_to_bf16(1.0f);
    for (int i = 0; i < DK; i++) wk[i] = f32_to_bf16(1.0f);
    latte_qknorm_params p = latte_qknorm_params_default(N, q, DQ, k, DK, wq, wk, LATTE_DTYPE_BF16);
    double t = now_s();
    if (!failed(latte_qknorm_across_heads(&p, LATTE_BACKEND_CPU, NULL), "QK norm (CPU)")) {
        t = now_s() - t;
        double sq = 0, sk = 0;
        for (int i = 0; i < DQ; i++) sq += (double)bf16_to_f32(q[i]) * bf16_to_f32(q[i]);
        for (int i = 0; i < DK; i++) sk += (double)bf16_to_f32(k[i]) * bf16_to_f32(k[i]);
        printf("QK norm, q [%d, %d] and k [%d, %d] bf16 in place: %.1f us; token 0 RMS after: q %.4f, k %.4f (weights 1)\n",
               N, DQ, N, DK, t * 1e6, sqrt(sq / DQ), sqrt(sk / DK));
    } else {
        bad = 1;
    }
    free(q), free(k), free(wq), free(wk);
    printf("latte-demo: %s\n", bad ? "FAILED" : "done");
    return bad;
}

int main(void) {
    printf("latte %d.%d.%d\n", latte_version() / 10000, latte_version() / 100 % 100, latte_version() % 100);
    return latte_cuda_device_count() > 0 ? gpu_demo() : cpu_demo();
}
