/*
 * MLA decode layer: host API and validation.
 *
 * Everything the host can check is checked here, before any backend runs: configuration, pointers,
 * sizes, strides, alignment (CUDA), workspace size. The device-side cache lengths cannot be seen from
 * the host; the backends guard them (NaN output, no append, error counter).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

latte_mla_config latte_mla_config_deepseek_r1(void) {
    latte_mla_config c;
    c.dim = 7168;
    c.q_lora_rank = 1536;
    c.kv_lora_rank = 512;
    c.rope_dim = 64;
    c.nope_dim = 128;
    c.v_dim = 128;
    c.n_heads = 128;
    c.softmax_scale = 0.0f;
    c.key_convention = LATTE_MLA_KEYS_ROTATED_AT_READ;
    return c;
}

/* Shapes the CUDA kernels are written for. They are run-time values, but the kernels tile them:
 * every width a multiple of 16 (mma tiles, 16-byte rows), the latent/rope split as in the spec. */
static latte_status check_config(const latte_mla_config *c, latte_backend backend) {
#define POSITIVE(field)                                                                                 \
    if (c->field < 1 || c->field > (1 << 20))                                                           \
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "config." #field ": %lld is not in [1, 2^20]", \
                               (long long)c->field);
    POSITIVE(dim) POSITIVE(q_lora_rank) POSITIVE(kv_lora_rank) POSITIVE(rope_dim) POSITIVE(nope_dim)
    POSITIVE(v_dim) POSITIVE(n_heads)
#undef POSITIVE
    if (c->rope_dim % 2)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "config.rope_dim: %lld is odd (NeoX rope splits it in halves)",
                               (long long)c->rope_dim);
    if (!(c->softmax_scale >= 0.0f) || isinf(c->softmax_scale))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "config.softmax_scale: %g is not finite and >= 0 (0 means 1/sqrt(nope_dim + rope_dim))",
                               (double)c->softmax_scale);
    if (c->key_convention != LATTE_MLA_KEYS_ROTATED_AT_READ && c->key_convention != LATTE_MLA_KEYS_STORED_ROTATED)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "config.key_convention: %d is not a latte_mla_key_convention",
                               (int)c->key_convention);
    if (backend == LATTE_BACKEND_CUDA) {
        /* The CUDA kernels are built for DeepSeek's per-head sizes; other ranks and head counts are
         * run-time values but must keep the tiling the kernels rely on. */
        if (c->kv_lora_rank != 512 || c->rope_dim != 64 || c->nope_dim != 128 || c->v_dim != 128)
            return latte_set_error(LATTE_STATUS_NOT_SUPPORTED,
                                   "config: the CUDA backend supports kv_lora_rank 512, rope_dim 64, nope_dim 128, "
                                   "v_dim 128 (got %lld, %lld, %lld, %lld); use the CPU backend for other sizes",
                                   (long long)c->kv_lora_rank, (long long)c->rope_dim, (long long)c->nope_dim,
                                   (long long)c->v_dim);
        if (c->dim % 64 || c->q_lora_rank % 64)
            return latte_set_error(LATTE_STATUS_NOT_SUPPORTED,
                                   "config: the CUDA backend needs dim and q_lora_rank multiples of 64 (got %lld, %lld)",
                                   (long long)c->dim, (long long)c->q_lora_rank);
        if (c->n_heads % 16 || c->n_heads > 128)
            return latte_set_error(LATTE_STATUS_NOT_SUPPORTED,
                                   "config.n_heads: %lld; the CUDA backend needs a multiple of 16, at most 128",
                                   (long long)c->n_heads);
    }
    return LATTE_STATUS_SUCCESS;
}

static latte_status check_backend(latte_backend backend) {
    if (backend == LATTE_BACKEND_CPU) return LATTE_STATUS_SUCCESS;
    if (backend == LATTE_BACKEND_CUDA) return latte_cuda_require_device();
    return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "backend: %d is not a latte_backend", (int)backend);
}

/* CUDA backend: reject host pointers and misaligned pointers up front. */
static latte_status check_pointer(const void *p, const char *name, latte_backend backend, size_t align) {
    if (!p) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "%s: null pointer", name);
    if ((uintptr_t)p % align)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "%s: pointer %p is not %zu-byte aligned", name, p, align);
    if (backend == LATTE_BACKEND_CUDA && latte_cuda_pointer_is_device(p) == 0)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "%s: %p is host memory, but the CUDA backend needs device memory", name, p);
    return LATTE_STATUS_SUCCESS;
}

latte_status latte_mla_plan_create(latte_mla_plan *plan, const latte_mla_config *config,
                                   const latte_mla_weights *weights, latte_backend backend, latte_stream_t stream) {
    latte_status st;
    if (!plan) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "plan: null pointer");
    if (!config) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "config: null pointer");
    if (!weights) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "weights: null pointer");
    if ((st = check_backend(backend))) return st;
    if ((st = check_config(config, backend))) return st;
    size_t align = backend == LATTE_BACKEND_CUDA ? 16 : 2;
    if ((st = check_pointer(weights->wq_down, "weights.wq_down", backend, align))) return st;
    if ((st = check_pointer(weights->wkv_down, "weights.wkv_down", backend, align))) return st;
    if ((st = check_pointer(weights->wq_up, "weights.wq_up", backend, align))) return st;
    if ((st = check_pointer(weights->wkv_up, "weights.wkv_up", backend, align))) return st;
    if ((st = check_pointer(weights->wo, "weights.wo", backend, align))) return st;

    struct latte_mla_plan_s *p = (struct latte_mla_plan_s *)calloc(1, sizeof *p);
    if (!p) return latte_set_error(LATTE_STATUS_OUT_OF_MEMORY, "plan: host allocation of %zu bytes failed", sizeof *p);
    p->config = *config;
    if (p->config.softmax_scale == 0.0f)
        p->config.softmax_scale = (float)(1.0 / sqrt((double)(config->nope_dim + config->rope_dim)));
    p->backend = backend;
    st = backend == LATTE_BACKEND_CPU ? latte_cpu_mla_plan_init(p, weights) : latte_cuda_mla_plan_init(p, weights, stream);
    if (st) {
        free(p); /* the backend freed whatever it had taken before failing */
        return st;
    }
    *plan = p;
    return latte_clear_error();
}

latte_status latte_mla_plan_destroy(latte_mla_plan plan) {
    if (!plan) return latte_clear_error();
    if (plan->backend == LATTE_BACKEND_CPU)
        latte_cpu_mla_plan_free(plan);
    else
        latte_cuda_mla_plan_free(plan);
    free(plan);
    return latte_clear_error();
}

static latte_status check_sizes(latte_mla_plan plan, int64_t batch, int64_t max_cache_len) {
    if (!plan) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "plan: null");
    if (batch < 1 || batch > (1 << 20))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "batch: %lld is not in [1, 2^20]", (long long)batch);
    if (max_cache_len < 0 || max_cache_len > (1 << 24))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "max_cache_len: %lld is not in [0, 2^24]",
                               (long long)max_cache_len);
    return LATTE_STATUS_SUCCESS;
}

latte_status latte_mla_workspace_size(latte_mla_plan plan, int64_t batch, int64_t max_cache_len, size_t *workspace_bytes) {
    latte_status st;
    if (!workspace_bytes) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "workspace_bytes: null pointer");
    if ((st = check_sizes(plan, batch, max_cache_len))) return st;
    *workspace_bytes = plan->backend == LATTE_BACKEND_CPU ? latte_cpu_mla_workspace_size(plan, batch, max_cache_len)
                                                          : latte_cuda_mla_workspace_size(plan, batch, max_cache_len);
    return latte_clear_error();
}

latte_status latte_mla_plan_tune(latte_mla_plan plan, int64_t batch, int64_t max_cache_len, void *workspace,
                                 size_t workspace_bytes, latte_stream_t stream) {
    latte_status st;
    if ((st = check_sizes(plan, batch, max_cache_len))) return st;
    const int cuda = plan->backend == LATTE_BACKEND_CUDA;
    const size_t need = cuda ? latte_cuda_mla_workspace_size(plan, batch, max_cache_len)
                             : latte_cpu_mla_workspace_size(plan, batch, max_cache_len);
    if (need > 0 && !workspace)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "workspace: null, but %zu bytes are needed", need);
    if (workspace_bytes < need)
        return latte_set_error(LATTE_STATUS_INSUFFICIENT_WORKSPACE,
                               "workspace: %zu bytes given, %zu needed for batch %lld, max_cache_len %lld", workspace_bytes,
                               need, (long long)batch, (long long)max_cache_len);
    if (need > 0 && (st = check_pointer(workspace, "workspace", plan->backend, cuda ? 256 : 16))) return st;
    if (!cuda) return latte_clear_error(); /* the CPU backend has nothing to choose */
    st = latte_cuda_mla_plan_tune(plan, batch, max_cache_len, workspace, workspace_bytes, stream);
    return st ? st : latte_clear_error();
}

latte_status latte_mla_plan_describe(latte_mla_plan plan, int64_t batch, char *buf, size_t buf_bytes) {
    latte_status st;
    if ((st = check_sizes(plan, batch, 0))) return st;
    if (!buf) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "buf: null pointer");
    if (buf_bytes < 1) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "buf_bytes: 0 (no room for the terminating NUL)");
    if (plan->backend == LATTE_BACKEND_CPU) {
        snprintf(buf, buf_bytes, "all: CPU backend, the reference projections (nothing to tune)\n");
        return latte_clear_error();
    }
    st = latte_cuda_mla_plan_describe(plan, batch, buf, buf_bytes);
    return st ? st : latte_clear_error();
}

/* 1 if `rows` rows of `width` elements, `stride` apart (rows >= 1, stride >= 0), span at most 2^60 elements:
 * every byte offset into them is then computable in int64_t. */
static int extent_fits(int64_t rows, int64_t stride, int64_t width) {
    const int64_t lim = INT64_C(1) << 60;
    if (width > lim) return 0;
    return rows == 1 || stride <= (lim - width) / (rows - 1);
}

static latte_status mla_run(latte_mla_plan plan, const latte_mla_run_args *args, void *workspace, size_t workspace_bytes,
                            latte_stream_t stream, void *const *events) {
    latte_status st;
    if (!plan) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "plan: null");
    if (!args) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "args: null pointer");
    if ((st = check_sizes(plan, args->batch, args->max_cache_len))) return st;
    const latte_mla_config *c = &plan->config;
    const latte_backend be = plan->backend;
    const int cuda = be == LATTE_BACKEND_CUDA;
    const int64_t row = c->kv_lora_rank + c->rope_dim;
    latte_mla_run_args a = *args;
    if (a.x_row_stride == 0) a.x_row_stride = c->dim;
    if (a.y_row_stride == 0) a.y_row_stride = c->dim;

    /* 16-byte rows for the CUDA backend's vector loads: strides in multiples of 8 bf16 elements */
    const int64_t vec = cuda ? 8 : 1;
    const size_t align = cuda ? 16 : 2;
    if ((st = check_pointer(a.x, "x", be, align))) return st;
    if ((st = check_pointer(a.y, "y", be, align))) return st;
    if ((st = check_pointer(a.kv_cache.data, "kv_cache.data", be, align))) return st;
    if ((st = check_pointer(a.cache_lens, "cache_lens", be, 4))) return st;
    if ((st = check_pointer(a.rope_cos, "rope_cos", be, align))) return st;
    if ((st = check_pointer(a.rope_sin, "rope_sin", be, align))) return st;
    if (a.x_row_stride < c->dim || a.x_row_stride % vec)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "x_row_stride: %lld is < dim %lld%s", (long long)a.x_row_stride,
                               (long long)c->dim, cuda ? " or not a multiple of 8 (CUDA backend)" : "");
    if (a.y_row_stride < c->dim || a.y_row_stride % vec)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "y_row_stride: %lld is < dim %lld%s", (long long)a.y_row_stride,
                               (long long)c->dim, cuda ? " or not a multiple of 8 (CUDA backend)" : "");
    if (a.kv_cache.row_stride < row || a.kv_cache.row_stride % vec)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "kv_cache: row stride %lld < %lld%s",
                               (long long)a.kv_cache.row_stride, (long long)row,
                               cuda ? " or not a multiple of 8 (CUDA backend)" : "");
    if (a.kv_cache.capacity < 1)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "kv_cache: capacity %lld < 1", (long long)a.kv_cache.capacity);
    /* Extents: strides so large that the addressed span overflows cannot describe real memory, and would
     * wrap the address arithmetic here and in the backends (found by tests/fuzz/fuzz_api.c). */
    if (!extent_fits(a.batch, a.x_row_stride, c->dim))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "x_row_stride: %lld; %lld rows of it exceed the address space",
                               (long long)a.x_row_stride, (long long)a.batch);
    if (!extent_fits(a.batch, a.y_row_stride, c->dim))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "y_row_stride: %lld; %lld rows of it exceed the address space",
                               (long long)a.y_row_stride, (long long)a.batch);
    if (!extent_fits(a.kv_cache.capacity, a.kv_cache.row_stride, row))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "kv_cache: capacity %lld rows of stride %lld exceed the address space",
                               (long long)a.kv_cache.capacity, (long long)a.kv_cache.row_stride);
    if (a.kv_cache.batch_stride % vec ||
        (a.batch > 1 && a.kv_cache.batch_stride < a.kv_cache.capacity * a.kv_cache.row_stride))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "kv_cache: batch stride %lld < capacity %lld * row stride %lld (sequences would overlap)%s",
                               (long long)a.kv_cache.batch_stride, (long long)a.kv_cache.capacity,
                               (long long)a.kv_cache.row_stride, cuda ? " or not a multiple of 8" : "");
    if (!extent_fits(a.batch, a.kv_cache.batch_stride, (a.kv_cache.capacity - 1) * a.kv_cache.row_stride + row))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "kv_cache: batch stride %lld; %lld sequences of it exceed the address space",
                               (long long)a.kv_cache.batch_stride, (long long)a.batch);
    if (a.max_cache_len >= a.kv_cache.capacity)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "max_cache_len: %lld >= kv_cache capacity %lld (the new token needs row max_cache_len)",
                               (long long)a.max_cache_len, (long long)a.kv_cache.capacity);
    if (a.rope_max_pos <= a.max_cache_len)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "rope_max_pos: %lld <= max_cache_len %lld (positions up to max_cache_len need a table row)",
                               (long long)a.rope_max_pos, (long long)a.max_cache_len);
    /* y must not alias x or the cache: the run reads x after writing y in no order we promise */
    {
        const char *xb = (const char *)a.x, *yb = (const char *)a.y;
        const char *xe = xb + ((a.batch - 1) * a.x_row_stride + c->dim) * 2, *ye = yb + ((a.batch - 1) * a.y_row_stride + c->dim) * 2;
        if (xb < ye && yb < xe) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "y: overlaps x");
        /* the cache's extent, when it can be computed without overflow (it always can for real memory) */
        const int64_t lim = INT64_C(1) << 60;
        if (a.kv_cache.capacity < lim / a.kv_cache.row_stride &&
            (a.batch == 1 || (a.kv_cache.batch_stride > 0 && a.kv_cache.batch_stride < lim / a.batch))) {
            const int64_t last = (a.batch > 1 ? (a.batch - 1) * a.kv_cache.batch_stride : 0) +
                                 (a.kv_cache.capacity - 1) * a.kv_cache.row_stride + row;
            const char *cb = (const char *)a.kv_cache.data, *ce = cb + last * 2;
            if (cb < ye && yb < ce) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "y: overlaps kv_cache");
        }
    }
    size_t need = cuda ? latte_cuda_mla_workspace_size(plan, a.batch, a.max_cache_len)
                       : latte_cpu_mla_workspace_size(plan, a.batch, a.max_cache_len);
    if (need > 0 && !workspace)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "workspace: null, but %zu bytes are needed", need);
    if (workspace_bytes < need)
        return latte_set_error(LATTE_STATUS_INSUFFICIENT_WORKSPACE,
                               "workspace: %zu bytes given, %zu needed for batch %lld, max_cache_len %lld", workspace_bytes,
                               need, (long long)a.batch, (long long)a.max_cache_len);
    /* device workspace: 256 bytes (what cudaMalloc gives); host workspace: 16 bytes (what malloc gives) */
    if (need > 0 && (st = check_pointer(workspace, "workspace", be, cuda ? 256 : 16))) return st;
    st = cuda ? latte_cuda_mla_run(plan, &a, workspace, workspace_bytes, stream, events)
              : latte_cpu_mla_run(plan, &a, workspace, workspace_bytes);
    return st ? st : latte_clear_error();
}

latte_status latte_mla_run(latte_mla_plan plan, const latte_mla_run_args *args, void *workspace, size_t workspace_bytes,
                           latte_stream_t stream) {
    return mla_run(plan, args, workspace, workspace_bytes, stream, NULL);
}

latte_status latte_mla_run_with_events(latte_mla_plan plan, const latte_mla_run_args *args, void *workspace,
                                       size_t workspace_bytes, latte_stream_t stream,
                                       void *const events[LATTE_MLA_N_PHASE_EVENTS]) {
    if (plan && plan->backend != LATTE_BACKEND_CUDA)
        return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "latte_mla_run_with_events: CUDA backend only");
    if (!events) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "events: null pointer");
    return mla_run(plan, args, workspace, workspace_bytes, stream, events);
}

latte_status latte_mla_plan_bad_lengths(latte_mla_plan plan, int64_t *count, int reset, latte_stream_t stream) {
    if (!plan) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "plan: null");
    if (!count) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "count: null pointer");
    latte_status st = plan->backend == LATTE_BACKEND_CPU ? latte_cpu_mla_bad_lengths(plan, count, reset)
                                                         : latte_cuda_mla_bad_lengths(plan, count, reset, stream);
    return st ? st : latte_clear_error();
}

/* ---- RoPE tables ------------------------------------------------------------------------ */
latte_status latte_rope_tables(latte_rope_kind kind, int64_t max_pos, int64_t rope_dim, float base, void *rope_cos,
                               void *rope_sin, latte_backend backend, latte_stream_t stream) {
    latte_status st;
    if (kind != LATTE_ROPE_BF16_REFERENCE && kind != LATTE_ROPE_FP32)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "kind: %d is not a latte_rope_kind", (int)kind);
    if (max_pos < 1 || max_pos > (1 << 24))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "max_pos: %lld is not in [1, 2^24]", (long long)max_pos);
    if (rope_dim < 2 || rope_dim % 2 || rope_dim > 4096)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "rope_dim: %lld is not even and in [2, 4096]", (long long)rope_dim);
    if (!(base > 0.0f) || isinf(base))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "base: %g is not finite and > 0", (double)base);
    if ((st = check_backend(backend))) return st;
    if ((st = check_pointer(rope_cos, "rope_cos", backend, 2))) return st;
    if ((st = check_pointer(rope_sin, "rope_sin", backend, 2))) return st;
    {
        const char *cb = (const char *)rope_cos, *sb = (const char *)rope_sin;
        size_t bytes = (size_t)max_pos * (size_t)rope_dim * 2;
        if (cb < sb + bytes && sb < cb + bytes) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "rope_sin: overlaps rope_cos");
    }
    st = backend == LATTE_BACKEND_CPU
             ? latte_cpu_rope_tables(kind, max_pos, rope_dim, base, (uint16_t *)rope_cos, (uint16_t *)rope_sin)
             : latte_cuda_rope_tables(kind, max_pos, rope_dim, base, rope_cos, rope_sin, stream);
    return st ? st : latte_clear_error();
}
