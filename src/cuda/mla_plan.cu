// MLA decode layer, CUDA backend: the plan (re-laid weights) and the run (one decode step).
//
// The run, in the spec's rounding order (every arrow below is one bf16 rounding):
//   a. down    [q_lora | kv_lora] = x · [Wq_down; Wkv_down]ᵀ       GEMM + epilogue kernel:
//              q_lora -> workspace, kv_lora -> cache row len[b] (k_pe roped first if keys are stored rotated),
//              only for valid lengths; an invalid one bumps the plan's counter instead
//   b. up      q = q_lora · Wq_upᵀ                                  [batch][H*192]
//   c. rope    q_attn[b][h][512:576] = rope_bf16(q_pe, len[b])
//   d. W_UK    q_attn[b][h][0:512] = W_UK[h]ᵀ · q_nope[h]            GEMM batched over heads
//   e. attention over the latent cache (mla_attention.cuh): o_lat [batch][H][512]
//   f. W_UV    o[b][h*128:(h+1)*128] = W_UV[h] · o_lat[b][h]        GEMM batched over heads
//   g. out     y = o · Woᵀ
// The five GEMMs (a, b, d, f, g) run through cuBLASLt where it can be loaded (cublaslt_loader.cuh: it streams
// the weights faster than ours), else through gemm_bf16 (gemm_bf16.cuh). Both round each projection's
// output to bf16 once after an fp32 sum, so the rounding points above hold either way; with cuBLASLt the
// down projection writes bf16 [batch][dq + 576] to workspace and the epilogue reads that instead of partials.
// Environment, read once at plan creation (the run never looks at it):
//   LATTE_MLA_GEMM=latte      our GEMM for every projection
//   LATTE_MLA_GEMM=cublaslt   cuBLASLt for every projection; plan creation fails (NOT_SUPPORTED) without it,
//                             and a run fails (NOT_SUPPORTED) for a batch its heuristic has no algorithm for
//   unset / empty             cuBLASLt where it loads and its heuristic finds an algorithm, per projection
//                             and batch; our GEMM otherwise
//   LATTE_MLA_SIMPLE_GEMM=1   our one-thread-per-output fallback for every GEMM (to bisect a wrong result on
//                             the GPU); implies LATTE_MLA_GEMM=latte
// cuBLASLt's layouts and algorithm depend on the batch (and the x / y row strides): they are made by the
// first run of each such shape (host work only: heuristic queries, nothing enqueued) and kept in the plan.
//
// Run contract: no allocation, no synchronization, graph-capturable. All scratch is carved from the caller's
// workspace in 256-byte aligned slices (mla_layout); the split-K partials of all GEMMs share one slice, since
// the GEMMs run one after another on one stream, and so does cuBLASLt's workspace.
#include "internal.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <new>

#include "cublaslt_loader.cuh"
#include "gemm_bf16.cuh"
#include "mla_attention.cuh"
#include "mla_small_kernels.cuh"

namespace {

using latte::GemmProblem;
typedef __nv_bfloat16 bf16;

constexpr int kR = 512, kP = 64, kNope = 128, kV = 128, kRow = kR + kP, kQHead = kNope + kP;

// cuBLASLt: the workspace its algorithms may use (a slice of the caller's), and how many run shapes a plan
// keeps (a serving engine captures graphs for a few dozen batch sizes; beyond this, a run makes its shape,
// uses it and frees it again: correct, only slower on the host).
constexpr size_t kLtWorkspace = (size_t)32 << 20;
constexpr int kMaxLtShapes = 256;

enum Projection { kDown, kUp, kUk, kUv, kOut, kNProj };
const char *const kProjectionName[kNProj] = {"down projection", "up projection", "W_UK absorption",
                                             "W_UV absorption", "output projection"};

// cuBLASLt layouts and algorithms of the five projections for one run shape
struct LtShape {
    int64_t batch, x_row_stride, y_row_stride;
    latte::LtGemm g[kNProj];
};

struct MlaCudaPlan {
    void *block;                    // one cudaMalloc: every re-laid weight + the counter
    bf16 *w_down;                   // [dq + 576][dim]: Wq_down stacked on Wkv_down
    bf16 *wq_up;                    // [H*192][dq]
    bf16 *w_uk_t;                   // [H][512][128]: W_UK[h]ᵀ
    bf16 *w_uv;                     // [H][128][512]
    bf16 *wo;                       // [dim][H*128]
    unsigned long long *bad_lengths;
    latte::GemmDeviceInfo gemm;
    bool simple_gemm;
    bool use_lt;                    // cuBLASLt loaded and its context made: projections go there where they can
    bool lt_forced;                 // LATTE_MLA_GEMM=cublaslt: a projection it cannot run fails the run
    latte::LtContext lt;
    std::mutex lt_mutex;            // guards the shape table (runs of one plan may come from several threads)
    LtShape *lt_shapes[kMaxLtShapes];
    int n_lt_shapes;
};

size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

// Workspace slices and the per-GEMM splits, a pure function of (plan, batch, max_cache_len).
struct MlaLayout {
    size_t q_lora, q, q_attn, o_lat, o, partial, attn, total;  // byte offsets (total = size)
    size_t down_out, lt_ws;        // cuBLASLt only (else 0): bf16 [batch][dq + 576], its workspace
    int split_down, split_up, split_uk, split_uv, split_out;
    int attn_splits, attn_split_len;
};

MlaLayout mla_layout(const struct latte_mla_plan_s *plan, int64_t batch, int64_t max_cache_len) {
    const MlaCudaPlan *cp = (const MlaCudaPlan *)plan->impl;
    const latte_mla_config &c = plan->config;
    const int H = (int)c.n_heads, dq = (int)c.q_lora_rank, dim = (int)c.dim;
    const bool simple = cp->simple_gemm;
    MlaLayout L;
    L.split_down = latte::gemm_choose_split(cp->gemm, batch, dq + kRow, dim, 1, simple);
    L.split_up = latte::gemm_choose_split(cp->gemm, batch, H * kQHead, dq, 1, simple);
    L.split_uk = latte::gemm_choose_split(cp->gemm, batch, kR, kNope, H, simple);
    L.split_uv = latte::gemm_choose_split(cp->gemm, batch, kV, kR, H, simple);
    L.split_out = latte::gemm_choose_split(cp->gemm, batch, dim, H * kV, 1, simple);
    latte::mla_attention_schedule((int)batch, H, (int)max_cache_len, cp->gemm.sm_count, &L.attn_splits,
                                  &L.attn_split_len);

    size_t partial = latte::gemm_partial_bytes(batch, dq + kRow, 1, L.split_down);  // always: the epilogue reads it
    auto need = [&](int split, int N, int z) {
        const size_t b = split > 1 ? latte::gemm_partial_bytes(batch, N, z, split) : 0;
        if (b > partial) partial = b;
    };
    need(L.split_up, H * kQHead, 1);
    need(L.split_uk, kR, H);
    need(L.split_uv, kV, H);
    need(L.split_out, dim, 1);

    const size_t B = (size_t)batch;
    size_t off = 0;
    auto take = [&](size_t bytes) {
        const size_t at = off;
        off += align256(bytes);
        return at;
    };
    L.q_lora = take(B * dq * 2);
    L.q = take(B * H * kQHead * 2);
    L.q_attn = take(B * H * kRow * 2);
    L.o_lat = take(B * H * kR * 2);
    L.o = take(B * H * kV * 2);
    L.partial = take(partial);
    L.attn = take(latte::mla_attention_workspace_bytes((int)batch, H, L.attn_splits));
    L.down_out = L.lt_ws = 0;
    if (cp->use_lt) {  // the partials stay: a projection without a cuBLASLt algorithm falls back to our GEMM
        L.down_out = take(B * (dq + kRow) * 2);
        L.lt_ws = take(kLtWorkspace);
    }
    L.total = off;
    return L;
}

latte_status cuda_fail(cudaError_t e, const char *what) {
    (void)cudaGetLastError();  // clear a non-sticky error so the caller's next CUDA call is not blamed
    if (e == cudaErrorMemoryAllocation)
        return latte_set_error(LATTE_STATUS_OUT_OF_MEMORY, "mla (CUDA): %s: %s: %s", what, cudaGetErrorName(e),
                               cudaGetErrorString(e));
    return latte_set_error(LATTE_STATUS_CUDA_ERROR, "mla (CUDA): %s: %s: %s", what, cudaGetErrorName(e),
                           cudaGetErrorString(e));
}

// C = A·Bᵀ to bf16, through fp32 partials + reduce when split > 1
void project(const GemmProblem &prob_in, float *partial, bool simple, cudaStream_t stream) {
    GemmProblem p = prob_in;
    if (p.split > 1) {
        p.partial = partial;
        latte::gemm_bf16_launch(p, simple, stream);
        latte::gemm_reduce_launch(partial, p.split, p.batch, p.M, p.N, p.C, p.ldc, p.batch_stride_c, stream);
    } else {
        p.partial = nullptr;
        latte::gemm_bf16_launch(p, simple, stream);
    }
}

GemmProblem problem(const bf16 *A, int64_t lda, int64_t sa, const bf16 *B, int64_t ldb, int64_t sb, bf16 *C,
                    int64_t ldc, int64_t sc, int64_t M, int N, int K, int batch, int split) {
    GemmProblem p;
    p.A = A;
    p.lda = lda;
    p.batch_stride_a = sa;
    p.B = B;
    p.ldb = ldb;
    p.batch_stride_b = sb;
    p.C = C;
    p.ldc = ldc;
    p.batch_stride_c = sc;
    p.partial = nullptr;
    p.M = M;
    p.N = N;
    p.K = K;
    p.batch = batch;
    p.split = split;
    return p;
}

// The five projections of one run. Pointers may be null where only the geometry is wanted (cuBLASLt's
// layouts depend on M, the leading dimensions and batch strides, never on the pointers).
struct MlaOperands {
    const bf16 *x;
    int64_t x_row_stride;
    bf16 *y;
    int64_t y_row_stride;
    bf16 *q_lora, *q, *q_attn, *o_lat, *o, *down_out;
};
void mla_problems(const MlaCudaPlan *cp, const latte_mla_config &c, int64_t M, const MlaLayout &L,
                  const MlaOperands &t, GemmProblem p[kNProj]) {
    const int H = (int)c.n_heads, dq = (int)c.q_lora_rank, dim = (int)c.dim;
    // a. [q_lora | kv_lora] = x · w_downᵀ -> down_out (cuBLASLt) or split-K partials (ours, C unused)
    p[kDown] = problem(t.x, t.x_row_stride, 0, cp->w_down, dim, 0, t.down_out, dq + kRow, 0, M, dq + kRow, dim, 1,
                       L.split_down);
    // b. q = q_lora · Wq_upᵀ
    p[kUp] = problem(t.q_lora, dq, 0, cp->wq_up, dq, 0, t.q, (int64_t)H * kQHead, 0, M, H * kQHead, dq, 1, L.split_up);
    // d. per head h: q_attn[:, h, 0:512] = q_nope[:, h] · W_UK[h] (q_nope: columns h*192 .. +128 of q)
    p[kUk] = problem(t.q, (int64_t)H * kQHead, kQHead, cp->w_uk_t, kNope, (int64_t)kR * kNope, t.q_attn,
                     (int64_t)H * kRow, kRow, M, kR, kNope, H, L.split_uk);
    // f. per head h: o[:, h*128 .. +128] = o_lat[:, h] · W_UV[h]ᵀ
    p[kUv] = problem(t.o_lat, (int64_t)H * kR, kR, cp->w_uv, kR, (int64_t)kV * kR, t.o, (int64_t)H * kV, kV, M, kV, kR,
                     H, L.split_uv);
    // g. y = o · Woᵀ
    p[kOut] = problem(t.o, (int64_t)H * kV, 0, cp->wo, (int64_t)H * kV, 0, t.y, t.y_row_stride, 0, M, dim, H * kV, 1,
                      L.split_out);
}

void lt_shape_free(const MlaCudaPlan *cp, LtShape *s) {
    if (!s) return;
    for (int i = 0; i < kNProj; i++) latte::lt_gemm_destroy(cp->lt, &s->g[i]);
    delete s;
}

// The cuBLASLt shape of a run: from the plan's table, or made now (layouts + one heuristic query per
// projection; host work only) and added to it. *temporary: the table was full, the caller frees the shape
// after its run. nullptr: host allocation failed.
LtShape *lt_shape_for(MlaCudaPlan *cp, const latte_mla_config &c, int64_t M, int64_t x_row_stride,
                      int64_t y_row_stride, const MlaLayout &L, bool *temporary) {
    *temporary = false;
    std::lock_guard<std::mutex> lock(cp->lt_mutex);
    for (int i = 0; i < cp->n_lt_shapes; i++) {
        LtShape *s = cp->lt_shapes[i];
        if (s->batch == M && s->x_row_stride == x_row_stride && s->y_row_stride == y_row_stride) return s;
    }
    LtShape *s = new (std::nothrow) LtShape();
    if (!s) return nullptr;
    s->batch = M;
    s->x_row_stride = x_row_stride;
    s->y_row_stride = y_row_stride;
    MlaOperands geometry;
    memset(&geometry, 0, sizeof geometry);
    geometry.x_row_stride = x_row_stride;
    geometry.y_row_stride = y_row_stride;
    GemmProblem p[kNProj];
    mla_problems(cp, c, M, L, geometry, p);
    for (int i = 0; i < kNProj; i++) latte::lt_gemm_prepare(cp->lt, p[i], &s->g[i]);
    if (cp->n_lt_shapes < kMaxLtShapes)
        cp->lt_shapes[cp->n_lt_shapes++] = s;
    else
        *temporary = true;
    return s;
}

}  // namespace

// ---- plan ---------------------------------------------------------------------------------------------
extern "C" latte_status latte_cuda_mla_plan_init(struct latte_mla_plan_s *plan, const latte_mla_weights *w,
                                                 latte_stream_t stream_) {
    const cudaStream_t stream = (cudaStream_t)stream_;
    const latte_mla_config &c = plan->config;
    const int64_t H = c.n_heads, dq = c.q_lora_rank, dim = c.dim;
    cudaError_t e;
    if ((e = cudaGetDevice(&plan->device))) return cuda_fail(e, "cudaGetDevice");

    // the GEMM choice (see the top of this file), read once, here: the run never looks at the environment
    const char *simple_env = getenv("LATTE_MLA_SIMPLE_GEMM");
    const bool simple = simple_env && simple_env[0] == '1';
    const char *gemm_env = getenv("LATTE_MLA_GEMM");
    bool want_lt = !simple, lt_forced = false;
    if (gemm_env && gemm_env[0]) {
        if (!strcmp(gemm_env, "latte")) {
            want_lt = false;
        } else if (!strcmp(gemm_env, "cublaslt")) {
            if (simple)
                return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                                       "environment: LATTE_MLA_GEMM=cublaslt contradicts LATTE_MLA_SIMPLE_GEMM=1 "
                                       "(our simple GEMM for every projection)");
            lt_forced = true;
        } else {
            return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                                   "environment: LATTE_MLA_GEMM=\"%.40s\" is neither \"latte\" nor \"cublaslt\"",
                                   gemm_env);
        }
    }
    const latte::CublasLtApi *lt_api = nullptr;
    if (want_lt) {
        const char *why = nullptr;
        lt_api = latte::cublaslt_api(&why);
        if (!lt_api && lt_forced)
            return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "environment: LATTE_MLA_GEMM=cublaslt, but cuBLASLt: %s",
                                   why ? why : "unavailable");
    }

    MlaCudaPlan *cp = new (std::nothrow) MlaCudaPlan();
    if (!cp) return latte_set_error(LATTE_STATUS_OUT_OF_MEMORY, "mla (CUDA): host allocation of the plan failed");
    cp->simple_gemm = simple;
    cp->use_lt = false;
    cp->lt_forced = lt_forced;
    if ((e = latte::gemm_bf16_setup(&cp->gemm))) {
        delete cp;
        return cuda_fail(e, "GEMM kernel setup");
    }

    // element counts of the re-laid weights, and their 256-byte aligned offsets in one block
    const size_t n_down = (size_t)(dq + kRow) * dim, n_up = (size_t)H * kQHead * dq, n_uk = (size_t)H * kR * kNope,
                 n_uv = (size_t)H * kV * kR, n_o = (size_t)dim * H * kV;
    size_t off = 0;
    const size_t o_down = off; off += align256(n_down * 2);
    const size_t o_up = off;   off += align256(n_up * 2);
    const size_t o_uk = off;   off += align256(n_uk * 2);
    const size_t o_uv = off;   off += align256(n_uv * 2);
    const size_t o_o = off;    off += align256(n_o * 2);
    const size_t o_bad = off;  off += 256;
    if ((e = cudaMalloc(&cp->block, off))) {
        delete cp;
        return cuda_fail(e, "cudaMalloc of the plan's weights");
    }
    char *base = (char *)cp->block;
    cp->w_down = (bf16 *)(base + o_down);
    cp->wq_up = (bf16 *)(base + o_up);
    cp->w_uk_t = (bf16 *)(base + o_uk);
    cp->w_uv = (bf16 *)(base + o_uv);
    cp->wo = (bf16 *)(base + o_o);
    cp->bad_lengths = (unsigned long long *)(base + o_bad);

    const cudaMemcpyKind d2d = cudaMemcpyDeviceToDevice;
    const bf16 *wkv_up = (const bf16 *)w->wkv_up;
    e = cudaMemcpyAsync(cp->w_down, w->wq_down, (size_t)dq * dim * 2, d2d, stream);
    if (!e) e = cudaMemcpyAsync(cp->w_down + dq * dim, w->wkv_down, (size_t)kRow * dim * 2, d2d, stream);
    if (!e) e = cudaMemcpyAsync(cp->wq_up, w->wq_up, n_up * 2, d2d, stream);
    if (!e) e = cudaMemcpyAsync(cp->wo, w->wo, n_o * 2, d2d, stream);
    // W_UV[h] = rows h*256 + 128 .. h*256 + 255 of Wkv_up: H blocks of 128 rows, 256 rows apart
    if (!e)
        e = cudaMemcpy2DAsync(cp->w_uv, (size_t)kV * kR * 2, wkv_up + (size_t)kNope * kR, (size_t)(kNope + kV) * kR * 2,
                              (size_t)kV * kR * 2, (size_t)H, d2d, stream);
    if (!e) {
        latte::mla_transpose_w_uk_launch(wkv_up, cp->w_uk_t, (int)H, stream);
        e = cudaGetLastError();
    }
    if (!e) e = cudaMemsetAsync(cp->bad_lengths, 0, sizeof(unsigned long long), stream);
    if (!e) e = cudaStreamSynchronize(stream);
    if (e) {
        const latte_status st = cuda_fail(e, "re-laying the weights");
        cudaFree(cp->block);
        delete cp;
        return st;
    }
    if (lt_api) {
        // cuBLASLt's own runtime works on the driver's current context: make it this device's primary context
        // (our runtime may not have bound it to this thread yet), then create the handle there.
        cublasStatus_t ls = CUBLAS_STATUS_SUCCESS;
        if ((e = cudaSetDevice(plan->device))) {
            const latte_status st = cuda_fail(e, "cudaSetDevice");
            cudaFree(cp->block);
            delete cp;
            return st;
        }
        ls = latte::lt_context_create(&cp->lt, lt_api, kLtWorkspace);
        if (ls == CUBLAS_STATUS_SUCCESS) {
            cp->use_lt = true;
        } else if (lt_forced) {
            cudaFree(cp->block);
            delete cp;
            return latte_set_error(LATTE_STATUS_NOT_SUPPORTED,
                                   "environment: LATTE_MLA_GEMM=cublaslt, but creating the cuBLASLt handle and "
                                   "descriptors failed: %s",
                                   latte::cublaslt_status_name(ls));
        }  // else: our GEMM, silently (cuBLASLt is only a faster way to the same result)
    }
    plan->impl = cp;
    return LATTE_STATUS_SUCCESS;
}

extern "C" void latte_cuda_mla_plan_free(struct latte_mla_plan_s *plan) {
    MlaCudaPlan *cp = (MlaCudaPlan *)plan->impl;
    if (!cp) return;
    cudaFree(cp->block);  // works from any current device (unified addressing)
    (void)cudaGetLastError();
    for (int i = 0; i < cp->n_lt_shapes; i++) lt_shape_free(cp, cp->lt_shapes[i]);
    latte::lt_context_destroy(&cp->lt);
    delete cp;
    plan->impl = nullptr;
}

extern "C" size_t latte_cuda_mla_workspace_size(const struct latte_mla_plan_s *plan, int64_t batch,
                                                int64_t max_cache_len) {
    return mla_layout(plan, batch, max_cache_len).total;
}

extern "C" latte_status latte_cuda_mla_bad_lengths(struct latte_mla_plan_s *plan, int64_t *count, int reset,
                                                   latte_stream_t stream_) {
    const cudaStream_t stream = (cudaStream_t)stream_;
    MlaCudaPlan *cp = (MlaCudaPlan *)plan->impl;
    unsigned long long n = 0;
    cudaError_t e = cudaMemcpyAsync(&n, cp->bad_lengths, sizeof n, cudaMemcpyDeviceToHost, stream);
    if (!e && reset) e = cudaMemsetAsync(cp->bad_lengths, 0, sizeof n, stream);
    if (!e) e = cudaStreamSynchronize(stream);
    if (e) return cuda_fail(e, "reading the bad-length counter");
    *count = (int64_t)n;
    return LATTE_STATUS_SUCCESS;
}

// ---- run ----------------------------------------------------------------------------------------------
extern "C" latte_status latte_cuda_mla_run(struct latte_mla_plan_s *plan, const latte_mla_run_args *a, void *workspace,
                                           size_t workspace_bytes, latte_stream_t stream_, void *const *events) {
    const cudaStream_t stream = (cudaStream_t)stream_;
    MlaCudaPlan *cp = (MlaCudaPlan *)plan->impl;
    const latte_mla_config &c = plan->config;
    const int H = (int)c.n_heads, dq = (int)c.q_lora_rank;
    const int64_t M = a->batch;
    const bool simple = cp->simple_gemm;
    int dev = -1;
    cudaError_t e = cudaGetDevice(&dev);
    if (e) return cuda_fail(e, "cudaGetDevice");
    if (dev != plan->device)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "plan: created on CUDA device %d, but the current device is %d", plan->device, dev);

    const MlaLayout L = mla_layout(plan, M, a->max_cache_len);
    if (workspace_bytes < L.total)  // the API layer checked this already; keep the slices honest regardless
        return latte_set_error(LATTE_STATUS_INSUFFICIENT_WORKSPACE, "workspace: %zu bytes given, %zu needed",
                               workspace_bytes, L.total);
    char *ws = (char *)workspace;
    MlaOperands t;
    t.x = (const bf16 *)a->x;
    t.x_row_stride = a->x_row_stride;
    t.y = (bf16 *)a->y;
    t.y_row_stride = a->y_row_stride;
    t.q_lora = (bf16 *)(ws + L.q_lora);
    t.q = (bf16 *)(ws + L.q);
    t.q_attn = (bf16 *)(ws + L.q_attn);
    t.o_lat = (bf16 *)(ws + L.o_lat);
    t.o = (bf16 *)(ws + L.o);
    t.down_out = cp->use_lt ? (bf16 *)(ws + L.down_out) : nullptr;
    GemmProblem P[kNProj];
    mla_problems(cp, c, M, L, t, P);
    float *partial = (float *)(ws + L.partial);
    const bf16 *rope_cos = (const bf16 *)a->rope_cos, *rope_sin = (const bf16 *)a->rope_sin;
    bf16 *cache = (bf16 *)a->kv_cache.data;
    const bool rotated_at_read = c.key_convention == LATTE_MLA_KEYS_ROTATED_AT_READ;

    // Which projections cuBLASLt runs, decided before anything is enqueued (a rejected run writes nothing).
    struct ShapeHolder {  // frees a shape the plan's full table could not keep, on every return
        const MlaCudaPlan *cp;
        LtShape *shape;
        bool temporary;
        ~ShapeHolder() {
            if (temporary) lt_shape_free(cp, shape);
        }
    } lt = {cp, nullptr, false};
    bool on_lt[kNProj] = {false, false, false, false, false};
    if (cp->use_lt) {
        lt.shape = lt_shape_for(cp, c, M, a->x_row_stride, a->y_row_stride, L, &lt.temporary);
        if (!lt.shape && cp->lt_forced)
            return latte_set_error(LATTE_STATUS_OUT_OF_MEMORY, "mla (CUDA): host allocation of cuBLASLt layouts failed");
        for (int i = 0; i < kNProj; i++) {
            on_lt[i] = lt.shape && lt.shape->g[i].ready;
            if (!on_lt[i] && lt.shape && cp->lt_forced)
                return latte_set_error(LATTE_STATUS_NOT_SUPPORTED,
                                       "environment: LATTE_MLA_GEMM=cublaslt, but cuBLASLt has no algorithm for the %s "
                                       "at batch %lld: %s",
                                       kProjectionName[i], (long long)M,
                                       latte::cublaslt_status_name(lt.shape->g[i].status));
        }
        // cuBLASLt's runtime enqueues on the driver's current context: make sure it is this device's primary
        // context on this thread (a no-op when it is already; not a stream operation, so capture-safe)
        if ((e = cudaSetDevice(dev))) return cuda_fail(e, "cudaSetDevice");
    }

    // projection i (b, d, f, g) through cuBLASLt or our GEMM; an error status set, or success
    auto project_i = [&](int i) -> latte_status {
        if (!on_lt[i]) {
            project(P[i], partial, simple, stream);
            return LATTE_STATUS_SUCCESS;
        }
        const cublasStatus_t ls = latte::lt_gemm_run(cp->lt, lt.shape->g[i], P[i], ws + L.lt_ws, stream);
        if (ls == CUBLAS_STATUS_SUCCESS) return LATTE_STATUS_SUCCESS;
        return latte_set_error(LATTE_STATUS_CUDA_ERROR, "mla (CUDA): cuBLASLt matmul of the %s: %s",
                               kProjectionName[i], latte::cublaslt_status_name(ls));
    };
    latte_status st;

    auto record = [&](int i) -> cudaError_t {
        if (!events || !events[i]) return cudaSuccess;
        return cudaEventRecord((cudaEvent_t)events[i], stream);
    };
#define LATTE_PHASE_CHECK(what)                                     \
    do {                                                            \
        if ((e = cudaGetLastError())) return cuda_fail(e, (what)); \
    } while (0)

    if ((e = record(0))) return cuda_fail(e, "cudaEventRecord(events[0])");

    // a. down projection + cache append
    {
        latte::MlaDownEpilogueArgs ea;
        if (on_lt[kDown]) {  // bf16 [batch][dq + 576] into down_out
            if ((st = project_i(kDown))) return st;
            ea.down = t.down_out;
            ea.partial = nullptr;
            ea.split = 1;
        } else {  // fp32 partials (even with split 1): the epilogue sums and rounds them
            GemmProblem p = P[kDown];
            p.C = nullptr;
            p.partial = partial;
            latte::gemm_bf16_launch(p, simple, stream);
            ea.down = nullptr;
            ea.partial = partial;
            ea.split = L.split_down;
        }
        ea.batch = M;
        ea.dq = dq;
        ea.q_lora = t.q_lora;
        ea.kv_cache = cache;
        ea.cache_batch_stride = a->kv_cache.batch_stride;
        ea.cache_row_stride = a->kv_cache.row_stride;
        ea.cache_lens = a->cache_lens;
        ea.max_cache_len = a->max_cache_len;
        ea.rope_cos = rope_cos;
        ea.rope_sin = rope_sin;
        ea.rotate_keys = !rotated_at_read;
        ea.bad_lengths = cp->bad_lengths;
        latte::mla_down_epilogue_launch(ea, stream);
        LATTE_PHASE_CHECK("down projection");
    }
    if ((e = record(1))) return cuda_fail(e, "cudaEventRecord(events[1])");

    // b. up projection, c. query rope, d. W_UK absorption
    if ((st = project_i(kUp))) return st;
    latte::mla_q_rope_launch(t.q, t.q_attn, M, H, a->cache_lens, a->max_cache_len, rope_cos, rope_sin, stream);
    if ((st = project_i(kUk))) return st;
    LATTE_PHASE_CHECK("up projection / query rope / W_UK absorption");
    if ((e = record(2))) return cuda_fail(e, "cudaEventRecord(events[2])");

    // e. attention over the latent cache (split kernel and combine kernel, both enqueued by one call)
    {
        latte::MlaAttentionParams ap;
        ap.q = t.q_attn;
        ap.q_batch_stride = (int64_t)H * kRow;
        ap.q_head_stride = kRow;
        ap.kv_cache = cache;
        ap.cache_batch_stride = a->kv_cache.batch_stride;
        ap.cache_row_stride = a->kv_cache.row_stride;
        ap.cache_lens = a->cache_lens;
        ap.max_cache_len = (int)a->max_cache_len;
        ap.rope_cos = rotated_at_read ? rope_cos : nullptr;
        ap.rope_sin = rotated_at_read ? rope_sin : nullptr;
        ap.softmax_scale = c.softmax_scale;
        ap.batch = (int)M;
        ap.n_heads = H;
        ap.n_splits = L.attn_splits;
        ap.split_len = L.attn_split_len;
        ap.o_partial = (float *)(ws + L.attn);
        // o_partial is [n_splits][batch][H][512] fp32 (a multiple of 256 bytes), lse_partial follows it
        ap.lse_partial = ap.o_partial + (size_t)L.attn_splits * (size_t)M * H * kR;
        ap.o_lat = t.o_lat;
        if ((e = latte::mla_attention_launch(ap, stream))) return cuda_fail(e, "attention launch");
        LATTE_PHASE_CHECK("attention");
    }
    // the attention's one call enqueues both its split and combine kernels: [3] and [4] mark the same point
    if ((e = record(3))) return cuda_fail(e, "cudaEventRecord(events[3])");
    if ((e = record(4))) return cuda_fail(e, "cudaEventRecord(events[4])");

    // f. W_UV, g. output projection
    if ((st = project_i(kUv))) return st;
    if ((st = project_i(kOut))) return st;
    LATTE_PHASE_CHECK("W_UV / output projection");
    if ((e = record(5))) return cuda_fail(e, "cudaEventRecord(events[5])");
#undef LATTE_PHASE_CHECK
    return LATTE_STATUS_SUCCESS;
}
