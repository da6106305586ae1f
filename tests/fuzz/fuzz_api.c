/*
 * fuzz_api: drives latte's public API from fuzzer bytes and checks the library's promises.
 *
 * Each input is decoded into one or a few calls (QK norm, RoPE tables, MLA plan/workspace/run/destroy,
 * status strings) with small random configurations. The buffers it passes are heap allocations of exactly
 * the size the call may touch (so AddressSanitizer or compute-sanitizer sees any overread), sometimes with
 * padding before and after (canaries) and gaps between strided rows. Some inputs deliberately break the
 * contract in ways the library can detect (null pointer, stride < width, invalid enum, NaN eps, a size whose
 * byte extent overflows, too small a workspace): the library must reject those. Then it asserts (abort =
 * finding):
 *   - no crash, no sanitizer report;
 *   - a rejected call (status != SUCCESS) changed no byte of any buffer and left a non-empty latte_last_error();
 *   - an accepted call left latte_last_error() empty and wrote only its outputs (MLA: only y and the appended
 *     cache rows; a sequence with an out-of-range length gets a NaN row, no append, and the plan's counter
 *     counts it);
 *   - latte_status_string never returns NULL.
 *
 * Builds (tests/fuzz/build.sh):
 *   libFuzzer:    clang -fsanitize=fuzzer,address,undefined          (LLVMFuzzerTestOneInput)
 *   standalone:   -DFUZZ_STANDALONE: main() feeds seeded random inputs for -seconds=S (and at most -runs=N
 *                 inputs), or replays files (gcc + ASan where libFuzzer is missing)
 *   CUDA backend: -DFUZZ_CUDA -DFUZZ_STANDALONE: the same generator over cudaMalloc'd buffers, linked
 *                 against liblatte.a + cudart; run it under compute-sanitizer on a GPU machine.
 */
#include "latte.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FUZZ_CUDA
#include <cuda_runtime_api.h>
#define FUZZ_BACKEND LATTE_BACKEND_CUDA
#define FUZZ_ALIGN 16 /* CUDA backend: 16-byte pointers, strides multiples of 8 elements */
#define FUZZ_VEC 8
#define FUZZ_WS_MISALIGN 16 /* the workspace must be 256-byte aligned (device), 16 (host) */
#else
#define FUZZ_WS_MISALIGN 8
#define FUZZ_BACKEND LATTE_BACKEND_CPU
#define FUZZ_ALIGN 2
#define FUZZ_VEC 1
#endif

/* FUZZ_TRACE=1 in the environment prints each decoded call (for minimising a finding) */
static int fuzz_trace = -1;
#define TRACE(...)                                                                                    \
    do {                                                                                              \
        if (fuzz_trace < 0) fuzz_trace = getenv("FUZZ_TRACE") != NULL;                                \
        if (fuzz_trace) fprintf(stderr, __VA_ARGS__);                                                 \
    } while (0)
static void fuzz_dump_input(void);

#define FUZZ_ASSERT(cond, ...)                                                                        \
    do {                                                                                              \
        if (!(cond)) {                                                                                \
            fuzz_dump_input();                                                                        \
            fprintf(stderr, "fuzz_api: %s:%d: assertion failed: %s\n  ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                             \
            fprintf(stderr, "\n  last_error: \"%s\"\n", latte_last_error());                         \
            abort();                                                                                  \
        }                                                                                             \
    } while (0)

/* ---- input bytes: a reader that returns 0 when the input runs out (0 always means "the valid choice") */
typedef struct {
    const uint8_t *p;
    size_t n, i;
} reader;
static unsigned rd_u8(reader *r) { return r->i < r->n ? r->p[r->i++] : 0u; }
static uint32_t rd_u32(reader *r) {
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) v = v << 8 | rd_u8(r);
    return v;
}
static int64_t rd_range(reader *r, int64_t lo, int64_t hi) { /* inclusive, small ranges */
    uint32_t v = rd_u8(r) | (uint32_t)rd_u8(r) << 8;
    return lo + (int64_t)(v % (uint32_t)(hi - lo + 1));
}

/* Which contract violation this input injects (at most one per call, so every rejection has one cause). */
static unsigned rd_fault(reader *r, unsigned n_faults) {
    unsigned c = rd_u8(r);
    if (c < 144) return 0; /* ~56% of inputs: a valid call */
    return 1 + rd_u8(r) % n_faults;
}

/* ---- data: a splitmix64 stream seeded from the input fills buffers ---------------------------- */
static uint64_t data_rng;
static uint64_t data_u64(void) {
    uint64_t z = (data_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float data_float(int wild) {
    double u = (double)(data_u64() >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
    if (!wild) return (float)u;
    switch (data_u64() % 16) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return (float)(u * 1e30);
    case 3: return (float)(u * 1e-30);
    case 4: return 0.0f;
    default: return (float)(u * 4.0);
    }
}
static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static uint16_t to_f16(float f) { /* round to nearest even; exactness does not matter here, only validity */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    float a = fabsf(f);
    if (a != a) return (uint16_t)(sign | 0x7e00u);
    if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00u);
    if (a < 6.103515625e-05f) return (uint16_t)(sign | (uint16_t)lrintf(a * 16777216.0f)); /* subnormal: 2^-24 units */
    int e;
    float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    uint32_t mant = (uint32_t)lrintf(m * 2048.0f); /* 11 bits with the implicit one, may round up to 2048 */
    uint32_t bits = ((uint32_t)(e + 14) << 10) + (mant - 1024u); /* a carry into the exponent is right */
    return (uint16_t)(sign | bits);
}
static int bf16_is_nan(uint16_t h) { return (h & 0x7fffu) > 0x7f80u; }

/* ---- buffers: exact allocations, snapshots, and a per-byte "may change" mask --------------------- */
#define MAX_BUFS 24
typedef struct {
    uint8_t *base;    /* the allocation (host or device) */
    size_t alloc;     /* its exact size */
    uint8_t *snap;    /* host copy taken before the call */
    uint8_t *allowed; /* 1 where the current call may write */
} fbuf;
static fbuf bufs[MAX_BUFS];
static int n_bufs;

static void mem_to_host(void *dst, const void *src, size_t n) {
    if (!n) return;
#ifdef FUZZ_CUDA
    FUZZ_ASSERT(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost) == cudaSuccess, "cudaMemcpy D2H");
#else
    memcpy(dst, src, n);
#endif
}
static void mem_from_host(void *dst, const void *src, size_t n) {
    if (!n) return;
#ifdef FUZZ_CUDA
    FUZZ_ASSERT(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice) == cudaSuccess, "cudaMemcpy H2D");
#else
    memcpy(dst, src, n);
#endif
}

/* A buffer of `pre` + `bytes` + `post` bytes; returns the pointer `pre` bytes in. With pre = post = 0 the
 * pointer's extent is the allocation: any byte past it is a sanitizer report. The content is host data
 * `init` (NULL: random bytes). */
static fbuf *buf_new(size_t pre, size_t bytes, size_t post, size_t align, uint8_t **ptr) {
    FUZZ_ASSERT(n_bufs < MAX_BUFS, "too many buffers");
    fbuf *b = &bufs[n_bufs++];
    b->alloc = pre + bytes + post;
#ifdef FUZZ_CUDA
    (void)align;
    void *d = NULL;
    FUZZ_ASSERT(cudaMalloc(&d, b->alloc ? b->alloc : 1) == cudaSuccess, "cudaMalloc %zu", b->alloc);
    b->base = (uint8_t *)d;
#else
    void *h = NULL;
    if (align > 16) {
        FUZZ_ASSERT(posix_memalign(&h, align, b->alloc ? b->alloc : 1) == 0, "posix_memalign %zu", b->alloc);
    } else {
        h = malloc(b->alloc ? b->alloc : 1);
    }
    FUZZ_ASSERT(h, "malloc %zu", b->alloc);
    b->base = (uint8_t *)h;
#endif
    b->snap = (uint8_t *)malloc(b->alloc + 1);
    b->allowed = (uint8_t *)calloc(b->alloc + 1, 1);
    for (size_t i = 0; i < b->alloc; i++) b->snap[i] = (uint8_t)data_u64();
    *ptr = b->base + pre;
    return b;
}
/* fills `bytes` at `ptr` (inside b) with the host data `src` and refreshes the snapshot */
static void buf_write(fbuf *b, uint8_t *ptr, const void *src, size_t bytes) {
    memcpy(b->snap + (ptr - b->base), src, bytes);
}
static void bufs_upload(void) {
    for (int i = 0; i < n_bufs; i++) mem_from_host(bufs[i].base, bufs[i].snap, bufs[i].alloc);
}
static void bufs_clear_allowed(void) {
    for (int i = 0; i < n_bufs; i++) memset(bufs[i].allowed, 0, bufs[i].alloc);
}
static fbuf *buf_of(const void *p) {
    for (int i = 0; i < n_bufs; i++)
        if ((const uint8_t *)p >= bufs[i].base && (const uint8_t *)p < bufs[i].base + bufs[i].alloc) return &bufs[i];
    return NULL;
}
/* marks rows [rows, width_bytes] with rows stride_bytes apart, starting at p, as writable */
static void allow_rows(const void *p, int64_t rows, int64_t stride_bytes, int64_t width_bytes) {
    if (!p || rows <= 0 || width_bytes <= 0) return;
    fbuf *b = buf_of(p);
    if (!b) return;
    int64_t off = (const uint8_t *)p - b->base;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < width_bytes; j++) {
            int64_t o = off + r * stride_bytes + j;
            if (o >= 0 && (size_t)o < b->alloc) b->allowed[o] = 1;
        }
}
/* after a call: every byte outside the allowed regions is unchanged (rejected calls: every byte).
 * Leaves the new contents in snap (so a later call in the same input compares against them). */
static void bufs_check(const char *call, int accepted) {
#ifdef FUZZ_CUDA
    cudaError_t e = cudaDeviceSynchronize();
    FUZZ_ASSERT(e == cudaSuccess, "%s: CUDA error after the call: %s", call, cudaGetErrorString(e));
#endif
    for (int i = 0; i < n_bufs; i++) {
        fbuf *b = &bufs[i];
        uint8_t *now = (uint8_t *)malloc(b->alloc + 1);
        mem_to_host(now, b->base, b->alloc);
        for (size_t j = 0; j < b->alloc; j++)
            if (now[j] != b->snap[j])
                FUZZ_ASSERT(accepted && b->allowed[j], "%s (%s): buffer %d byte %zu of %zu changed %02x -> %02x", call,
                            accepted ? "accepted, outside its outputs" : "rejected", i, j, b->alloc, b->snap[j], now[j]);
        memcpy(b->snap, now, b->alloc);
        free(now);
    }
    bufs_clear_allowed();
}
static void bufs_free(void) {
    for (int i = 0; i < n_bufs; i++) {
#ifdef FUZZ_CUDA
        cudaFree(bufs[i].base);
#else
        free(bufs[i].base);
#endif
        free(bufs[i].snap);
        free(bufs[i].allowed);
    }
    n_bufs = 0;
}
static uint8_t *host_view(const void *p) { /* the snapshot bytes behind a buffer pointer */
    fbuf *b = buf_of(p);
    FUZZ_ASSERT(b, "pointer %p is not a fuzz buffer", p);
    return b->snap + ((const uint8_t *)p - b->base);
}

/* the status contract, checked after every call */
static void check_status(const char *call, latte_status st, int must_reject) {
    TRACE("  %s -> %d %s\n", call, (int)st, latte_last_error());
    const char *s = latte_status_string(st);
    FUZZ_ASSERT(s != NULL, "latte_status_string(%d) is NULL", (int)st);
    const char *e = latte_last_error();
    FUZZ_ASSERT(e != NULL, "latte_last_error() is NULL");
    if (st == LATTE_STATUS_SUCCESS) {
        FUZZ_ASSERT(e[0] == '\0', "%s succeeded but latte_last_error() is \"%s\"", call, e);
        FUZZ_ASSERT(!must_reject, "%s accepted a call that breaks the contract (fault %d)", call, must_reject);
    } else {
        FUZZ_ASSERT(e[0] != '\0', "%s returned %s with an empty latte_last_error()", call, s);
    }
}

/* A size chosen to overflow any byte-extent computation: the library must reject it before using it. */
static int64_t overflow_size(reader *r) {
    /* with rows >= 2 and elements of >= 2 bytes, (rows - 1) * v * element size is >= 2^63 */
    static const int64_t v[] = {INT64_MAX, INT64_MAX / 2 + 1, (int64_t)1 << 62, INT64_MAX - 1, INT64_MAX - 15};
    return v[rd_u8(r) % (sizeof v / sizeof v[0])];
}

/* ================================================================================================ */
/* QK norm                                                                                          */
/* ================================================================================================ */
enum {
    QK_NULL_Q = 1, QK_NULL_QW, QK_NULL_K, QK_NULL_KW, QK_NEG_TOKENS, QK_QSTRIDE, QK_KSTRIDE, QK_OUTSTRIDE,
    QK_DTYPE, QK_WDTYPE, QK_EPS, QK_OVERFLOW, QK_ZERO_WIDTH, QK_FUSED_OVERLAP, QK_N_FAULTS = QK_FUSED_OVERLAP
};

static size_t dsize(latte_dtype d) { return d == LATTE_DTYPE_F32 ? 4 : 2; }
static void fill_typed(uint8_t *dst, int64_t n, latte_dtype d, int wild) {
    for (int64_t i = 0; i < n; i++) {
        float f = data_float(wild);
        if (d == LATTE_DTYPE_F32) memcpy(dst + 4 * i, &f, 4);
        else {
            uint16_t h = d == LATTE_DTYPE_BF16 ? to_bf16(f) : to_f16(f);
            memcpy(dst + 2 * i, &h, 2);
        }
    }
}
/* an activation matrix [rows, width] `stride` apart with optional padding, filled with random data */
static uint8_t *make_matrix(reader *r, int64_t rows, int64_t width, int64_t stride, latte_dtype d, int wild) {
    size_t es = dsize(d);
    size_t bytes = rows > 0 ? (size_t)((rows - 1) * stride + width) * es : 0;
    size_t pre = rd_u8(r) % 4 == 1 ? FUZZ_ALIGN * (1 + rd_u8(r) % 4) : 0;
    size_t post = rd_u8(r) % 4 == 1 ? 1 + rd_u8(r) % 64 : 0;
    uint8_t *p;
    fbuf *b = buf_new(pre, bytes, post, 16, &p);
    for (int64_t i = 0; i < rows; i++) fill_typed(b->snap + pre + (size_t)(i * stride) * es, width, d, wild);
    return p;
}

static void fuzz_qknorm(reader *r) {
    unsigned fault = rd_fault(r, QK_N_FAULTS);
    latte_qknorm_params p;
    memset(&p, 0, sizeof p);
    static const latte_dtype dts[] = {LATTE_DTYPE_BF16, LATTE_DTYPE_F16, LATTE_DTYPE_F32};
    latte_dtype dt = dts[rd_u8(r) % 3];
    latte_dtype wdt = rd_u8(r) % 2 ? LATTE_DTYPE_F32 : dt;
    int64_t n = rd_range(r, 1, 9) - (rd_u8(r) % 8 == 1); /* 0..9 */
    int64_t dq = rd_u8(r) % 8 == 1 ? rd_range(r, 1, 4200) : rd_range(r, 1, 80); /* wide rows: vector paths */
    int has_k = rd_u8(r) % 4 != 3;
    int64_t dk = has_k ? rd_range(r, 1, 80) : 0;
    int64_t qs = dq + (rd_u8(r) % 2 ? rd_range(r, 0, 12) : 0);
    int64_t ks = dk + (rd_u8(r) % 2 ? rd_range(r, 0, 12) : 0);
    int separate_out = rd_u8(r) % 2;
    int64_t qos = dq + (rd_u8(r) % 2 ? rd_range(r, 0, 12) : 0);
    int64_t kos = dk + (rd_u8(r) % 2 ? rd_range(r, 0, 12) : 0);
    int wild = rd_u8(r) % 4 == 0;
    unsigned flags = rd_u8(r) % 2 ? LATTE_QKNORM_WEIGHT_PLUS_ONE : 0u;
    float eps = rd_u8(r) % 4 == 0 ? 0.0f : 1e-6f;

    p.n_tokens = n;
    p.q_width = dq;
    p.k_width = dk;
    p.q_row_stride = qs;
    p.k_row_stride = ks;
    p.q_out_row_stride = separate_out ? qos : 0;
    p.k_out_row_stride = separate_out ? kos : 0;
    p.dtype = dt;
    p.weight_dtype = wdt;
    p.eps = eps;
    p.flags = flags;
    /* fused: q and k are column slices of one [n, S] buffer (a qkv projection), normalized in place */
    const int fused = has_k && !separate_out && rd_u8(r) % 4 == 1;
    int64_t fused_k_col = 0;
    if (fused) {
        const int64_t S = dq + dk + rd_range(r, 0, 9);
        fused_k_col = dq + rd_range(r, 0, S - dq - dk);
        p.q_row_stride = p.k_row_stride = qs = ks = S;
        p.q = make_matrix(r, n, S, S, dt, wild);
        p.k = (uint8_t *)p.q + fused_k_col * (int64_t)dsize(dt);
    } else {
        p.q = make_matrix(r, n, dq, qs, dt, wild);
    }
    p.q_weight = make_matrix(r, 1, dq, dq, wdt, 0);
    if (has_k) {
        if (!fused) p.k = make_matrix(r, n, dk, ks, dt, wild);
        p.k_weight = make_matrix(r, 1, dk, dk, wdt, 0);
    }
    if (separate_out) {
        p.q_out = make_matrix(r, n, dq, qos, dt, 0);
        if (has_k) p.k_out = make_matrix(r, n, dk, kos, dt, 0);
    }

    /* one contract violation the validation can see */
    int must_reject = 0;
    switch (fault) {
    case QK_NULL_Q: p.q = NULL; must_reject = n > 0; break;
    case QK_NULL_QW: p.q_weight = NULL; must_reject = n > 0; break;
    case QK_NULL_K: if (has_k) { p.k = NULL; must_reject = n > 0; } break;
    case QK_NULL_KW: if (has_k) { p.k_weight = NULL; must_reject = n > 0; } break;
    case QK_NEG_TOKENS: p.n_tokens = -1 - (int64_t)rd_range(r, 0, 1000); must_reject = 1; break;
    case QK_QSTRIDE: if (dq > 1) { p.q_row_stride = rd_range(r, 1, dq - 1); must_reject = n > 0; } break;
    case QK_KSTRIDE: if (dk > 1) { p.k_row_stride = rd_range(r, 1, dk - 1); must_reject = n > 0; } break;
    case QK_OUTSTRIDE: if (separate_out && dq > 1) { p.q_out_row_stride = rd_range(r, 1, dq - 1); must_reject = n > 0; } break;
    case QK_DTYPE: {
        static const int bad[] = {3, -1, 100, 0x7fffffff};
        p.dtype = (latte_dtype)bad[rd_u8(r) % 4];
        must_reject = 1;
    } break;
    case QK_WDTYPE:
        if (dt != LATTE_DTYPE_F32) { /* weights neither the activation dtype nor f32 */
            p.weight_dtype = dt == LATTE_DTYPE_BF16 ? LATTE_DTYPE_F16 : LATTE_DTYPE_BF16;
            must_reject = n > 0;
        } else {
            p.weight_dtype = (latte_dtype)(7 + rd_u8(r));
            must_reject = 1;
        }
        break;
    case QK_EPS: {
        static const float bad[] = {NAN, INFINITY, -INFINITY, -1e-6f, -1.0f};
        p.eps = bad[rd_u8(r) % 5];
        must_reject = 1;
    } break;
    case QK_OVERFLOW: /* the byte extent of q does not fit in 64 bits */
        if (n > 1) { p.q_row_stride = overflow_size(r); must_reject = 1; }
        break;
    case QK_ZERO_WIDTH: p.q_width = 0; must_reject = n > 0; break;
    case QK_FUSED_OVERLAP: /* k's columns start inside q's: in place, each output overlaps the other input */
        if (fused && n > 0) {
            p.k = (uint8_t *)p.q + rd_range(r, 0, dq - 1) * (int64_t)dsize(dt);
            must_reject = 1;
        }
        break;
    }

    /* what an accepted call may write: the q and k rows of the outputs (in place: the inputs) */
    TRACE("qknorm fault %u n %lld dq %lld dk %lld qs %lld ks %lld out %d qos %lld kos %lld dt %d wdt %d eps %g flags %u\n",
          fault, (long long)p.n_tokens, (long long)p.q_width, (long long)p.k_width, (long long)p.q_row_stride,
          (long long)p.k_row_stride, separate_out, (long long)p.q_out_row_stride, (long long)p.k_out_row_stride,
          (int)p.dtype, (int)p.weight_dtype, (double)p.eps, p.flags);
    bufs_upload();
    size_t es = dsize(dt);
    if (p.n_tokens > 0) {
        void *qo = separate_out ? p.q_out : p.q;
        int64_t qo_s = separate_out ? qos : qs;
        void *ko = separate_out ? p.k_out : p.k;
        int64_t ko_s = separate_out ? kos : ks;
        allow_rows(qo, n, qo_s * (int64_t)es, dq * (int64_t)es);
        allow_rows(ko, n, ko_s * (int64_t)es, dk * (int64_t)es);
    }
    latte_status st = latte_qknorm_across_heads(&p, FUZZ_BACKEND, NULL);
    check_status("latte_qknorm_across_heads", st, must_reject);
    bufs_check("latte_qknorm_across_heads", st == LATTE_STATUS_SUCCESS);
}

/* ================================================================================================ */
/* RoPE tables                                                                                      */
/* ================================================================================================ */
enum { RP_KIND = 1, RP_POS, RP_DIM, RP_BASE, RP_NULL_COS, RP_NULL_SIN, RP_OVERLAP, RP_N_FAULTS = RP_OVERLAP };

static void fuzz_rope(reader *r) {
    unsigned fault = rd_fault(r, RP_N_FAULTS);
    latte_rope_kind kind = rd_u8(r) % 2 ? LATTE_ROPE_FP32 : LATTE_ROPE_BF16_REFERENCE;
    int64_t max_pos = rd_range(r, 1, 40);
    int64_t dim = 2 * rd_range(r, 1, 20);
    float base = rd_u8(r) % 4 == 1 ? 1.5f + (float)rd_u8(r) : 10000.0f;
    size_t bytes = (size_t)(max_pos * dim) * 2;
    uint8_t *cs, *sn;
    buf_new(rd_u8(r) % 4 == 1 ? 16 : 0, bytes, rd_u8(r) % 4 == 1 ? 7 : 0, 16, &cs);
    buf_new(0, bytes, 0, 16, &sn);
    void *cos_p = cs, *sin_p = sn;
    int must_reject = 0;
    switch (fault) {
    case RP_KIND: kind = (latte_rope_kind)(2 + rd_u8(r)); must_reject = 1; break;
    case RP_POS: {
        static const int64_t bad[] = {0, -1, ((int64_t)1 << 24) + 1, INT64_MIN, INT64_MAX};
        max_pos = bad[rd_u8(r) % 5];
        must_reject = 1;
    } break;
    case RP_DIM: {
        static const int64_t bad[] = {0, 1, 3, -2, 4098, INT64_MAX};
        dim = bad[rd_u8(r) % 6];
        must_reject = 1;
    } break;
    case RP_BASE: {
        static const float bad[] = {0.0f, -1.0f, NAN, INFINITY, -INFINITY};
        base = bad[rd_u8(r) % 5];
        must_reject = 1;
    } break;
    case RP_NULL_COS: cos_p = NULL; must_reject = 1; break;
    case RP_NULL_SIN: sin_p = NULL; must_reject = 1; break;
    case RP_OVERLAP: /* sin starts inside cos */
        sin_p = cs + 2 * rd_range(r, 0, (int64_t)bytes / 2 - 1);
        must_reject = 1;
        break;
    }
    TRACE("rope fault %u kind %d max_pos %lld dim %lld base %g\n", fault, (int)kind, (long long)max_pos, (long long)dim,
          (double)base);
    bufs_upload();
    if (cos_p) allow_rows(cos_p, 1, 0, (int64_t)bytes);
    if (sin_p) allow_rows(sin_p, 1, 0, (int64_t)bytes);
    latte_status st = latte_rope_tables(kind, max_pos, dim, base, cos_p, sin_p, FUZZ_BACKEND, NULL);
    check_status("latte_rope_tables", st, must_reject);
    bufs_check("latte_rope_tables", st == LATTE_STATUS_SUCCESS);
    if (st == LATTE_STATUS_SUCCESS) { /* position 0: angle 0, cos 1, sin 0 */
        const uint8_t *c = host_view(cos_p), *s = host_view(sin_p);
        for (int64_t j = 0; j < dim; j++) {
            uint16_t cj, sj;
            memcpy(&cj, c + 2 * j, 2);
            memcpy(&sj, s + 2 * j, 2);
            FUZZ_ASSERT(cj == 0x3f80 && (sj & 0x7fff) == 0, "rope row 0 col %lld: cos %04x sin %04x", (long long)j, cj, sj);
        }
    }
}

/* ================================================================================================ */
/* MLA: plan create / workspace size / run / bad-length counter / destroy                           */
/* ================================================================================================ */
enum {
    CF_DIM = 1, CF_RANK, CF_ROPE_ODD, CF_SCALE, CF_KEYCONV, CF_HUGE, CF_NULL_W, CF_NULL_CONFIG, CF_NULL_PLAN,
    CF_BACKEND, CF_N_FAULTS = CF_BACKEND
};
enum {
    RN_NULL_X = 1, RN_NULL_Y, RN_NULL_CACHE, RN_NULL_LENS, RN_NULL_COS, RN_BATCH, RN_MAXLEN, RN_XSTRIDE, RN_YSTRIDE,
    RN_ROWSTRIDE, RN_BATCHSTRIDE, RN_CAPACITY, RN_ROPEPOS, RN_WS_SMALL, RN_WS_NULL, RN_WS_ALIGN, RN_OVERFLOW_X,
    RN_OVERFLOW_CACHE, RN_Y_OVERLAPS_X, RN_NULL_ARGS, RN_NULL_PLAN, RN_N_FAULTS = RN_NULL_PLAN
};

static uint8_t *make_bf16(reader *r, int64_t n, int wild) {
    uint8_t *p;
    fbuf *b = buf_new(0, (size_t)n * 2, 0, 16, &p);
    for (int64_t i = 0; i < n; i++) {
        uint16_t h = to_bf16(data_float(wild) * 0.5f);
        memcpy(b->snap + 2 * i, &h, 2);
    }
    (void)r;
    return p;
}

static void fuzz_mla(reader *r) {
    latte_mla_config c;
    memset(&c, 0, sizeof c);
#ifdef FUZZ_CUDA
    /* the CUDA kernels' shapes (other shapes must come back NOT_SUPPORTED) */
    c.kv_lora_rank = 512; c.rope_dim = 64; c.nope_dim = 128; c.v_dim = 128;
    c.dim = 64 * rd_range(r, 1, 2);
    c.q_lora_rank = 64 * rd_range(r, 1, 2);
    c.n_heads = 16 * rd_range(r, 1, 2);
    if (rd_u8(r) % 8 == 1) c.n_heads = rd_range(r, 1, 40); /* mostly unsupported: must not crash */
#else
    c.dim = rd_range(r, 1, 48);
    c.q_lora_rank = rd_range(r, 1, 24);
    c.kv_lora_rank = rd_range(r, 1, 24);
    c.rope_dim = 2 * rd_range(r, 1, 4);
    c.nope_dim = rd_range(r, 1, 8);
    c.v_dim = rd_range(r, 1, 8);
    c.n_heads = rd_range(r, 1, 4);
#endif
    c.softmax_scale = rd_u8(r) % 2 ? 0.0f : 0.01f * (float)rd_range(r, 1, 100);
    c.key_convention = rd_u8(r) % 2 ? LATTE_MLA_KEYS_STORED_ROTATED : LATTE_MLA_KEYS_ROTATED_AT_READ;
    const int64_t H = c.n_heads, R = c.kv_lora_rank, P = c.rope_dim;
    latte_mla_weights w;
    w.wq_down = make_bf16(r, c.q_lora_rank * c.dim, 0);
    w.wkv_down = make_bf16(r, (R + P) * c.dim, 0);
    w.wq_up = make_bf16(r, H * (c.nope_dim + P) * c.q_lora_rank, 0);
    w.wkv_up = make_bf16(r, H * (c.nope_dim + c.v_dim) * R, 0);
    w.wo = make_bf16(r, c.dim * H * c.v_dim, 0);

    /* ---- plan creation, perhaps with one fault ---- */
    unsigned fault = rd_fault(r, CF_N_FAULTS);
    int must_reject = 1;
    latte_mla_config *cp = &c;
    latte_mla_plan plan = NULL, *planp = &plan;
    latte_backend be = FUZZ_BACKEND;
    switch (fault) {
    case CF_DIM: c.dim = rd_u8(r) % 2 ? 0 : -1 - (int64_t)rd_u8(r); break;
    case CF_RANK: c.kv_lora_rank = rd_u8(r) % 2 ? 0 : INT64_MIN; break;
    case CF_ROPE_ODD: c.rope_dim += 1; break;
    case CF_SCALE: {
        static const float bad[] = {NAN, INFINITY, -INFINITY, -1.0f};
        c.softmax_scale = bad[rd_u8(r) % 4];
    } break;
    case CF_KEYCONV: c.key_convention = (latte_mla_key_convention)(2 + rd_u8(r)); break;
    case CF_HUGE: c.n_heads = ((int64_t)1 << 20) + 1 + rd_u8(r); break;
    case CF_NULL_W: {
        const void **wp[] = {&w.wq_down, &w.wkv_down, &w.wq_up, &w.wkv_up, &w.wo};
        *wp[rd_u8(r) % 5] = NULL;
    } break;
    case CF_NULL_CONFIG: cp = NULL; break;
    case CF_NULL_PLAN: planp = NULL; break;
    case CF_BACKEND: be = (latte_backend)(2 + rd_u8(r)); break;
    default: must_reject = 0;
    }
    TRACE("mla plan fault %u dim %lld dq %lld R %lld P %lld nope %lld v %lld H %lld scale %g conv %d\n", fault,
          (long long)c.dim, (long long)c.q_lora_rank, (long long)c.kv_lora_rank, (long long)c.rope_dim,
          (long long)c.nope_dim, (long long)c.v_dim, (long long)c.n_heads, (double)c.softmax_scale, (int)c.key_convention);
    bufs_upload();
    latte_status st = latte_mla_plan_create(planp, cp, &w, be, NULL);
    check_status("latte_mla_plan_create", st, must_reject);
    bufs_check("latte_mla_plan_create", 0); /* weights are const: nothing may change, accepted or not */
    if (st != LATTE_STATUS_SUCCESS) {
        FUZZ_ASSERT(plan == NULL, "a failed plan_create wrote *plan");
        return;
    }
    FUZZ_ASSERT(plan != NULL, "plan_create succeeded with a NULL plan");
    if (rd_u8(r) % 4 == 1) { /* the caller may free the weights right after plan creation */
        bufs_free();
    }

    /* ---- one to three runs over one cache ---- */
    const int64_t row = R + P;
    int64_t batch = rd_range(r, 1, 4);
    int64_t max_len = rd_range(r, 0, 12);
    int64_t capacity = max_len + 1 + rd_range(r, 0, 3);
    int64_t xs = rd_u8(r) % 2 ? 0 : c.dim + FUZZ_VEC * rd_range(r, 0, 3);
    int64_t ys = rd_u8(r) % 2 ? 0 : c.dim + FUZZ_VEC * rd_range(r, 0, 3);
    int64_t rs = row + FUZZ_VEC * (rd_u8(r) % 2 ? rd_range(r, 0, 3) : 0);
    int64_t bs = capacity * rs + FUZZ_VEC * (rd_u8(r) % 2 ? rd_range(r, 0, 3) : 0);
    int64_t rope_pos = max_len + 1 + rd_range(r, 0, 3);
    int wild = rd_u8(r) % 8 == 0;
    int64_t xs_eff = xs ? xs : c.dim, ys_eff = ys ? ys : c.dim;

    latte_mla_run_args a;
    memset(&a, 0, sizeof a);
    a.batch = batch;
    a.x = make_matrix(r, batch, c.dim, xs_eff, LATTE_DTYPE_BF16, wild);
    a.x_row_stride = xs;
    a.y = make_matrix(r, batch, c.dim, ys_eff, LATTE_DTYPE_BF16, 0);
    a.y_row_stride = ys;
    a.max_cache_len = max_len;
    a.rope_max_pos = rope_pos;
    {
        uint8_t *cache;
        fbuf *cb = buf_new(0, (size_t)((batch - 1) * bs + capacity * rs) * 2, 0, 16, &cache);
        for (size_t i = 0; i < cb->alloc / 2; i++) {
            uint16_t h = to_bf16(data_float(wild));
            memcpy(cb->snap + 2 * i, &h, 2);
        }
        a.kv_cache.data = cache;
        a.kv_cache.batch_stride = bs;
        a.kv_cache.row_stride = rs;
        a.kv_cache.capacity = capacity;
    }
    uint8_t *lens_p;
    fbuf *lens_b = buf_new(0, (size_t)batch * 4, 0, 16, &lens_p);
    a.cache_lens = (const int32_t *)lens_p;
    {
        uint8_t *cs, *sn; /* tables: any bf16 values do (the run only reads them) */
        fbuf *cb = buf_new(0, (size_t)(rope_pos * P) * 2, 0, 16, &cs);
        fbuf *sb = buf_new(0, (size_t)(rope_pos * P) * 2, 0, 16, &sn);
        for (int64_t i = 0; i < rope_pos * P; i++) {
            uint16_t h = to_bf16(data_float(0)), g = to_bf16(data_float(0));
            memcpy(cb->snap + 2 * i, &h, 2);
            memcpy(sb->snap + 2 * i, &g, 2);
        }
        a.rope_cos = cs;
        a.rope_sin = sn;
    }

    /* workspace size: for the shapes of this run (and a rejected query changes nothing) */
    size_t ws_bytes = 0;
    st = latte_mla_workspace_size(plan, batch, max_len, &ws_bytes);
    check_status("latte_mla_workspace_size", st, 0);
    FUZZ_ASSERT(st == LATTE_STATUS_SUCCESS, "workspace_size failed for batch %lld max_len %lld", (long long)batch,
                (long long)max_len);
    {
        size_t dummy = 12345;
        st = latte_mla_workspace_size(plan, rd_u8(r) % 2 ? 0 : -1, max_len, &dummy);
        check_status("latte_mla_workspace_size(bad batch)", st, 1);
        FUZZ_ASSERT(dummy == 12345, "a rejected workspace_size wrote its output");
        st = latte_mla_workspace_size(plan, batch, rd_u8(r) % 2 ? -1 : ((int64_t)1 << 24) + 1, &dummy);
        check_status("latte_mla_workspace_size(bad max_cache_len)", st, 1);
        FUZZ_ASSERT(dummy == 12345, "a rejected workspace_size wrote its output");
        st = latte_mla_workspace_size(plan, batch, max_len, NULL);
        check_status("latte_mla_workspace_size(NULL)", st, 1);
    }
    uint8_t *ws = NULL;
    if (ws_bytes) buf_new(0, ws_bytes, 0, 256, &ws);

    /* the optional tuning step (CPU backend: validation, then nothing to tune) and describe */
    if (ws_bytes) {
        st = latte_mla_plan_tune(plan, batch, max_len, ws, ws_bytes, NULL);
        check_status("latte_mla_plan_tune", st, 0);
        st = latte_mla_plan_tune(plan, batch, max_len, ws, ws_bytes - 1, NULL);
        check_status("latte_mla_plan_tune(small workspace)", st, 1);
    }
    {
        char desc[80];
        const size_t n = 1 + rd_u8(r) % 64;
        memset(desc, 0x5a, sizeof desc);
        st = latte_mla_plan_describe(plan, batch, desc, n);
        check_status("latte_mla_plan_describe", st, 0);
        FUZZ_ASSERT(memchr(desc, 0, n) != NULL, "describe left no NUL within %zu bytes", n);
        for (size_t i = n; i < sizeof desc; i++) FUZZ_ASSERT(desc[i] == 0x5a, "describe wrote past buf_bytes");
        st = latte_mla_plan_describe(plan, batch, desc, 0);
        check_status("latte_mla_plan_describe(0 bytes)", st, 1);
    }

    int64_t expected_bad = 0;
    int n_runs = 1 + rd_u8(r) % 3;
    for (int run = 0; run < n_runs; run++) {
        /* lengths: mostly in range, some out of range (device-side: NaN row, no append, counted) */
        int32_t lens[4];
        for (int64_t b = 0; b < batch; b++) {
            unsigned k = rd_u8(r) % 16;
            static const int32_t bad[] = {-1, INT32_MIN, INT32_MAX};
            lens[b] = k == 13 ? bad[rd_u8(r) % 3] : k == 14 ? (int32_t)max_len + 1 + (int32_t)rd_u8(r) % 3
                      : (int32_t)rd_range(r, 0, max_len);
        }
        buf_write(lens_b, lens_p, lens, (size_t)batch * 4);

        latte_mla_run_args ar = a;
        void *wsp = ws;
        size_t wsb = ws_bytes + (rd_u8(r) % 4 == 1 ? 256 : 0);
        latte_mla_plan rp = plan;
        const latte_mla_run_args *argp = &ar;
        fault = rd_fault(r, RN_N_FAULTS);
        must_reject = 1;
        switch (fault) {
        case RN_NULL_X: ar.x = NULL; break;
        case RN_NULL_Y: ar.y = NULL; break;
        case RN_NULL_CACHE: ar.kv_cache.data = NULL; break;
        case RN_NULL_LENS: ar.cache_lens = NULL; break;
        case RN_NULL_COS: if (rd_u8(r) % 2) ar.rope_cos = NULL; else ar.rope_sin = NULL; break;
        case RN_BATCH: ar.batch = rd_u8(r) % 2 ? 0 : ((int64_t)1 << 20) + 1; break;
        case RN_MAXLEN: ar.max_cache_len = rd_u8(r) % 2 ? -1 : capacity; break;
        case RN_XSTRIDE: if (c.dim > 1) ar.x_row_stride = rd_range(r, 1, c.dim - 1); else must_reject = 0; break;
        case RN_YSTRIDE: if (c.dim > 1) ar.y_row_stride = -rd_range(r, 1, 100); else must_reject = 0; break;
        case RN_ROWSTRIDE: ar.kv_cache.row_stride = rd_range(r, 0, row - 1); break;
        case RN_BATCHSTRIDE:
            if (batch > 1) ar.kv_cache.batch_stride = rd_range(r, 0, capacity * rs - 1);
            else must_reject = 0;
            break;
        case RN_CAPACITY: ar.kv_cache.capacity = rd_u8(r) % 2 ? 0 : max_len; break;
        case RN_ROPEPOS: ar.rope_max_pos = rd_range(r, -2, max_len); break;
        case RN_WS_SMALL: if (ws_bytes) wsb = rd_range(r, 0, (int64_t)(ws_bytes - 1 < 65535 ? ws_bytes - 1 : 65535)); else must_reject = 0; break;
        case RN_WS_NULL: if (ws_bytes) wsp = NULL; else must_reject = 0; break;
        case RN_WS_ALIGN: if (ws_bytes) wsp = ws + FUZZ_WS_MISALIGN; else must_reject = 0; break;
        case RN_OVERFLOW_X: if (batch > 1) ar.x_row_stride = overflow_size(r) & ~(int64_t)(FUZZ_VEC - 1); else must_reject = 0; break;
        case RN_OVERFLOW_CACHE:
            if (batch > 1) ar.kv_cache.batch_stride = overflow_size(r) & ~(int64_t)(FUZZ_VEC - 1);
            else if (max_len > 0) ar.kv_cache.row_stride = overflow_size(r) & ~(int64_t)(FUZZ_VEC - 1);
            else must_reject = 0;
            break;
        case RN_Y_OVERLAPS_X: ar.y = (void *)(uintptr_t)ar.x; ar.y_row_stride = ar.x_row_stride; break;
        case RN_NULL_ARGS: argp = NULL; break;
        case RN_NULL_PLAN: rp = NULL; break;
        default: must_reject = 0;
        }
        TRACE("mla run fault %u batch %lld max_len %lld cap %lld xs %lld ys %lld rs %lld bs %lld rope_pos %lld ws %zu/%zu "
              "lens", fault, (long long)ar.batch, (long long)ar.max_cache_len, (long long)ar.kv_cache.capacity,
              (long long)ar.x_row_stride, (long long)ar.y_row_stride, (long long)ar.kv_cache.row_stride,
              (long long)ar.kv_cache.batch_stride, (long long)ar.rope_max_pos, wsb, ws_bytes);
        for (int64_t b = 0; b < batch; b++) TRACE(" %d", lens[b]);
        TRACE("\n");
        bufs_upload();
        int64_t bad_here = 0;
        for (int64_t b = 0; b < batch; b++) {
            int ok = lens[b] >= 0 && lens[b] <= max_len;
            bad_here += !ok;
            allow_rows((const uint8_t *)a.y + b * ys_eff * 2, 1, 0, c.dim * 2);
            if (ok) allow_rows((const uint8_t *)a.kv_cache.data + (b * bs + (int64_t)lens[b] * rs) * 2, 1, 0, row * 2);
        }
        if (ws) allow_rows(ws, 1, 0, (int64_t)ws_bytes);
        st = latte_mla_run(rp, argp, wsp, wsb, NULL);
        check_status("latte_mla_run", st, must_reject);
        bufs_check("latte_mla_run", st == LATTE_STATUS_SUCCESS);
        if (st == LATTE_STATUS_SUCCESS) {
            expected_bad += bad_here;
            for (int64_t b = 0; b < batch; b++) {
                if (lens[b] >= 0 && lens[b] <= max_len) continue;
                const uint8_t *yr = host_view((const uint8_t *)a.y + b * ys_eff * 2);
                for (int64_t j = 0; j < c.dim; j++) {
                    uint16_t h;
                    memcpy(&h, yr + 2 * j, 2);
                    FUZZ_ASSERT(bf16_is_nan(h), "sequence %lld with bad length %d: y[%lld] = %04x, not NaN", (long long)b,
                                lens[b], (long long)j, h);
                }
            }
        }
    }
    {
        int64_t count = -1;
        st = latte_mla_plan_bad_lengths(plan, &count, rd_u8(r) % 2, NULL);
        check_status("latte_mla_plan_bad_lengths", st, 0);
        if (st == LATTE_STATUS_SUCCESS)
            FUZZ_ASSERT(count == expected_bad, "bad-length counter %lld, expected %lld", (long long)count,
                        (long long)expected_bad);
        st = latte_mla_plan_bad_lengths(plan, NULL, 0, NULL);
        check_status("latte_mla_plan_bad_lengths(NULL)", st, 1);
    }
    st = latte_mla_run_with_events(plan, &a, ws, ws_bytes, NULL, NULL); /* NULL events: rejected on any backend */
    check_status("latte_mla_run_with_events(NULL events)", st, 1);
    bufs_check("latte_mla_run_with_events", 0);
    st = latte_mla_plan_destroy(plan);
    check_status("latte_mla_plan_destroy", st, 0);
    FUZZ_ASSERT(st == LATTE_STATUS_SUCCESS, "plan_destroy failed");
}

/* ================================================================================================ */
static void fuzz_misc(reader *r) {
    int v = (int)rd_u32(r);
    FUZZ_ASSERT(latte_status_string((latte_status)v) != NULL, "latte_status_string(%d) is NULL", v);
    FUZZ_ASSERT(latte_version() == LATTE_VERSION, "latte_version %d", latte_version());
    latte_status st = latte_mla_plan_destroy(NULL);
    check_status("latte_mla_plan_destroy(NULL)", st, 0);
    size_t ws = 77;
    st = latte_mla_workspace_size(NULL, 1, 1, &ws);
    check_status("latte_mla_workspace_size(NULL plan)", st, 1);
    FUZZ_ASSERT(ws == 77, "a rejected workspace_size wrote its output");
    st = latte_qknorm_across_heads(NULL, FUZZ_BACKEND, NULL);
    check_status("latte_qknorm_across_heads(NULL)", st, 1);
    latte_qknorm_params p = latte_qknorm_params_default(0, NULL, 1, NULL, 0, NULL, NULL, LATTE_DTYPE_BF16);
    FUZZ_ASSERT(p.eps == 1e-6f && p.q_row_stride == 1, "latte_qknorm_params_default");
    st = latte_qknorm_across_heads(&p, (latte_backend)(2 + rd_u8(r)), NULL);
    check_status("latte_qknorm_across_heads(bad backend)", st, 1);
}

/* The standalone driver writes the input that failed to fuzz-crash.bin (libFuzzer does its own). */
static const uint8_t *cur_input;
static size_t cur_size;
static void fuzz_dump_input(void) {
#ifdef FUZZ_STANDALONE
    FILE *f = fopen("fuzz-crash.bin", "wb");
    if (f) {
        fwrite(cur_input, 1, cur_size, f);
        fclose(f);
        fprintf(stderr, "fuzz_api: input written to fuzz-crash.bin (%zu bytes)\n", cur_size);
    }
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size, 0};
    cur_input = data;
    cur_size = size;
    data_rng = rd_u32(&r);
    unsigned op = rd_u8(&r) % 8;
    if (op < 3) fuzz_mla(&r);
    else if (op < 5) fuzz_qknorm(&r);
    else if (op < 7) fuzz_rope(&r);
    else fuzz_misc(&r);
    bufs_free();
    return 0;
}

#ifdef FUZZ_STANDALONE
/* ---- standalone driver: random inputs from a seeded RNG for N seconds, or replay the files given ---- */
#include <time.h>
#if defined(__SANITIZE_ADDRESS__) /* gcc -fsanitize=address (the clang build is libFuzzer's) */
#include <sanitizer/common_interface_defs.h>
#define FUZZ_HAVE_DEATH_CALLBACK 1
#endif
#ifdef FUZZ_CUDA
/* An input costs milliseconds on the GPU, far more under compute-sanitizer: the clock is read after every one,
 * and a progress line every FUZZ_PROGRESS_S gives the count even when an outer timeout ends the run. */
#define FUZZ_CLOCK_MASK 0
#define FUZZ_PROGRESS_S 15.0
#else
#define FUZZ_CLOCK_MASK 63 /* host inputs take microseconds: read the clock every 64 */
#define FUZZ_PROGRESS_S 0.0
#endif
static double fuzz_elapsed(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}
int main(int argc, char **argv) {
#ifdef FUZZ_HAVE_DEATH_CALLBACK
    __sanitizer_set_death_callback(fuzz_dump_input); /* a sanitizer report also saves the input */
#endif
    double seconds = 10;
    long long max_runs = 0; /* -runs=N: stop after N inputs (0: only the time bounds the run) */
    uint64_t seed = (uint64_t)time(NULL);
    int n_files = 0;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "-seconds=", 9)) seconds = atof(argv[i] + 9);
        else if (!strncmp(argv[i], "-runs=", 6)) max_runs = atoll(argv[i] + 6);
        else if (!strncmp(argv[i], "-seed=", 6)) seed = strtoull(argv[i] + 6, NULL, 0);
        else { /* a crash input to replay */
            FILE *f = fopen(argv[i], "rb");
            if (!f) { perror(argv[i]); return 2; }
            uint8_t buf[1 << 16];
            size_t n = fread(buf, 1, sizeof buf, f);
            fclose(f);
            LLVMFuzzerTestOneInput(buf, n);
            n_files++;
        }
    }
    if (n_files) { printf("fuzz_api: replayed %d inputs\n", n_files); return 0; }
#ifdef FUZZ_CUDA
    if (latte_cuda_device_count() < 1) { printf("fuzz_api: no CUDA device, nothing to do\n"); return 77; }
#endif
    printf("fuzz_api: seed %llu, %.0f s", (unsigned long long)seed, seconds);
    if (max_runs > 0) printf(" or %lld inputs", max_runs);
    printf(" (-seed=%llu reproduces)\n", (unsigned long long)seed);
    fflush(stdout);
    uint64_t s = seed;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long long execs = 0;
    double next_progress = FUZZ_PROGRESS_S, el = 0.0;
    uint8_t in[512];
    for (;;) {
        size_t n = 0;
        uint64_t len_pick;
        data_rng = s;
        len_pick = data_u64();
        s = data_rng;
        n = (size_t)(len_pick % sizeof in);
        for (size_t i = 0; i < n; i++) {
            data_rng = s;
            in[i] = (uint8_t)data_u64();
            s = data_rng;
        }
        LLVMFuzzerTestOneInput(in, n);
        execs++;
        if (max_runs > 0 && execs >= max_runs) break;
        if ((execs & FUZZ_CLOCK_MASK) == 0) {
            el = fuzz_elapsed(&t0);
            if (el >= seconds) break;
            if (FUZZ_PROGRESS_S > 0.0 && el >= next_progress) {
                printf("fuzz_api: %lld executions, %.0f s\n", execs, el);
                fflush(stdout);
                next_progress += FUZZ_PROGRESS_S;
            }
        }
    }
    printf("fuzz_api: %lld executions in %.1f s, no findings\n", execs, fuzz_elapsed(&t0));
    return 0;
}
#endif
