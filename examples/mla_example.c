/*
 * latte-mla-example: one MLA decode step (DeepSeek-V3/R1 attention block) on a small model, on the GPU
 * when there is one, else on the CPU. The steps are the same for both backends:
 *   1. latte_mla_plan_create: validates the sizes, copies the weights into the plan's own layout;
 *   2. latte_mla_workspace_size + an allocation: scratch memory for runs up to a batch and a cache length;
 *   3. latte_mla_run: appends each sequence's new latent KV row to its cache and writes y;
 *   4. latte_mla_plan_destroy.
 * CUDA backend: every pointer is device memory (cache_lens too), the run is asynchronous on the stream,
 * allocates nothing and can be captured in a CUDA graph.
 */
#include "latte.h"

#include <cuda_runtime_api.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint16_t to_bf16(float f) { /* round to nearest even (finite inputs) */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* n bf16 values, roughly uniform in [-scale, scale] */
static uint16_t *random_bf16(size_t n, float scale, unsigned seed) {
    uint16_t *p = (uint16_t *)malloc(n * 2);
    uint32_t s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = to_bf16(scale * ((float)(s >> 8) / 8388608.0f - 1.0f));
    }
    return p;
}
/* a host buffer on the CPU backend, a device copy of it on the CUDA backend */
static void *on_backend(const void *host, size_t bytes, int gpu) {
    if (!gpu) return (void *)host;
    void *d = NULL;
    cudaMalloc(&d, bytes);
    cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice);
    return d;
}

int main(void) {
    const int gpu = latte_cuda_device_count() > 0;
    const latte_backend backend = gpu ? LATTE_BACKEND_CUDA : LATTE_BACKEND_CPU;

    /* DeepSeek's per-head sizes (kv_lora_rank 512, rope 64, nope 128, v 128) with a small model around them */
    latte_mla_config cfg = latte_mla_config_deepseek_r1();
    cfg.dim = 1024;
    cfg.q_lora_rank = 256;
    cfg.n_heads = 16;
    const int64_t R = cfg.kv_lora_rank, P = cfg.rope_dim, row = R + P;
    const int64_t H = cfg.n_heads, dn = cfg.nope_dim, dv = cfg.v_dim, dim = cfg.dim, dq = cfg.q_lora_rank;

    /* weights, row-major bf16 (layouts in latte.h / spec/mla-decode.md), scaled by 1/sqrt(fan_in) */
    const size_t wsz[5] = {(size_t)(dq * dim), (size_t)(row * dim), (size_t)(H * (dn + P) * dq),
                           (size_t)(H * (dn + dv) * R), (size_t)(dim * H * dv)};
    const size_t fan_in[5] = {(size_t)dim, (size_t)dim, (size_t)dq, (size_t)R, (size_t)(H * dv)};
    void *w_host[5], *w[5];
    for (int i = 0; i < 5; i++) {
        w_host[i] = random_bf16(wsz[i], sqrtf(3.0f / fan_in[i]), 10 + i);
        w[i] = on_backend(w_host[i], wsz[i] * 2, gpu);
    }
    latte_mla_weights weights = {w[0], w[1], w[2], w[3], w[4]};

    latte_mla_plan plan;
    latte_status st = latte_mla_plan_create(&plan, &cfg, &weights, backend, NULL);
    if (st != LATTE_STATUS_SUCCESS) {
        fprintf(stderr, "latte_mla_plan_create: %s\n  %s\n", latte_status_string(st), latte_last_error());
        return 1;
    }
    /* the plan keeps its own copy of the weights: ours can go */
    for (int i = 0; i < 5; i++) {
        if (gpu) cudaFree(w[i]);
        free(w_host[i]);
    }

    /* three sequences holding 10, 0 and 40 tokens, in a cache of 64 rows per sequence */
    enum { BATCH = 3 };
    const int64_t capacity = 64, max_len = 40;
    const int32_t lens[BATCH] = {10, 0, 40};
    uint16_t *x_h = random_bf16((size_t)(BATCH * dim), 1.0f, 1);
    uint16_t *cache_h = random_bf16((size_t)(BATCH * capacity * row), 1.0f, 2);
    uint16_t *y_h = (uint16_t *)calloc((size_t)(BATCH * dim), 2);
    uint16_t *cos_h = (uint16_t *)malloc((size_t)(capacity * P) * 2), *sin_h = (uint16_t *)malloc((size_t)(capacity * P) * 2);

    void *x = on_backend(x_h, (size_t)(BATCH * dim) * 2, gpu);
    void *cache = on_backend(cache_h, (size_t)(BATCH * capacity * row) * 2, gpu);
    void *y = on_backend(y_h, (size_t)(BATCH * dim) * 2, gpu);
    void *lens_b = on_backend(lens, sizeof lens, gpu);
    void *cos = on_backend(cos_h, (size_t)(capacity * P) * 2, gpu), *sin = on_backend(sin_h, (size_t)(capacity * P) * 2, gpu);
    /* RoPE tables (the reference's bf16 kind), written by latte on the chosen backend */
    st = latte_rope_tables(LATTE_ROPE_BF16_REFERENCE, capacity, P, 10000.0f, cos, sin, backend, NULL);

    size_t ws_bytes = 0;
    void *ws = NULL;
    if (st == LATTE_STATUS_SUCCESS) st = latte_mla_workspace_size(plan, BATCH, max_len, &ws_bytes);
    if (st == LATTE_STATUS_SUCCESS) {
        if (gpu) cudaMalloc(&ws, ws_bytes);
        else ws = aligned_alloc(64, (ws_bytes + 63) / 64 * 64); /* the CPU backend needs 16-byte alignment */

        latte_mla_run_args a;
        memset(&a, 0, sizeof a);
        a.batch = BATCH;
        a.x = x;                                   /* x_row_stride 0: rows are dim apart */
        a.kv_cache.data = cache;
        a.kv_cache.batch_stride = capacity * row;  /* elements from one sequence to the next */
        a.kv_cache.row_stride = row;
        a.kv_cache.capacity = capacity;
        a.cache_lens = (const int32_t *)lens_b;    /* the new token goes to row lens[b] */
        a.max_cache_len = max_len;                 /* every lens[b] <= max_len < capacity */
        a.rope_cos = cos;
        a.rope_sin = sin;
        a.rope_max_pos = capacity;
        a.y = y;
        st = latte_mla_run(plan, &a, ws, ws_bytes, NULL);
    }
    if (st != LATTE_STATUS_SUCCESS) {
        fprintf(stderr, "latte MLA step: %s\n  %s\n", latte_status_string(st), latte_last_error());
        return 1;
    }
    if (gpu) cudaMemcpy(y_h, y, (size_t)(BATCH * dim) * 2, cudaMemcpyDeviceToHost); /* waits for the run */
    else memcpy(y_h, y, (size_t)(BATCH * dim) * 2);

    for (int b = 0; b < BATCH; b++) {
        double s = 0;
        for (int64_t i = 0; i < dim; i++) s += (double)from_bf16(y_h[b * dim + i]) * from_bf16(y_h[b * dim + i]);
        printf("sequence %d (%d cached tokens): |y| = %.4f, y[0..2] = %.4f %.4f %.4f\n", b, lens[b], sqrt(s),
               from_bf16(y_h[b * dim]), from_bf16(y_h[b * dim + 1]), from_bf16(y_h[b * dim + 2]));
    }
    printf("MLA decode step on the %s backend: ok\n", gpu ? "CUDA" : "CPU");

    latte_mla_plan_destroy(plan);
    if (gpu) {
        cudaFree(x), cudaFree(cache), cudaFree(y), cudaFree(lens_b), cudaFree(cos), cudaFree(sin), cudaFree(ws);
    } else {
        free(ws);
    }
    free(x_h), free(cache_h), free(y_h), free(cos_h), free(sin_h);
    return 0;
}
