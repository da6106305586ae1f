/*
 * QK RMSNorm across heads: host API and validation.
 *
 * Every argument the host can see is checked here, before a backend runs, and a rejected call writes
 * nothing. The backends receive a resolved copy of the parameters: q_out/k_out never NULL (in place
 * means out == in with the input's stride), k NULL exactly when k_width == 0.
 *
 * Overlap rules (outputs are the only memory written):
 *   - an output is either exactly its input (same pointer, same stride: in place) or disjoint from it;
 *   - an output is disjoint from every other tensor (the other input, the other output, both weights).
 * q and k may be column slices of one fused qkv buffer: two strided regions with the same row stride
 * are compared column range against column range, so interleaved-but-disjoint slices are accepted.
 */
#include "internal.h"

latte_qknorm_params latte_qknorm_params_default(int64_t n_tokens, void *q, int64_t q_width, void *k, int64_t k_width,
                                                const void *q_weight, const void *k_weight, latte_dtype dtype) {
    latte_qknorm_params p;
    memset(&p, 0, sizeof p);
    p.n_tokens = n_tokens;
    p.q = q; p.q_width = q_width; p.q_row_stride = q_width;
    p.k = k; p.k_width = k_width; p.k_row_stride = k_width;
    p.q_weight = q_weight; p.k_weight = k_weight;
    p.dtype = dtype; p.weight_dtype = dtype;
    p.eps = 1e-6f;
    return p;
}

/* The widest row the kernels index with 32-bit column counters. */
#define QKNORM_MAX_WIDTH ((int64_t)1 << 30)

/* A strided 2-D region of memory in bytes: rows `rows`, `width` bytes each, `stride` bytes apart. */
typedef struct region {
    const char *name;
    uintptr_t base;
    int64_t rows, stride, width;
} region;

static int regions_overlap(const region *a, const region *b) {
    /* byte intervals [base, base + (rows-1)*stride + width) first: disjoint intervals never overlap */
    uintptr_t a_end = a->base + (uintptr_t)((a->rows - 1) * a->stride + a->width);
    uintptr_t b_end = b->base + (uintptr_t)((b->rows - 1) * b->stride + b->width);
    if (a_end <= b->base || b_end <= a->base) return 0;
    if (a->rows == 1 && b->rows == 1) return 1;
    /* same stride (column slices of one buffer): compare the column ranges modulo the stride */
    int64_t sa = a->rows > 1 ? a->stride : 0, sb = b->rows > 1 ? b->stride : 0;
    int64_t s = sa ? sa : sb;
    if ((sa && sa != s) || (sb && sb != s)) return 1; /* different strides: conservatively overlapping */
    if (a->width > s || b->width > s) return 1;
    int64_t d = (int64_t)(b->base - a->base); /* two's-complement difference, both orders */
    int64_t m = ((d % s) + s) % s;            /* b's first column relative to a's, in [0, s) */
    /* a covers columns [0, wa) of each period, b covers [m, m + wb) (wrapping past s into the next) */
    if (m < a->width) return 1;
    if (m + b->width > s) return 1;
    return 0;
}

static latte_status check_tensor_sizes(const char *name, int64_t n, int64_t width, int64_t stride, size_t esize,
                                       int allow_zero_width) {
    if (width < (allow_zero_width ? 0 : 1))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "%s_width: %lld < %d", name, (long long)width,
                               allow_zero_width ? 0 : 1);
    if (width > QKNORM_MAX_WIDTH)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "%s_width: %lld > 2^30", name, (long long)width);
    if (width == 0) return LATTE_STATUS_SUCCESS;
    if (stride < width)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "%s_row_stride: %lld < %s_width %lld", name,
                               (long long)stride, name, (long long)width);
    /* (n - 1) * stride + width elements must fit in int64_t bytes */
    int64_t max_elems = INT64_MAX / (int64_t)esize;
    if (n > 1 && stride > (max_elems - width) / (n - 1))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "%s_row_stride: %lld * n_tokens %lld overflows the address range", name, (long long)stride,
                               (long long)n);
    return LATTE_STATUS_SUCCESS;
}

static latte_status check_pointer(const void *p, const char *name, size_t align, latte_backend backend) {
    if (!p) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "%s: null pointer", name);
    if ((uintptr_t)p % align)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "%s: pointer %p is not %zu-byte aligned (element size)",
                               name, p, align);
    if (backend == LATTE_BACKEND_CUDA && latte_cuda_pointer_is_device(p) == 0)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "%s: %p is host memory, but the CUDA backend needs device memory", name, p);
    return LATTE_STATUS_SUCCESS;
}

latte_status latte_qknorm_across_heads(const latte_qknorm_params *params, latte_backend backend, latte_stream_t stream) {
    latte_status st;
    if (!params) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "params: null pointer");
    latte_qknorm_params p = *params;

    /* ---- scalar arguments ---- */
    if (backend != LATTE_BACKEND_CPU && backend != LATTE_BACKEND_CUDA)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "backend: %d is not a latte_backend", (int)backend);
    if (!latte_dtype_is_valid(p.dtype))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "dtype: %d is not a latte_dtype", (int)p.dtype);
    if (p.weight_dtype != p.dtype && p.weight_dtype != LATTE_DTYPE_F32)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "weight_dtype: %s, must be dtype (%s) or f32",
                               latte_dtype_is_valid(p.weight_dtype) ? latte_dtype_name(p.weight_dtype) : "invalid",
                               latte_dtype_name(p.dtype));
    if (!(p.eps >= 0.0f) || isinf(p.eps))
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "eps: %g is not finite and >= 0", (double)p.eps);
    if (p.flags & ~LATTE_QKNORM_WEIGHT_PLUS_ONE)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "flags: unknown bits 0x%x",
                               p.flags & ~LATTE_QKNORM_WEIGHT_PLUS_ONE);
    if (p.n_tokens < 0)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "n_tokens: %lld < 0", (long long)p.n_tokens);
    const size_t es = latte_dtype_size(p.dtype), wes = latte_dtype_size(p.weight_dtype);
    const int has_k = p.k_width > 0;
    if (!p.q_out) p.q_out_row_stride = p.q_row_stride;
    if (!p.k_out) p.k_out_row_stride = p.k_row_stride;
    if ((st = check_tensor_sizes("q", p.n_tokens, p.q_width, p.q_row_stride, es, 0))) return st;
    if ((st = check_tensor_sizes("q_out", p.n_tokens, p.q_width, p.q_out_row_stride, es, 0))) return st;
    if ((st = check_tensor_sizes("k", p.n_tokens, p.k_width, p.k_row_stride, es, 1))) return st;
    if ((st = check_tensor_sizes("k_out", p.n_tokens, p.k_width, p.k_out_row_stride, es, 1))) return st;
    if (backend == LATTE_BACKEND_CUDA && (st = latte_cuda_require_device())) return st;
    /* N = 0 touches no memory: empty tensors may carry NULL data pointers */
    if (p.n_tokens == 0) return latte_clear_error();

    /* ---- pointers ---- */
    if (!p.k && p.k_width != 0)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "k: null pointer with k_width %lld (must be 0)",
                               (long long)p.k_width);
    if (!has_k) { /* q alone: k's fields are ignored */
        p.k = NULL; p.k_out = NULL; p.k_weight = NULL;
        p.k_row_stride = p.k_out_row_stride = 0;
    }
    if (!p.q_out) p.q_out = p.q;
    if (has_k && !p.k_out) p.k_out = p.k;
    if (p.q_out == p.q && p.q_out_row_stride != p.q_row_stride)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "q_out_row_stride: %lld != q_row_stride %lld with q_out == q (in place needs equal strides)",
                               (long long)p.q_out_row_stride, (long long)p.q_row_stride);
    if (has_k && p.k_out == p.k && p.k_out_row_stride != p.k_row_stride)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "k_out_row_stride: %lld != k_row_stride %lld with k_out == k (in place needs equal strides)",
                               (long long)p.k_out_row_stride, (long long)p.k_row_stride);
    if ((st = check_pointer(p.q, "q", es, backend))) return st;
    if ((st = check_pointer(p.q_weight, "q_weight", wes, backend))) return st;
    if (p.q_out != p.q && (st = check_pointer(p.q_out, "q_out", es, backend))) return st;
    if (has_k) {
        if ((st = check_pointer(p.k, "k", es, backend))) return st;
        if ((st = check_pointer(p.k_weight, "k_weight", wes, backend))) return st;
        if (p.k_out != p.k && (st = check_pointer(p.k_out, "k_out", es, backend))) return st;
    }

    /* ---- overlap ---- */
    const int64_t n = p.n_tokens, ses = (int64_t)es;
    region q_in = {"q", (uintptr_t)p.q, n, p.q_row_stride * ses, p.q_width * ses};
    region q_out = {"q_out", (uintptr_t)p.q_out, n, p.q_out_row_stride * ses, p.q_width * ses};
    region q_w = {"q_weight", (uintptr_t)p.q_weight, 1, 0, p.q_width * (int64_t)wes};
    region k_in = {"k", (uintptr_t)p.k, n, p.k_row_stride * ses, p.k_width * ses};
    region k_out = {"k_out", (uintptr_t)p.k_out, n, p.k_out_row_stride * ses, p.k_width * ses};
    region k_w = {"k_weight", (uintptr_t)p.k_weight, 1, 0, p.k_width * (int64_t)wes};
    const region *outs[2] = {&q_out, &k_out};
    const region *others[6] = {&q_in, &k_in, &q_out, &k_out, &q_w, &k_w};
    for (int o = 0; o < 1 + has_k; o++) {
        const region *out = outs[o];
        for (int i = 0; i < 6; i++) {
            const region *other = others[i];
            if (other == out) continue;
            if (!has_k && (other == &k_in || other == &k_out || other == &k_w)) continue;
            if (o == 1 && other == &q_out) continue; /* the q_out/k_out pair is checked once */
            const region *own_in = o == 0 ? &q_in : &k_in;
            if (other == own_in && out->base == own_in->base) continue; /* in place (strides checked above) */
            if (regions_overlap(out, other))
                return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "%s: overlaps %s%s", out->name, other->name,
                                       other == own_in ? " (out of place outputs must not overlap their input)" : "");
        }
    }

    st = backend == LATTE_BACKEND_CPU ? latte_cpu_qknorm(&p) : latte_cuda_qknorm(&p, stream);
    return st ? st : latte_clear_error();
}
