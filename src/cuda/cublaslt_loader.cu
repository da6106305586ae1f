// cuBLASLt loaded at run time, and the bf16 GEMM the MLA projections run through it.
//
// What and why: cuBLAS streams the MLA projection weights faster than our mma.sync GEMM (shared/anchors.md:
// Wo 3.24 TB/s, Wq_up 2.78 TB/s), so the plan uses it where it can be loaded. It is opened with dlopen so
// that liblatte.so has no link dependency on it (see cublaslt_loader.cuh).
//
// Layout mapping. Our problem is row-major: C[M, N] = A[M, K] · B[N, K]ᵀ (A the activations, B the weight).
// cuBLAS is column-major, and a row-major [R, C] matrix with row stride ld is the column-major [C, R]
// matrix with leading dimension ld. So in cuBLAS terms we compute
//     Cᵀ[N, M] = op(W) · Act      W := B seen as col-major [K, N] (ld = ldb), op = T -> [N, K]
//                                 Act := A seen as col-major [K, M] (ld = lda), op = N
//     Cᵀ: col-major [N, M], ld = ldc
// and the per-head absorptions are strided batched (batch count z, element batch strides as given).
#include "cublaslt_loader.cuh"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>

namespace latte {
namespace {

CublasLtApi g_api;
const CublasLtApi *g_api_ptr = nullptr;
const char *g_why = "not loaded";
std::once_flag g_once;

template <typename F>
bool resolve(void *lib, const char *name, F *fn) {
    void *p = dlsym(lib, name);
    *fn = reinterpret_cast<F>(p);
    return p != nullptr;
}

void load_once() {
    void *lib = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcublasLt.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        g_why = "libcublasLt.so.13 / libcublasLt.so not found";
        return;
    }
    CublasLtApi a;
    bool ok = true;
#define LATTE_RESOLVE(field, sym) ok = ok && resolve(lib, #sym, &a.field)
    LATTE_RESOLVE(GetVersion, cublasLtGetVersion);
    LATTE_RESOLVE(GetStatusName, cublasLtGetStatusName);
    LATTE_RESOLVE(Create, cublasLtCreate);
    LATTE_RESOLVE(Destroy, cublasLtDestroy);
    LATTE_RESOLVE(MatmulDescCreate, cublasLtMatmulDescCreate);
    LATTE_RESOLVE(MatmulDescDestroy, cublasLtMatmulDescDestroy);
    LATTE_RESOLVE(MatmulDescSetAttribute, cublasLtMatmulDescSetAttribute);
    LATTE_RESOLVE(MatrixLayoutCreate, cublasLtMatrixLayoutCreate);
    LATTE_RESOLVE(MatrixLayoutDestroy, cublasLtMatrixLayoutDestroy);
    LATTE_RESOLVE(MatrixLayoutSetAttribute, cublasLtMatrixLayoutSetAttribute);
    LATTE_RESOLVE(MatmulPreferenceCreate, cublasLtMatmulPreferenceCreate);
    LATTE_RESOLVE(MatmulPreferenceDestroy, cublasLtMatmulPreferenceDestroy);
    LATTE_RESOLVE(MatmulPreferenceSetAttribute, cublasLtMatmulPreferenceSetAttribute);
    LATTE_RESOLVE(MatmulAlgoGetHeuristic, cublasLtMatmulAlgoGetHeuristic);
    LATTE_RESOLVE(Matmul, cublasLtMatmul);
    LATTE_RESOLVE(MatmulAlgoConfigSetAttribute, cublasLtMatmulAlgoConfigSetAttribute);
    LATTE_RESOLVE(MatmulAlgoConfigGetAttribute, cublasLtMatmulAlgoConfigGetAttribute);
    LATTE_RESOLVE(MatmulAlgoCheck, cublasLtMatmulAlgoCheck);
#undef LATTE_RESOLVE
    if (!resolve(lib, "cublasLtMatmulAlgoCapGetAttribute", &a.MatmulAlgoCapGetAttribute)) a.MatmulAlgoCapGetAttribute = nullptr;
    if (!ok) {
        g_why = "libcublasLt lacks a function latte needs";
        return;  // the library stays open: harmless, and dlclose of a half-used library is not
    }
    // The attribute enums and struct layouts we compiled against must be the library's: same major version.
    if (a.GetVersion() / 10000 != (size_t)CUBLAS_VER_MAJOR) {
        g_why = "libcublasLt has another major version than the one latte was built with";
        return;
    }
    g_api = a;
    g_api_ptr = &g_api;
    g_why = nullptr;
}

// Checks a cuBLAS call, remembering the first failure in `st` (later calls are skipped).
#define LATTE_LT(call)                                 \
    do {                                               \
        if (st == CUBLAS_STATUS_SUCCESS) st = (call);  \
    } while (0)

}  // namespace

const CublasLtApi *cublaslt_api(const char **why) {
    std::call_once(g_once, load_once);
    if (why) *why = g_why;
    return g_api_ptr;
}

const char *cublaslt_status_name(cublasStatus_t s) {
    const CublasLtApi *a = cublaslt_api();
    const char *n = a ? a->GetStatusName(s) : nullptr;
    return n ? n : "cuBLAS status (library not loaded)";
}

cublasStatus_t lt_context_create(LtContext *ctx, const CublasLtApi *api, size_t workspace_limit) {
    ctx->api = api;
    ctx->handle = nullptr;
    ctx->desc = nullptr;
    ctx->pref = nullptr;
    ctx->workspace_limit = workspace_limit;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    const cublasOperation_t op_w = CUBLAS_OP_T, op_act = CUBLAS_OP_N;
    const uint64_t ws = workspace_limit;
    // DETERMINISM: the INPLACE reduction scheme sums split-K parts into the output with atomics, in whatever
    // order they arrive: excluded, so a run is bit-identical to the previous one. ROUNDING: OUTPUT_TYPE keeps
    // the split-K parts in bf16 (one more rounding than the contract's fp32 sum rounded once): excluded too.
    // Left: NONE (no split) and COMPUTE_TYPE (fp32 parts in workspace, summed in a separate, ordered step).
    const uint32_t reductions = (uint32_t)CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    // The API guarantees 16-byte aligned pointers only (x, y, and the per-head slices of q / o_lat); the
    // default preference (256) would let the heuristic pick algorithms that then refuse our operands.
    const uint32_t align = 16;
    LATTE_LT(api->Create(&ctx->handle));
    LATTE_LT(api->MatmulDescCreate(&ctx->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LATTE_LT(api->MatmulDescSetAttribute(ctx->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_w, sizeof op_w));
    LATTE_LT(api->MatmulDescSetAttribute(ctx->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_act, sizeof op_act));
    LATTE_LT(api->MatmulPreferenceCreate(&ctx->pref));
    LATTE_LT(api->MatmulPreferenceSetAttribute(ctx->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    LATTE_LT(api->MatmulPreferenceSetAttribute(ctx->pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions,
                                               sizeof reductions));
    LATTE_LT(api->MatmulPreferenceSetAttribute(ctx->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align, sizeof align));
    LATTE_LT(api->MatmulPreferenceSetAttribute(ctx->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align, sizeof align));
    LATTE_LT(api->MatmulPreferenceSetAttribute(ctx->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align, sizeof align));
    LATTE_LT(api->MatmulPreferenceSetAttribute(ctx->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align, sizeof align));
    if (st != CUBLAS_STATUS_SUCCESS) lt_context_destroy(ctx);
    return st;
}

void lt_context_destroy(LtContext *ctx) {
    if (!ctx->api) return;
    if (ctx->pref) ctx->api->MatmulPreferenceDestroy(ctx->pref);
    if (ctx->desc) ctx->api->MatmulDescDestroy(ctx->desc);
    if (ctx->handle) ctx->api->Destroy(ctx->handle);
    ctx->pref = nullptr;
    ctx->desc = nullptr;
    ctx->handle = nullptr;
}

void lt_gemm_prepare(const LtContext &ctx, const GemmProblem &p, LtGemm *g) {
    const CublasLtApi *api = ctx.api;
    g->w = g->act = g->out = nullptr;
    g->ready = false;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    // a batched layout: count z, element stride between consecutive matrices
    auto make = [&](cublasLtMatrixLayout_t *l, int64_t rows, int64_t cols, int64_t ld, int64_t batch_stride) {
        LATTE_LT(api->MatrixLayoutCreate(l, CUDA_R_16BF, (uint64_t)rows, (uint64_t)cols, ld));
        if (p.batch > 1) {
            const int32_t count = p.batch;
            LATTE_LT(api->MatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
            LATTE_LT(api->MatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                                                   sizeof batch_stride));
        }
    };
    make(&g->w, p.K, p.N, p.ldb, p.batch_stride_b);    // weight [N, K] row-major = [K, N] col-major, op T
    make(&g->act, p.K, p.M, p.lda, p.batch_stride_a);  // activations [M, K] row-major = [K, M] col-major
    make(&g->out, p.N, p.M, p.ldc, p.batch_stride_c);  // output [M, N] row-major = [N, M] col-major
    cublasLtMatmulHeuristicResult_t res[1];
    int found = 0;
    // C and D share one layout (beta = 0: C is never read)
    LATTE_LT(api->MatmulAlgoGetHeuristic(ctx.handle, ctx.desc, g->w, g->act, g->out, g->out, ctx.pref, 1, res, &found));
    if (st == CUBLAS_STATUS_SUCCESS && (found < 1 || res[0].state != CUBLAS_STATUS_SUCCESS ||
                                        res[0].workspaceSize > ctx.workspace_limit))
        st = CUBLAS_STATUS_NOT_SUPPORTED;
    g->status = st;
    if (st != CUBLAS_STATUS_SUCCESS) {
        lt_gemm_destroy(ctx, g);
        return;
    }
    g->algo = res[0].algo;
    g->ready = true;
}

void lt_gemm_destroy(const LtContext &ctx, LtGemm *g) {
    if (g->w) ctx.api->MatrixLayoutDestroy(g->w);
    if (g->act) ctx.api->MatrixLayoutDestroy(g->act);
    if (g->out) ctx.api->MatrixLayoutDestroy(g->out);
    g->w = g->act = g->out = nullptr;
    g->ready = false;
}

cublasStatus_t lt_gemm_run(const LtContext &ctx, const LtGemm &g, const cublasLtMatmulAlgo_t &algo,
                           const GemmProblem &p, void *workspace, cudaStream_t stream) {
    const float alpha = 1.0f, beta = 0.0f;  // host scalars (the default pointer mode), read at the call
    return ctx.api->Matmul(ctx.handle, ctx.desc, &alpha, p.B, g.w, p.A, g.act, &beta, p.C, g.out, p.C, g.out, &algo,
                           workspace, ctx.workspace_limit, stream);
}

// Tuning candidates. Why forced split-K at all: with M = batch ~128 the stacked down-projection (N = 2112,
// K = 7168) has ~17 output tiles of 128, and the heuristic's top-1 leaves most SMs idle (measured on an
// H200: 29 µs for 15 MB of weights). But forcing a split by rule made it slower (33 µs): which split, on
// which algorithm, is for latte_mla_plan_tune to measure, so every (algorithm, split) pair the library
// accepts is offered.
int lt_gemm_candidates(const LtContext &ctx, const LtGemm &g, cublasLtMatmulAlgo_t *out, int max_out,
                       bool neighbourhood) {
    if (!g.ready || max_out < 1) return 0;
    const CublasLtApi *api = ctx.api;
    int n = 0;
    auto add = [&](const cublasLtMatmulAlgo_t &a) {
        if (n >= max_out) return;
        for (int i = 0; i < n; i++)
            if (!memcmp(&out[i], &a, sizeof a)) return;
        out[n++] = a;
    };
    // a configured algorithm, where cuBLASLt's check accepts it within the workspace limit
    auto add_checked = [&](const cublasLtMatmulAlgo_t &algo) {
        cublasLtMatmulHeuristicResult_t check;
        memset(&check, 0, sizeof check);
        if (api->MatmulAlgoCheck(ctx.handle, ctx.desc, g.w, g.act, g.out, g.out, &algo, &check) == CUBLAS_STATUS_SUCCESS &&
            check.state == CUBLAS_STATUS_SUCCESS && check.workspaceSize <= ctx.workspace_limit)
            add(algo);
    };
    add(g.algo);
    cublasLtMatmulHeuristicResult_t res[kLtHeuristicCandidates];
    memset(res, 0, sizeof res);
    int found = 0;
    if (api->MatmulAlgoGetHeuristic(ctx.handle, ctx.desc, g.w, g.act, g.out, g.out, ctx.pref, kLtHeuristicCandidates,
                                    res, &found) != CUBLAS_STATUS_SUCCESS)
        found = 0;
    if (found > kLtHeuristicCandidates) found = kLtHeuristicCandidates;
    for (int r = 0; r < found; r++) {
        if (res[r].state != CUBLAS_STATUS_SUCCESS || res[r].workspaceSize > ctx.workspace_limit) continue;
        add(res[r].algo);
        static const int32_t kSplits[] = {2, 4, 8, 16};
        for (int32_t splits : kSplits) {
            cublasLtMatmulAlgo_t algo = res[r].algo;
            const uint32_t scheme = (uint32_t)CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
            if (api->MatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits) !=
                    CUBLAS_STATUS_SUCCESS ||
                api->MatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                                  sizeof scheme) != CUBLAS_STATUS_SUCCESS)
                continue;
            add_checked(algo);
        }
    }
    // The top-1's neighbourhood: its algorithm id with the tiles of kNeighbourTiles that it offers, unsplit, under
    // kLtClusterShapes cluster shapes (its stages and other settings as the heuristic left them; custom option 0).
    // The tiles: 64-160 rows of weights by 64 or 128 rows of the batch, where the searches found the fastest (all
    // ~800 tile × cluster pairs took a batch-128 tune from 0.2 to ~10 s, for the same choices)
    if (neighbourhood && found > 0 && api->MatmulAlgoCapGetAttribute) {
        const cublasLtMatmulAlgo_t base = g.algo;
        uint32_t offered[1024];
        size_t bytes = 0;
        if (api->MatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_TILE_IDS, offered, sizeof offered, &bytes) !=
            CUBLAS_STATUS_SUCCESS)
            bytes = 0;
        const size_t n_offered = bytes / sizeof(uint32_t) < 1024 ? bytes / sizeof(uint32_t) : 1024;
        static const uint32_t kNeighbourTiles[] = {
            CUBLASLT_MATMUL_TILE_64x64,   CUBLASLT_MATMUL_TILE_64x128,  CUBLASLT_MATMUL_TILE_96x64,
            CUBLASLT_MATMUL_TILE_96x128,  CUBLASLT_MATMUL_TILE_112x64,  CUBLASLT_MATMUL_TILE_112x128,
            CUBLASLT_MATMUL_TILE_120x64,  CUBLASLT_MATMUL_TILE_120x128, CUBLASLT_MATMUL_TILE_128x64,
            CUBLASLT_MATMUL_TILE_128x128, CUBLASLT_MATMUL_TILE_144x64,  CUBLASLT_MATMUL_TILE_144x128,
            CUBLASLT_MATMUL_TILE_160x64,  CUBLASLT_MATMUL_TILE_160x128};
        static const uint16_t kClusters[kLtClusterShapes] = {  // the attribute is a uint16_t
            CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1, CUBLASLT_CLUSTER_SHAPE_4x1x1,
            CUBLASLT_CLUSTER_SHAPE_1x2x1, CUBLASLT_CLUSTER_SHAPE_4x2x1};
        for (uint32_t tile : kNeighbourTiles) {
            bool is_offered = false;
            for (size_t t = 0; t < n_offered; t++) is_offered = is_offered || offered[t] == tile;
            if (!is_offered) continue;
            for (uint16_t cluster : kClusters) {
                cublasLtMatmulAlgo_t algo = base;
                const int32_t one = 1;
                const uint32_t none = (uint32_t)CUBLASLT_REDUCTION_SCHEME_NONE, zero = 0;
                if (api->MatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile) !=
                        CUBLAS_STATUS_SUCCESS ||
                    api->MatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one, sizeof one) !=
                        CUBLAS_STATUS_SUCCESS ||
                    api->MatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &none, sizeof none) !=
                        CUBLAS_STATUS_SUCCESS ||
                    api->MatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &zero, sizeof zero) !=
                        CUBLAS_STATUS_SUCCESS ||
                    api->MatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                                      sizeof cluster) != CUBLAS_STATUS_SUCCESS)
                    continue;
                add_checked(algo);
            }
        }
    }
    return n;
}

LtAlgoInfo lt_algo_info(const LtContext &ctx, const cublasLtMatmulAlgo_t &algo) {
    LtAlgoInfo info = {-1, -1, -1, -1};
    const CublasLtApi *api = ctx.api;
    if (!api) return info;
    int32_t id = 0, split = 0;
    uint32_t tile = 0;
    size_t got = 0;
    if (api->MatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &got) == CUBLAS_STATUS_SUCCESS)
        info.id = id;
    if (api->MatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &got) ==
        CUBLAS_STATUS_SUCCESS)
        info.tile = (int)tile;
    if (api->MatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof split, &got) ==
        CUBLAS_STATUS_SUCCESS)
        info.split_k = split;
    uint16_t cluster = 0;  // the attribute is a uint16_t
    if (api->MatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &got) ==
        CUBLAS_STATUS_SUCCESS)
        info.cluster = (int)cluster;
    return info;
}

}  // namespace latte
