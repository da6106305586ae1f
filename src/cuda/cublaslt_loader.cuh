// cuBLASLt, loaded at run time (dlopen), for the MLA projections; internal to the CUDA backend.
//
// Why dlopen: liblatte.so must load, and its CPU backend run, on a machine with no GPU, no driver and no
// cuBLAS. So nothing links against libcublasLt: cublaslt_api() opens "libcublasLt.so.13" (then
// "libcublasLt.so"), resolves the handful of functions below with dlsym and returns nullptr when any of
// that fails; the caller then uses its own GEMM. The function types come from <cublasLt.h> (decltype only:
// no symbol of the library is referenced at link time).
//
// Two CUDA runtimes then live in the process (our static cudart, and the one inside libcublasLt). Both
// run on the driver's primary context of the current device, so device pointers and streams
// (cudaStream_t == CUstream) pass between them unchanged.
//
// The GEMM below computes, like gemm_bf16 (same GemmProblem geometry):
//     C[z][M, N] = bf16( A[z][M, K] · B[z][N, K]ᵀ )       bf16 in, fp32 compute and scale, bf16 out
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stddef.h>

#include "gemm_bf16.cuh"

namespace latte {

struct CublasLtApi {
    decltype(&cublasLtGetVersion) GetVersion;
    decltype(&cublasLtGetStatusName) GetStatusName;
    decltype(&cublasLtCreate) Create;
    decltype(&cublasLtDestroy) Destroy;
    decltype(&cublasLtMatmulDescCreate) MatmulDescCreate;
    decltype(&cublasLtMatmulDescDestroy) MatmulDescDestroy;
    decltype(&cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
    decltype(&cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
    decltype(&cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
    decltype(&cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute;
    decltype(&cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
    decltype(&cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
    decltype(&cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
    decltype(&cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
    decltype(&cublasLtMatmul) Matmul;
    decltype(&cublasLtMatmulAlgoConfigSetAttribute) MatmulAlgoConfigSetAttribute;
    decltype(&cublasLtMatmulAlgoConfigGetAttribute) MatmulAlgoConfigGetAttribute;
    decltype(&cublasLtMatmulAlgoCheck) MatmulAlgoCheck;
    decltype(&cublasLtMatmulAlgoCapGetAttribute) MatmulAlgoCapGetAttribute;  // optional (nullptr: the tuner keeps to
                                                                            // the heuristic's candidates)
};

// The loaded library, or nullptr (then *why, if given, says what failed: a static string). Thread-safe;
// the load is attempted once per process and never printed about.
const CublasLtApi *cublaslt_api(const char **why = nullptr);

// Name of a cuBLAS status ("CUBLAS_STATUS_NOT_SUPPORTED"), for error messages.
const char *cublaslt_status_name(cublasStatus_t s);

// What one plan keeps: the handle, the one matmul descriptor every projection shares (TRANSA = T on the
// weight, TRANSB = N on the activation, fp32 compute and scale) and the heuristic preferences.
struct LtContext {
    const CublasLtApi *api;
    cublasLtHandle_t handle;
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulPreference_t pref;
    size_t workspace_limit;
};
// Creates everything on the current device. On failure everything created is destroyed again.
cublasStatus_t lt_context_create(LtContext *ctx, const CublasLtApi *api, size_t workspace_limit);
void lt_context_destroy(LtContext *ctx);

// One problem shape with its heuristic's best algorithm (the untuned choice; latte_mla_plan_tune may pick
// another one, which the plan keeps beside it).
struct LtGemm {
    cublasLtMatrixLayout_t w, act, out;  // cuBLAS's A (the weight B), B (the activation A), C = D
    cublasLtMatmulAlgo_t algo;           // the heuristic's top-1, as it returned it
    bool ready;                          // layouts made and an algorithm found
    cublasStatus_t status;               // why not ready (CUBLAS_STATUS_NOT_SUPPORTED: no algorithm)
};
// Describes the geometry of `p` (pointers unused; M, N, K, leading dimensions, batch and batch strides)
// and asks the heuristic once. Never throws; on failure g->ready is false and g->status says why.
void lt_gemm_prepare(const LtContext &ctx, const GemmProblem &p, LtGemm *g);
void lt_gemm_destroy(const LtContext &ctx, LtGemm *g);

// Enqueues C = A·Bᵀ with `algo` (g.algo, or a tuning candidate of g) for a problem of the geometry g was
// prepared for. No allocation, no synchronization. workspace: at least ctx.workspace_limit bytes, 256-byte
// aligned.
cublasStatus_t lt_gemm_run(const LtContext &ctx, const LtGemm &g, const cublasLtMatmulAlgo_t &algo,
                           const GemmProblem &p, void *workspace, cudaStream_t stream);

// Tuning candidates for a prepared (ready) g, host work only: the heuristic's top kLtHeuristicCandidates
// algorithms, each as returned and with split-K forced to 2, 4, 8 and 16 where cublasLtMatmulAlgoCheck
// accepts it within the workspace limit (reduction scheme COMPUTE_TYPE: fp32 parts, ordered sum, so runs
// stay bit-reproducible); then, with `neighbourhood`, the neighbourhood of the top-1's algorithm: 14 tiles of 64-160 × 64/128 where its
// capabilities list them, unsplit, under each of kLtClusterShapes cluster shapes, where the check accepts it (the heuristic ranks these skinny
// problems poorly: an exhaustive search, bench/probes/lt_search.cu, found the H200's fastest output projection,
// 120x64 tiles in 4x2 clusters, outside its top 8). Duplicates removed; out[0] is the heuristic's top-1 (g.algo).
// Returns the count (<= max_out; 0 when g is not ready or the heuristic fails).
constexpr int kLtHeuristicCandidates = 8;
constexpr int kLtClusterShapes = 5;
constexpr int kLtMaxCandidates = kLtHeuristicCandidates * 5 + 14 * kLtClusterShapes;
// (The layer's tune asks for it unless LATTE_MLA_TUNE_WIDE=0; docs/NOTES.md "cuBLASLt's neighbourhood".)
int lt_gemm_candidates(const LtContext &ctx, const LtGemm &g, cublasLtMatmulAlgo_t *out, int max_out,
                       bool neighbourhood);

// What an algorithm is, for latte_mla_plan_describe: cuBLASLt's algorithm id, tile id, split-K count, cluster shape id
// (cublasLtClusterShape_t; -1 where the library does not say).
struct LtAlgoInfo {
    int id, tile, split_k, cluster;
};
LtAlgoInfo lt_algo_info(const LtContext &ctx, const cublasLtMatmulAlgo_t &algo);

}  // namespace latte
