/*
 * latte: fast attention-block kernels for LLM decoding.
 *
 *   - QK RMSNorm across heads (latte_qknorm_across_heads)
 *   - the MLA decode layer of DeepSeek-V3/R1 (latte_mla_plan_create / latte_mla_run)
 *
 * C99 public header. It needs no CUDA header: a stream is `struct CUstream_st *`,
 * which is exactly what `cudaStream_t` is, so a cudaStream_t can be passed as is
 * (NULL is the legacy default stream).
 *
 * Conventions
 *   - Every call returns a latte_status. On failure, latte_last_error() (thread-local)
 *     says which argument was wrong and why, and the call has written nothing.
 *   - The library never prints, never exits, never aborts.
 *   - Sizes and strides are int64_t, strides count elements (not bytes).
 *   - Every operation takes a backend: LATTE_BACKEND_CUDA (pointers are device
 *     pointers, work is enqueued on `stream`, nothing is allocated and nothing is
 *     synchronized, so it can be captured in a CUDA graph) or LATTE_BACKEND_CPU
 *     (pointers are host pointers, the call computes synchronously; `stream` is ignored).
 */
#ifndef LATTE_H
#define LATTE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define LATTE_API
#else
#define LATTE_API __attribute__((visibility("default")))
#endif

#define LATTE_VERSION_MAJOR 0
#define LATTE_VERSION_MINOR 1
#define LATTE_VERSION_PATCH 0
/* 10000*major + 100*minor + patch, as returned by latte_version() */
#define LATTE_VERSION (LATTE_VERSION_MAJOR * 10000 + LATTE_VERSION_MINOR * 100 + LATTE_VERSION_PATCH)

/* A CUDA stream (cudaStream_t is `struct CUstream_st *`). */
typedef struct CUstream_st *latte_stream_t;

/* ------------------------------------------------------------------------- */
/* Status                                                                    */
/* ------------------------------------------------------------------------- */
typedef enum latte_status {
    LATTE_STATUS_SUCCESS = 0,
    LATTE_STATUS_INVALID_ARGUMENT = 1, /* a null pointer, a bad size, stride, alignment, ... */
    LATTE_STATUS_NOT_SUPPORTED = 2,    /* a valid request this build or device cannot serve */
    LATTE_STATUS_NO_DEVICE = 3,        /* CUDA backend asked for, but no usable GPU/driver */
    LATTE_STATUS_OUT_OF_MEMORY = 4,    /* host or device allocation failed (plan creation only) */
    LATTE_STATUS_CUDA_ERROR = 5,       /* the CUDA runtime reported an error */
    LATTE_STATUS_INTERNAL_ERROR = 6,   /* a bug in latte: please report it */
    LATTE_STATUS_INSUFFICIENT_WORKSPACE = 7 /* workspace smaller than the plan reported */
} latte_status;

/* A static English name of a status ("LATTE_STATUS_INVALID_ARGUMENT: ..."). Never NULL. */
LATTE_API const char *latte_status_string(latte_status status);

/* The message of the last failed call on this thread ("kv_cache: row stride 500 < 576").
 * Empty string after a successful call. Never NULL; valid until the next latte call on this thread. */
LATTE_API const char *latte_last_error(void);

/* LATTE_VERSION of the library actually loaded. */
LATTE_API int latte_version(void);

/* ------------------------------------------------------------------------- */
/* Data types, backends                                                      */
/* ------------------------------------------------------------------------- */
typedef enum latte_dtype {
    LATTE_DTYPE_BF16 = 0,
    LATTE_DTYPE_F16 = 1,
    LATTE_DTYPE_F32 = 2
} latte_dtype;

typedef enum latte_backend {
    LATTE_BACKEND_CUDA = 0, /* device pointers, asynchronous on a stream */
    LATTE_BACKEND_CPU = 1   /* host pointers, synchronous */
} latte_backend;

/* Number of usable CUDA devices (0 when there is no GPU or no driver; never fails). */
LATTE_API int latte_cuda_device_count(void);

/* ------------------------------------------------------------------------- */
/* QK RMSNorm across heads                                                   */
/* ------------------------------------------------------------------------- */
/*
 * For every token n < n_tokens (mean over the whole row, all heads together):
 *   q_out[n, :] = q[n, :] * rsqrt(mean_j(q[n, j]^2) + eps) * w_q[:]
 *   k_out[n, :] = k[n, :] * rsqrt(mean_j(k[n, j]^2) + eps) * w_k[:]
 * with w = weight, or (1 + weight) under LATTE_QKNORM_WEIGHT_PLUS_ONE (Gemma style).
 * Math in fp32, one rounding at the store. Both q and k in one launch.
 *
 *   - q_width and k_width may differ (GQA). k may be NULL with k_width 0 (q alone).
 *   - row strides >= width (q and k may be column slices of one fused qkv buffer).
 *   - q_out/k_out NULL: in place. Otherwise the outputs must not overlap the inputs.
 *   - dtype: bf16, f16 or f32 for activations and outputs; weight_dtype: dtype or f32.
 *   - n_tokens == 0 is a no-op.
 */
#define LATTE_QKNORM_WEIGHT_PLUS_ONE 1u

typedef struct latte_qknorm_params {
    int64_t n_tokens;
    int64_t q_width, k_width;           /* columns normalized together (Dq, Dk) */
    void *q;                            /* [n_tokens, q_row_stride] */
    int64_t q_row_stride;
    void *k;                            /* [n_tokens, k_row_stride], or NULL */
    int64_t k_row_stride;
    void *q_out;                        /* NULL: in place */
    int64_t q_out_row_stride;
    void *k_out;                        /* NULL: in place */
    int64_t k_out_row_stride;
    const void *q_weight;               /* [q_width] */
    const void *k_weight;               /* [k_width] */
    latte_dtype dtype;                  /* activations and outputs */
    latte_dtype weight_dtype;           /* == dtype, or LATTE_DTYPE_F32 */
    float eps;                          /* >= 0, finite */
    unsigned flags;                     /* LATTE_QKNORM_* */
} latte_qknorm_params;

/* Fill a params struct for contiguous q [n, q_width] and k [n, k_width], in place, eps 1e-6. */
LATTE_API latte_qknorm_params latte_qknorm_params_default(int64_t n_tokens, void *q, int64_t q_width,
                                                          void *k, int64_t k_width, const void *q_weight,
                                                          const void *k_weight, latte_dtype dtype);

LATTE_API latte_status latte_qknorm_across_heads(const latte_qknorm_params *params, latte_backend backend,
                                                 latte_stream_t stream);

/* ------------------------------------------------------------------------- */
/* RoPE tables                                                               */
/* ------------------------------------------------------------------------- */
typedef enum latte_rope_kind {
    /* theta_i = bf16(base^(-i/(P/2))), angle = bf16(bf16(t) * theta_i), cos/sin rounded to bf16:
       exactly the reference's tables (see spec/mla-decode.md). */
    LATTE_ROPE_BF16_REFERENCE = 0,
    /* angles in fp32 (then rounded to bf16 at the store) */
    LATTE_ROPE_FP32 = 1
} latte_rope_kind;

/* Writes cos, sin [max_pos, rope_dim] bf16, row t = [c_0..c_{P/2-1}, c_0..c_{P/2-1}] (NeoX half split).
 * rope_dim even, base > 0 (DeepSeek: 10000). */
LATTE_API latte_status latte_rope_tables(latte_rope_kind kind, int64_t max_pos, int64_t rope_dim, float base,
                                         void *rope_cos, void *rope_sin, latte_backend backend,
                                         latte_stream_t stream);

/* ------------------------------------------------------------------------- */
/* MLA decode layer (DeepSeek-V3/R1 multi-head latent attention, one new token) */
/* ------------------------------------------------------------------------- */
typedef enum latte_mla_key_convention {
    /* cache stores k_pe unrotated; keys are rotated at read with their own position (the reference) */
    LATTE_MLA_KEYS_ROTATED_AT_READ = 0,
    /* cache stores k_pe already rotated at write (DeepSeek / FlashMLA / SGLang / vLLM) */
    LATTE_MLA_KEYS_STORED_ROTATED = 1
} latte_mla_key_convention;

typedef struct latte_mla_config {
    int64_t dim;            /* hidden size (7168) */
    int64_t q_lora_rank;    /* dq (1536) */
    int64_t kv_lora_rank;   /* R (512) */
    int64_t rope_dim;       /* P (64) */
    int64_t nope_dim;       /* 128 */
    int64_t v_dim;          /* 128 */
    int64_t n_heads;        /* H (128; a tensor-parallel shard has fewer) */
    float softmax_scale;    /* 0: 1/sqrt(nope_dim + rope_dim) */
    latte_mla_key_convention key_convention;
} latte_mla_config;

/* DeepSeek-R1's sizes, n_heads 128, the reference key convention. */
LATTE_API latte_mla_config latte_mla_config_deepseek_r1(void);

/* The five weight matrices, bf16, row-major and contiguous, in the spec's layouts.
 * Device pointers for the CUDA backend, host pointers for the CPU backend. The plan copies
 * what it needs: the caller may free them after latte_mla_plan_create returns. */
typedef struct latte_mla_weights {
    const void *wq_down;  /* [q_lora_rank, dim] */
    const void *wkv_down; /* [kv_lora_rank + rope_dim, dim] */
    const void *wq_up;    /* [n_heads * (nope_dim + rope_dim), q_lora_rank] */
    const void *wkv_up;   /* [n_heads * (nope_dim + v_dim), kv_lora_rank] */
    const void *wo;       /* [dim, n_heads * v_dim] */
} latte_mla_weights;

/* The latent KV cache, bf16: row t of sequence b starts at data + b*batch_stride + t*row_stride
 * (elements) and holds kv_lora_rank + rope_dim values. capacity = rows per sequence. */
typedef struct latte_kv_cache {
    void *data;
    int64_t batch_stride;
    int64_t row_stride;
    int64_t capacity;
} latte_kv_cache;

typedef struct latte_mla_run_args {
    int64_t batch;                 /* sequences, >= 1 */
    const void *x;                 /* [batch, dim] bf16, rows x_row_stride apart */
    int64_t x_row_stride;          /* 0: dim */
    latte_kv_cache kv_cache;       /* appended at row cache_lens[b] */
    const int32_t *cache_lens;     /* [batch], tokens already cached (same memory kind as the backend) */
    int64_t max_cache_len;         /* the caller's bound: every cache_lens[b] <= max_cache_len < capacity */
    const void *rope_cos;          /* [rope_max_pos, rope_dim] bf16 */
    const void *rope_sin;          /* [rope_max_pos, rope_dim] bf16 */
    int64_t rope_max_pos;          /* must be > max_cache_len */
    void *y;                       /* [batch, dim] bf16, rows y_row_stride apart */
    int64_t y_row_stride;          /* 0: dim */
} latte_mla_run_args;

typedef struct latte_mla_plan_s *latte_mla_plan;

/* One-time work: validates the configuration, copies and re-lays the weights into
 * plan-owned memory (absorbed layouts). May allocate and synchronize `stream`. */
LATTE_API latte_status latte_mla_plan_create(latte_mla_plan *plan, const latte_mla_config *config,
                                             const latte_mla_weights *weights, latte_backend backend,
                                             latte_stream_t stream);

/* Frees everything the plan took. NULL is a no-op. Not to be called while a run is in flight. */
LATTE_API latte_status latte_mla_plan_destroy(latte_mla_plan plan);

/* Bytes of workspace (device memory for CUDA, 256-byte aligned; host memory for CPU, 16-byte aligned)
 * a run of `batch` sequences with cache lengths <= max_cache_len needs. */
LATTE_API latte_status latte_mla_workspace_size(latte_mla_plan plan, int64_t batch, int64_t max_cache_len,
                                                size_t *workspace_bytes);

/* Optional, one-time tuning of the five projection GEMMs for runs of `batch` sequences (with the default
 * x / y row strides, dim): times every candidate on the plan's weights and keeps the fastest per projection
 * in the plan, so every later run of that batch uses it. Candidates: cuBLASLt's top heuristic algorithms, each
 * also with a forced split-K (deterministic reductions only), and latte's own GEMM at several K splits.
 * NOT a run: it synchronizes `stream`, allocates and frees temporary device memory, takes up to a few
 * hundred milliseconds, and must not be called while `stream` is being captured into a graph. The workspace
 * (latte_mla_workspace_size(plan, batch, max_cache_len) bytes) is used as scratch; the workspace size does
 * not change by tuning. No y and no cache of the caller is touched.
 * Determinism: after tuning, runs of that batch are bit-reproducible (the choice is fixed in the plan until
 * it is tuned again); two tune calls may choose differently (timing noise), and the choices differ in fp32
 * summation order, so y may differ in the last bf16 bit between them. An engine tunes once, at startup,
 * before capturing its graphs. Tuning batch B affects runs of batch B only. Thread-safe against runs of the
 * plan from other host threads (a run takes the choice current when it starts). CPU backend: nothing to
 * tune; returns success after validating the arguments. */
LATTE_API latte_status latte_mla_plan_tune(latte_mla_plan plan, int64_t batch, int64_t max_cache_len, void *workspace,
                                           size_t workspace_bytes, latte_stream_t stream);

/* What runs of `batch` sequences (default strides) use for each projection, one line each, e.g.
 *   "down: cublasLt algo 23 tile 12 splitK 4, 11.2 us (heuristic 28.9 us, 41 candidates)"
 *   "up: latte gemm splitK 2 (default, not tuned)"
 *   "w_uv: latte sm90 bn 128 whole tiles, 16.2 us (heuristic 14.7 us, 83 candidates; preferred to the fastest,
 *    14.3 us, for what it saves in the layer)" (one line: the W_UV GEMM that the attention launches early wins
 *    in the layer what it loses alone)
 * written into buf (NUL-terminated, truncated to buf_bytes; 1024 bytes is ample). Host work only. */
LATTE_API latte_status latte_mla_plan_describe(latte_mla_plan plan, int64_t batch, char *buf, size_t buf_bytes);

/* One decode step: appends kv_lora of the new token at cache row cache_lens[b] of each sequence
 * and writes y. CUDA: no allocation, no synchronization (graph-capturable).
 * A sequence whose device-side length is < 0 or > max_cache_len gets y = NaN, nothing is appended
 * for it, nothing is read out of bounds, and the plan's error counter is raised. */
LATTE_API latte_status latte_mla_run(latte_mla_plan plan, const latte_mla_run_args *args, void *workspace,
                                     size_t workspace_bytes, latte_stream_t stream);

/* Profiling (latte-bench's phase breakdown): latte_mla_run that also records CUDA events (cudaEvent_t,
 * passed as void*) on `stream` between its phases; NULL entries are skipped. CUDA backend only.
 *   events[0] start   [1] after the down-projections and the cache append
 *   [2] after the up-projection, rope and W_UK absorption   [3] after the split-KV attention
 *   [4] after the combine   [5] after W_UV and the output projection (end)
 * Under stream capture the records become event nodes of the graph (cudaEventRecordExternal), so a replay
 * times the phases too. */
#define LATTE_MLA_N_PHASE_EVENTS 6
LATTE_API latte_status latte_mla_run_with_events(latte_mla_plan plan, const latte_mla_run_args *args, void *workspace,
                                                 size_t workspace_bytes, latte_stream_t stream,
                                                 void *const events[LATTE_MLA_N_PHASE_EVENTS]);

/* Number of sequences rejected for an out-of-range length by runs of this plan since the last
 * reset. Synchronizes `stream` (not for use inside a captured graph). reset != 0 zeroes it. */
LATTE_API latte_status latte_mla_plan_bad_lengths(latte_mla_plan plan, int64_t *count, int reset,
                                                  latte_stream_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LATTE_H */
