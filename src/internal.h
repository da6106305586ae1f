/*
 * Internal declarations shared by the host API layer (src/api), the CPU backend (src/cpu)
 * and the CUDA backend (src/cuda). Not installed.
 *
 * Division of labour:
 *   src/api   validates every argument the host can see (pointers, sizes, strides, alignment,
 *             dtypes), sets the thread-local error message and dispatches to a backend.
 *             A backend entry is only ever called with arguments that passed validation.
 *   src/cpu   the CPU backend: the reference semantics in C (fp32 accumulation, the spec's bf16
 *             rounding points), OpenMP where it helps.
 *   src/cuda  the CUDA backend: kernels by operation, launchers with C linkage.
 */
#ifndef LATTE_INTERNAL_H
#define LATTE_INTERNAL_H

#include "latte.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LATTE_INTERNAL __attribute__((visibility("hidden")))

/* ---- errors (src/api/status.c) ---------------------------------------------------------- */
/* Sets the thread-local message (printf-style) and returns `status`. */
LATTE_INTERNAL latte_status latte_set_error(latte_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Clears the message; returns LATTE_STATUS_SUCCESS. */
LATTE_INTERNAL latte_status latte_clear_error(void);

LATTE_INTERNAL int latte_dtype_is_valid(latte_dtype dtype);
LATTE_INTERNAL size_t latte_dtype_size(latte_dtype dtype);
LATTE_INTERNAL const char *latte_dtype_name(latte_dtype dtype);

/* ---- bf16 / fp16 scalar conversions for host code (round to nearest even) ---------------- */
static inline float latte_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t latte_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
/* bf16 rounding of a float, returned as float */
static inline float latte_round_bf16(float f) { return latte_bf16_to_f32(latte_f32_to_bf16(f)); }
LATTE_INTERNAL float latte_f16_to_f32(uint16_t h);
LATTE_INTERNAL uint16_t latte_f32_to_f16(float f);

/* ---- MLA plan: the backend owns `impl` --------------------------------------------------- */
struct latte_mla_plan_s {
    latte_mla_config config;  /* validated; softmax_scale resolved (never 0) */
    latte_backend backend;
    int device;               /* CUDA device the plan was created on */
    void *impl;               /* backend state (plan-owned weights, counters, ...) */
};

/* Validated arguments of one MLA run, with the defaults resolved (strides never 0). */

/* ---- CPU backend (src/cpu) --------------------------------------------------------------- */
LATTE_INTERNAL latte_status latte_cpu_qknorm(const latte_qknorm_params *p);
/* rope frequencies theta[0 .. rope_dim/2) of a table kind (shared by the CPU and CUDA builders) */
LATTE_INTERNAL void latte_rope_thetas(latte_rope_kind kind, int64_t rope_dim, float base, double *theta);
LATTE_INTERNAL latte_status latte_cpu_rope_tables(latte_rope_kind kind, int64_t max_pos, int64_t rope_dim,
                                                  float base, uint16_t *rope_cos, uint16_t *rope_sin);
LATTE_INTERNAL latte_status latte_cpu_mla_plan_init(struct latte_mla_plan_s *plan, const latte_mla_weights *w);
LATTE_INTERNAL void latte_cpu_mla_plan_free(struct latte_mla_plan_s *plan);
LATTE_INTERNAL size_t latte_cpu_mla_workspace_size(const struct latte_mla_plan_s *plan, int64_t batch,
                                                   int64_t max_cache_len);
LATTE_INTERNAL latte_status latte_cpu_mla_run(struct latte_mla_plan_s *plan, const latte_mla_run_args *a,
                                              void *workspace, size_t workspace_bytes);
LATTE_INTERNAL latte_status latte_cpu_mla_bad_lengths(struct latte_mla_plan_s *plan, int64_t *count, int reset);

/* ---- CUDA backend (src/cuda, C linkage) -------------------------------------------------- */
/* LATTE_STATUS_NO_DEVICE with a message when no usable device; else selects nothing, returns success. */
LATTE_INTERNAL latte_status latte_cuda_require_device(void);
LATTE_INTERNAL int latte_cuda_count_devices(void);
/* 1 if `ptr` is memory the current CUDA device can access (device or managed/registered), 0 if it is
 * plain host memory, -1 if unknown. Used to reject host pointers passed to the CUDA backend. */
LATTE_INTERNAL int latte_cuda_pointer_is_device(const void *ptr);

LATTE_INTERNAL latte_status latte_cuda_qknorm(const latte_qknorm_params *p, latte_stream_t stream);
LATTE_INTERNAL latte_status latte_cuda_rope_tables(latte_rope_kind kind, int64_t max_pos, int64_t rope_dim,
                                                   float base, void *rope_cos, void *rope_sin,
                                                   latte_stream_t stream);
LATTE_INTERNAL latte_status latte_cuda_mla_plan_init(struct latte_mla_plan_s *plan, const latte_mla_weights *w,
                                                     latte_stream_t stream);
LATTE_INTERNAL void latte_cuda_mla_plan_free(struct latte_mla_plan_s *plan);
LATTE_INTERNAL size_t latte_cuda_mla_workspace_size(const struct latte_mla_plan_s *plan, int64_t batch,
                                                    int64_t max_cache_len);
/* events: NULL, or LATTE_MLA_N_PHASE_EVENTS cudaEvent_t (entries may be NULL) recorded between phases */
LATTE_INTERNAL latte_status latte_cuda_mla_run(struct latte_mla_plan_s *plan, const latte_mla_run_args *a,
                                               void *workspace, size_t workspace_bytes, latte_stream_t stream,
                                               void *const *events);
/* Called with validated sizes and a workspace of at least latte_cuda_mla_workspace_size bytes. */
LATTE_INTERNAL latte_status latte_cuda_mla_plan_tune(struct latte_mla_plan_s *plan, int64_t batch,
                                                     int64_t max_cache_len, void *workspace, size_t workspace_bytes,
                                                     latte_stream_t stream);
/* buf non-null, buf_bytes >= 1, batch validated */
LATTE_INTERNAL latte_status latte_cuda_mla_plan_describe(struct latte_mla_plan_s *plan, int64_t batch, char *buf,
                                                         size_t buf_bytes);
LATTE_INTERNAL latte_status latte_cuda_mla_bad_lengths(struct latte_mla_plan_s *plan, int64_t *count, int reset,
                                                       latte_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* LATTE_INTERNAL_H */
