// MLA decode layer, CUDA backend: the plan (re-laid weights) and the run (one decode step).
//
// The run, in the spec's rounding order (every arrow below is one bf16 rounding):
//   a. down    [q_lora | kv_lora] = x · [Wq_down; Wkv_down]ᵀ       GEMM + epilogue kernel:
//              q_lora -> workspace, kv_lora -> cache row len[b] (k_pe roped first if keys are stored rotated),
//              only for valid lengths; an invalid one bumps the plan's counter instead (the epilogue's work goes
//              into the fused query kernel where that runs after a bf16 GEMM: see b-d)
//              (on Hopper at batches up to 8 the GEMM is gemv_bf16.cuh: one weight stream, no split-K reduction,
//              and it lets the fused query kernel launch at once)
//   b. up      q = q_lora · Wq_upᵀ                                  [batch][H*192]
//   c. rope    q_attn[b][h][512:576] = rope_bf16(q_pe, len[b])
//   d. W_UK    q_attn[b][h][0:512] = W_UK[h]ᵀ · q_nope[h]            GEMM batched over heads
//   (b-d fused: on Hopper, mla_q_absorb_sm90.cuh does b, c and d in one kernel, same roundings: the default there,
//    and a choice latte_mla_plan_tune makes by timing it against the three launches. When it runs and the down
//    projection wrote bf16 (cuBLASLt or sm90), a's epilogue goes into it too: its CTAs append the cache rows and it
//    reads q_lora in place from the down projection's output, so a is one launch)
//   e. attention over the latent cache (mla_attention.cuh): o_lat [batch][H][512]
//   f. W_UV    o[b][h*128:(h+1)*128] = W_UV[h] · o_lat[b][h]        GEMM batched over heads
//   (e-f fused: on Hopper, where the attention is split and the batch is at most 16, the split attention's combine
//    goes into one kernel with W_UV (mla_uv_combine.cuh), which loads its weights during the attention's tail)
//   g. out     y = o · Woᵀ
// The five GEMMs (a, b, d, f, g) run on one of three engines, chosen per projection and run shape:
//   cuBLASLt  where it can be loaded (cublaslt_loader.cuh): the untuned default (its heuristic's top-1);
//   sm90      our Hopper GEMM (gemm_sm90.cuh: TMA + wgmma, persistent, stream-K), on compute capability 9.0 with an
//             sm_90a build: the default where cuBLASLt is missing (1.5-2x our mma.sync GEMM on an H100), and a
//             candidate of latte_mla_plan_tune everywhere it runs (measured 5-15% behind cuBLASLt's best per
//             projection on an H100: docs/NOTES.md);
//   latte     our mma.sync GEMM (gemm_bf16.cuh), which runs anywhere.
// All round each projection's output to bf16 once after an fp32 sum, so the rounding points above hold either way;
// with sm90 and cuBLASLt the down projection writes bf16 [batch][dq + 576] to workspace and the epilogue reads that
// instead of partials.
// Environment, read once at plan creation (the run never looks at it):
//   LATTE_MLA_GEMM=latte      our mma.sync GEMM for every projection
//   LATTE_MLA_GEMM=cublaslt   cuBLASLt for every projection; plan creation fails (NOT_SUPPORTED) without it,
//                             and a run fails (NOT_SUPPORTED) for a batch its heuristic has no algorithm for
//   LATTE_MLA_GEMM=sm90       our Hopper GEMM for every projection; plan creation fails (NOT_SUPPORTED) where it is
//                             not available, and a run fails (NOT_SUPPORTED) whose operands it cannot take
//   unset / empty             cuBLASLt where it loads and its heuristic finds an algorithm, else sm90 where it runs
//                             and the operands suit it, per projection and batch; our mma.sync GEMM otherwise
//   LATTE_MLA_SIMPLE_GEMM=1   our one-thread-per-output fallback for every GEMM (to bisect a wrong result on
//                             the GPU); implies LATTE_MLA_GEMM=latte
//   LATTE_MLA_Q_FUSED=0       never the fused query kernel (b-d as three launches); =1: plan creation fails
//                             (NOT_SUPPORTED) where it cannot run (not Hopper, or LATTE_MLA_GEMM=latte / cublaslt,
//                             or LATTE_MLA_SIMPLE_GEMM=1, which ask for other engines); unset / empty: where it runs
//   LATTE_MLA_APPEND_IN_Q=0   the cache append always by a's epilogue kernel, never folded into the fused query kernel
//                             (unset / empty / 1: folded wherever the fused query kernel runs after a bf16 down GEMM)
//   LATTE_MLA_DISCARD=0       dead scratch (q_attn, o_lat) stays in L2 until written back (unset / 1: dropped unwritten)
//   LATTE_MLA_UV_EARLY=0      an sm90 W_UV launches when the attention completes (unset / 1: the attention lets it launch
//                             at once, so its CTAs load their first weight stages on the SMs the attention leaves)
//   LATTE_MLA_UV_COMBINE=0    a split attention's combine kernel, then W_UV as tuned (unset / 1: the combine folded into
//                             W_UV, mla_uv_combine.cuh, on Hopper at batches up to 16 and where LATTE_MLA_GEMM and
//                             LATTE_MLA_SIMPLE_GEMM ask for no other engine)
//   LATTE_MLA_DOWN_GEMV=0     the down projection as tuned at every batch (unset / 1: on Hopper at batches up to 8 by
//                             gemv_bf16.cuh, where LATTE_MLA_GEMM and LATTE_MLA_SIMPLE_GEMM ask for no engine)
//   LATTE_MLA_DOWN_GEMV_ROWS=N  the largest batch that gemv takes, 1-16 (unset: 8)
//   LATTE_MLA_UV_SM90=0       latte_mla_plan_tune takes the fastest W_UV whatever its engine; =1: the sm90 one-tile W_UV
//                             whenever it ran (unset: within 25% of the fastest, for what its isolated timing misses)
//   LATTE_MLA_BALANCE=0       the Hopper attention's CTAs take items c, c + grid, ... (unset / 1: longest first, dealt
//                             in a snake over the CTAs: MlaAttentionParams::balance)
//   LATTE_MLA_SPLIT_LONG=0    the balanced schedule deals whole sequences only (unset / 1: where one split per sequence
//                             leaves a few long sequences bounding the attention, it splits them into pieces at run
//                             time and the last piece combines them: mla_attention_schedule.cuh)
//   LATTE_MLA_ATTN_PREP=0     the attention's list written by its own launch (a one-CTA kernel ahead of it); unset / 1:
//                             by a spare CTA of the fused query kernel where it has one (MlaQAbsorbArgs::attn)
//   LATTE_MLA_TUNE_WIDE=0     latte_mla_plan_tune times the heuristic's cuBLASLt candidates only (unset / 1: also the
//                             neighbourhood of its top-1, lt_gemm_candidates: on an H200 a ~2 µs faster output projection)
// How each projection runs is a per-shape choice kept in the plan's shape table: a shape is (batch, x row
// stride, y row stride), since cuBLASLt's layouts and algorithms depend on them. The first run of a shape
// makes its entry (host work only: layouts and heuristic queries, nothing enqueued): per projection the
// heuristic's top-1 where cuBLASLt has one, else our GEMM with gemm_choose_split's split. Heuristics guess
// poorly for these skinny problems, so latte_mla_plan_tune (below the run) measures, for one batch at the
// default strides, every cuBLASLt candidate (top-8, each also with split-K 2/4/8/16, and (LATTE_MLA_TUNE_WIDE) the
// top-1's algorithm with 14 tiles of 64-160 × 64/128 under five cluster shapes) and our GEMM at several splits, and stores the fastest per projection in that shape's entry: cuBLASLt or ours, per projection.
// Once stored, a choice never changes by itself (runs are bit-reproducible); another tune may choose
// differently (timing noise).
//
// Run contract: no allocation, no synchronization, graph-capturable. All scratch is carved from the caller's
// workspace in 256-byte aligned slices (mla_layout); the split-K partials of all GEMMs share one slice, since
// the GEMMs run one after another on one stream, and so does cuBLASLt's workspace. The sm90 GEMM's fixup counters
// (one int per tile, zero between launches) are zeroed by one memset at the start of each run with a stream-K sm90
// launch; every sm90 launch leaves them zero again. sm90 launches after the first kernel of a run use programmatic
// dependent launch: each loads its first weight tiles while the kernel before it finishes.
#include "internal.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memory>
#include <mutex>
#include <new>

#include "cublaslt_loader.cuh"
#include "gemm_bf16.cuh"
#include "gemm_sm90.cuh"
#include "mla_attention.cuh"
#include "gemv_bf16.cuh"
#include "mla_q_absorb_sm90.cuh"
#include "mla_uv_combine.cuh"
#include "mla_small_kernels.cuh"

namespace {

using latte::GemmProblem;
typedef __nv_bfloat16 bf16;

constexpr int kR = 512, kP = 64, kNope = 128, kV = 128, kRow = kR + kP, kQHead = kNope + kP;

// cuBLASLt: the workspace its algorithms may use (a slice of the caller's), and how many run shapes a plan
// keeps (a serving engine captures graphs for a few dozen batch sizes; beyond this, a run makes its shape,
// uses it and frees it again: correct, only slower on the host).
constexpr size_t kLtWorkspace = (size_t)32 << 20;
constexpr int kMaxShapes = 256;

enum Projection { kDown, kUp, kUk, kUv, kOut, kNProj };
const char *const kProjectionName[kNProj] = {"down projection", "up projection", "W_UK absorption",
                                             "W_UV absorption", "output projection"};
const char *const kProjectionShort[kNProj] = {"down", "up", "w_uk", "w_uv", "out"};

// How one projection runs: cuBLASLt with `algo`, our Hopper GEMM with `sm90cfg`, or our mma.sync GEMM with `split`
// K splits.
struct ProjChoice {
    bool lt;
    bool sm90;                  // (lt false)
    int split;                  // our mma.sync GEMM (lt and sm90 false): K splits, >= 1
    cublasLtMatmulAlgo_t algo;  // cuBLASLt (lt true)
    latte::GemmSm90Config sm90cfg;  // sm90 true
};

// The choices of one run shape: the untuned default, and what runs use (the default, or tune's fastest).
struct ShapeSelection {
    ProjChoice use[kNProj], untuned[kNProj];
    bool tuned;
    float us[kNProj], untuned_us[kNProj];  // tune's medians of the chosen and the untuned choice (tuned only)
    float fastest_us[kNProj];              // the fastest's median where the tune preferred a slower one, else < 0
    int candidates[kNProj];                // how many candidates tune timed
    // b-d through the fused query kernel (mla_q_absorb_sm90) instead of up, rope and W_UK one after another
    bool q_fused, q_fused_untuned;
    float q_fused_us, q_split_us;  // tune's medians: the fused kernel; up + rope + W_UK as chosen (tuned only; < 0: not timed)
    int64_t tuned_max_cache_len;   // the length tune was given, and the attention's splits there (tuned only):
    int tuned_attn_splits;         // the static schedule's,
    int tuned_attn_run_splits;     // and as it runs (1 where the static splits are cut at run time instead)
};

// One entry of the plan's shape table. g (cuBLASLt layouts + heuristic; not ready without cuBLASLt) never
// changes after the entry is made; sel is guarded by the plan's mutex (tune rewrites it, runs copy it).
struct RunShape {
    int64_t batch, x_row_stride, y_row_stride;
    latte::LtGemm g[kNProj];
    ShapeSelection sel;
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
    bool sm90;                      // our Hopper GEMM runs on this device: the default engine
    bool sm90_forced;               // LATTE_MLA_GEMM=sm90
    bool q_fused;                   // the fused query kernel runs on this device and the environment allows it
    bool down_gemv;                 // the down projection by gemv_bf16 at small batches (LATTE_MLA_DOWN_GEMV)
    int down_gemv_rows;             // ... at batches up to this (LATTE_MLA_DOWN_GEMV_ROWS; kGemvLayerRows)
    bool append_in_q;               // the cache append may go into the fused query kernel (LATTE_MLA_APPEND_IN_Q)
    bool discard_scratch;           // the run's last readers of q_attn, o_lat and the attention's partials drop them from L2 (LATTE_MLA_DISCARD)
    bool uv_early;                  // the attention lets an sm90 W_UV launch at once (PDL) (LATTE_MLA_UV_EARLY)
    bool uv_combine;                // a split attention's combine folded into W_UV at batches <= 16 (LATTE_MLA_UV_COMBINE)
    int uv_sm90;                    // the tune's W_UV: -1 sm90 within a slack, 0 fastest, 1 sm90 (LATTE_MLA_UV_SM90)
    bool balance;                   // the attention's items dealt longest first (LATTE_MLA_BALANCE)
    bool split_long;                // the balanced schedule may split long sequences at run time (LATTE_MLA_SPLIT_LONG)
    bool runtime_split;             // a static split of 2..8 runs as one split with run-time pieces (LATTE_MLA_RUNTIME_SPLIT)
    bool attn_prep;                 // the fused query kernel's spare CTA writes the attention's list (LATTE_MLA_ATTN_PREP)
    bool tune_wide;                 // the tune also times cuBLASLt's neighbourhood of its top-1 (LATTE_MLA_TUNE_WIDE)
    latte::LtContext lt;
    std::mutex shape_mutex;         // guards the shape table (runs of one plan may come from several threads)
    RunShape *shapes[kMaxShapes];
    int n_shapes;
};

size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

// Workspace slices and the per-GEMM splits, a pure function of (plan, batch, max_cache_len).
struct MlaLayout {
    size_t q_lora, q, q_attn, o_lat, o, partial, attn, total;  // byte offsets (total = size)
    size_t partial_bytes;          // the partials slice: any split whose partials fit may run (tuned choices)
    size_t down_out, lt_ws;        // cuBLASLt or sm90 (else 0): bf16 [batch][dq + 576]; cuBLASLt's workspace (else 0)
    size_t counters, counter_bytes;  // sm90 only (else 0): its fixup counters, int (zeroed by runs with stream-K)
    int split_down, split_up, split_uk, split_uv, split_out;
    int attn_splits, attn_split_len;  // the static schedule (the workspace's rows of partials are sized by it)
    // the attention as it runs: attn_splits, or 1 where the seesaw kernel cuts the static splits' work at run time into
    // pieces (MlaAttentionParams::runtime_split), which then take up to attn_piece_slots rows of partials (else 0)
    int attn_run_splits, attn_piece_slots;
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
    L.attn_piece_slots = 0;
    if (L.attn_splits > 1 && latte::mla_attention_wgmma_available(plan->device)) {
        latte::MlaAttentionParams gp;
        gp.batch = (int)batch;
        gp.n_heads = H;
        gp.n_splits = L.attn_splits;
        gp.split_len = L.attn_split_len;
        gp.balance = cp->balance ? 1 : 0;
        gp.split_long = cp->split_long ? 1 : 0;
        gp.runtime_split = cp->runtime_split ? 1 : 0;
        static int list_stub;  // (the run always gives the attention its list's workspace)
        gp.schedule = &list_stub;
        L.attn_piece_slots = latte::mla_attention_runtime_split(gp, latte::mla_attention_seesaw_grid(gp, plan->device));
    }
    L.attn_run_splits = L.attn_piece_slots > 0 ? 1 : L.attn_splits;

    size_t partial = latte::gemm_partial_bytes(batch, dq + kRow, 1, L.split_down);  // always: the epilogue reads it
    auto need = [&](int split, int N, int z) {
        const size_t b = split > 1 ? latte::gemm_partial_bytes(batch, N, z, split) : 0;
        if (b > partial) partial = b;
    };
    need(L.split_up, H * kQHead, 1);
    need(L.split_uk, kR, H);
    need(L.split_uv, kV, H);
    need(L.split_out, dim, 1);
    if (cp->sm90) {
        const size_t b = latte::gemm_sm90_partial_bytes(cp->gemm.sm_count);
        if (b > partial) partial = b;
    }

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
    L.partial_bytes = partial;
    L.attn = take(latte::mla_attention_workspace_bytes((int)batch, H, L.attn_splits));
    L.down_out = L.lt_ws = L.counters = L.counter_bytes = 0;
    // the partials stay: a projection without a cuBLASLt algorithm or sm90 layout falls back to our mma.sync GEMM
    if (cp->use_lt || cp->sm90) L.down_out = take(B * (dq + kRow) * 2);
    if (cp->use_lt) L.lt_ws = take(kLtWorkspace);
    if (cp->sm90) {  // enough counters for the largest tile count of any projection and configuration
        size_t n = latte::gemm_sm90_counter_count(batch, dq + kRow, 1);
        const size_t more[] = {latte::gemm_sm90_counter_count(batch, H * kQHead, 1),
                               latte::gemm_sm90_counter_count(batch, kR, H), latte::gemm_sm90_counter_count(batch, kV, H),
                               latte::gemm_sm90_counter_count(batch, dim, 1)};
        for (size_t m : more) n = m > n ? m : n;
        L.counter_bytes = align256(n * sizeof(int));
        L.counters = take(L.counter_bytes);
    }
    L.total = off;
    return L;
}

// A 0/1 switch of the environment: *out = 0 or 1, or `unset` where it is unset or empty; anything else sets an
// INVALID_ARGUMENT error naming it and returns false.
bool env_switch(const char *name, int unset, int *out) {
    const char *v = getenv(name);
    *out = unset;
    if (!v || !v[0]) return true;
    if (!strcmp(v, "0") || !strcmp(v, "1")) {
        *out = v[0] - '0';
        return true;
    }
    latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "environment: %s=\"%.40s\" is neither \"0\" nor \"1\"", name, v);
    return false;
}

latte_status cuda_fail(cudaError_t e, const char *what) {
    (void)cudaGetLastError();  // clear a non-sticky error so the caller's next CUDA call is not blamed
    if (e == cudaErrorMemoryAllocation)
        return latte_set_error(LATTE_STATUS_OUT_OF_MEMORY, "mla (CUDA): %s: %s: %s", what, cudaGetErrorName(e),
                               cudaGetErrorString(e));
    return latte_set_error(LATTE_STATUS_CUDA_ERROR, "mla (CUDA): %s: %s: %s", what, cudaGetErrorName(e),
                           cudaGetErrorString(e));
}

// A plan runs (and is tuned) only on the device it was created on: *dev = the current device, or a status and message.
latte_status check_current_device(const latte_mla_plan_s *plan, int *dev) {
    const cudaError_t e = cudaGetDevice(dev);
    if (e) return cuda_fail(e, "cudaGetDevice");
    if (*dev != plan->device)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "plan: created on CUDA device %d, but the current device is %d", plan->device, *dev);
    return LATTE_STATUS_SUCCESS;
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

// A projection as gemv_bf16 takes it (its split is ignored: the gemv never splits across launches)
latte::GemvParams gemv_of(const GemmProblem &p) {
    latte::GemvParams g;
    g.x = p.A, g.ldx = p.lda, g.x_z = p.batch_stride_a;
    g.w = p.B, g.ldw = p.ldb, g.w_z = p.batch_stride_b;
    g.y = p.C, g.ldy = p.ldc, g.y_z = p.batch_stride_c;
    g.M = p.M > latte::kGemvMaxRows ? 0 : (int)p.M;  // (0: refused)
    g.N = p.N, g.K = p.K, g.Z = p.batch;
    return g;
}

// The fused query kernel's arguments (b-d): pointers may be null where only the geometry is wanted.
latte::MlaQAbsorbArgs q_absorb_args(const MlaCudaPlan *cp, const latte_mla_config &c, int64_t M, const MlaOperands &t,
                                    const int32_t *cache_lens, int64_t max_cache_len, const bf16 *rope_cos,
                                    const bf16 *rope_sin) {
    latte::MlaQAbsorbArgs a;
    a.q_lora = t.q_lora;
    a.wq_up = cp->wq_up;
    a.w_uk_t = cp->w_uk_t;
    a.q_attn = t.q_attn;
    a.batch = M;
    a.n_heads = (int)c.n_heads;
    a.dq = (int)c.q_lora_rank;
    a.cache_lens = cache_lens;
    a.max_cache_len = max_cache_len;
    a.rope_cos = rope_cos;
    a.rope_sin = rope_sin;
    a.dev_flags = 0;
    a.q_lora_stride = 0;  // t.q_lora: rows dq apart
    a.kv_row = nullptr;   // no cache append (the down epilogue kernel does it)
    a.kv_row_stride = 0;
    a.kv_cache = nullptr;
    a.cache_batch_stride = a.cache_row_stride = 0;
    a.rotate_keys = 0;
    a.bad_lengths = nullptr;
    a.attn = latte::MlaScheduleArgs{};  // no attention preparation (the run sets it where it applies)
    return a;
}

void shape_free(const MlaCudaPlan *cp, RunShape *s) {
    if (!s) return;
    if (cp->use_lt)
        for (int i = 0; i < kNProj; i++) latte::lt_gemm_destroy(cp->lt, &s->g[i]);
    delete s;
}

// The entry of a run shape: from the plan's table, or made now (cuBLASLt layouts + one heuristic query per
// projection; host work only) and added to it. *sel: a copy of its choices, taken under the lock.
// *temporary: the table was full, the caller frees the shape when done. nullptr: host allocation failed.
RunShape *shape_for(MlaCudaPlan *cp, const latte_mla_config &c, int64_t M, int64_t x_row_stride,
                    int64_t y_row_stride, const MlaLayout &L, bool *temporary, ShapeSelection *sel) {
    *temporary = false;
    std::lock_guard<std::mutex> lock(cp->shape_mutex);
    for (int i = 0; i < cp->n_shapes; i++) {
        RunShape *s = cp->shapes[i];
        if (s->batch == M && s->x_row_stride == x_row_stride && s->y_row_stride == y_row_stride) {
            *sel = s->sel;
            return s;
        }
    }
    RunShape *s = new (std::nothrow) RunShape();  // value-initialized: null layouts, not ready, not tuned
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
    for (int i = 0; i < kNProj; i++) {
        if (cp->use_lt) latte::lt_gemm_prepare(cp->lt, p[i], &s->g[i]);
        ProjChoice &u = s->sel.untuned[i];
        u.split = p[i].split;  // gemm_choose_split's (1 for the simple GEMM)
        u.lt = s->g[i].ready;  // (never with LATTE_MLA_GEMM=sm90: cuBLASLt is not loaded then)
        u.sm90 = !u.lt && cp->sm90 && latte::gemm_sm90_supports(p[i], false);
        if (u.lt) u.algo = s->g[i].algo;
        if (u.sm90) u.sm90cfg = latte::gemm_sm90_choose(M, p[i].N, p[i].K, p[i].batch, cp->gemm.sm_count);
        s->sel.use[i] = u;
    }
    s->sel.q_fused = s->sel.q_fused_untuned =
        cp->q_fused && latte::mla_q_absorb_sm90_supports(q_absorb_args(cp, c, M, geometry, nullptr, 0, nullptr, nullptr), false);
    s->sel.q_fused_us = s->sel.q_split_us = -1.0f;
    if (cp->n_shapes < kMaxShapes)
        cp->shapes[cp->n_shapes++] = s;
    else
        *temporary = true;
    *sel = s->sel;
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
    bool want_lt = !simple, lt_forced = false, want_sm90 = !simple, sm90_forced = false;
    if (gemm_env && gemm_env[0]) {
        if (!strcmp(gemm_env, "latte")) {
            want_lt = want_sm90 = false;
        } else if (!strcmp(gemm_env, "sm90")) {
            if (simple)
                return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                                       "environment: LATTE_MLA_GEMM=sm90 contradicts LATTE_MLA_SIMPLE_GEMM=1 "
                                       "(our simple GEMM for every projection)");
            if (!latte::gemm_sm90_available(plan->device))
                return latte_set_error(LATTE_STATUS_NOT_SUPPORTED,
                                       "environment: LATTE_MLA_GEMM=sm90, but the Hopper GEMM does not run here (it needs "
                                       "compute capability 9.0, a build with sm_90a and a driver that encodes tensor maps)");
            want_lt = false;
            sm90_forced = true;
        } else if (!strcmp(gemm_env, "cublaslt")) {
            if (simple)
                return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                                       "environment: LATTE_MLA_GEMM=cublaslt contradicts LATTE_MLA_SIMPLE_GEMM=1 "
                                       "(our simple GEMM for every projection)");
            lt_forced = true;
            want_sm90 = false;
        } else {
            return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                                   "environment: LATTE_MLA_GEMM=\"%.40s\" is none of \"latte\", \"cublaslt\", \"sm90\"",
                                   gemm_env);
        }
    }
    // LATTE_MLA_Q_FUSED: 0 never, 1 required, unset: where it runs
    int q_fused_want, append_want, discard_want, uv_early_want, balance_want;
    if (!env_switch("LATTE_MLA_Q_FUSED", -1, &q_fused_want)) return LATTE_STATUS_INVALID_ARGUMENT;
    const bool q_fused = q_fused_want != 0 && want_sm90 && latte::mla_q_absorb_sm90_available(plan->device);
    if (q_fused_want == 1 && !q_fused)
        return latte_set_error(LATTE_STATUS_NOT_SUPPORTED,
                               "environment: LATTE_MLA_Q_FUSED=1, but the fused query kernel does not run here (it needs "
                               "compute capability 9.0 and a build with sm_90a, and LATTE_MLA_GEMM / LATTE_MLA_SIMPLE_GEMM "
                               "not asking for another engine)");
    // LATTE_MLA_APPEND_IN_Q, LATTE_MLA_DISCARD, LATTE_MLA_UV_EARLY, LATTE_MLA_BALANCE: 0 turns the change off, for A/B
    if (!env_switch("LATTE_MLA_APPEND_IN_Q", 1, &append_want) || !env_switch("LATTE_MLA_DISCARD", 1, &discard_want) ||
        !env_switch("LATTE_MLA_UV_EARLY", 1, &uv_early_want) || !env_switch("LATTE_MLA_BALANCE", 1, &balance_want))
        return LATTE_STATUS_INVALID_ARGUMENT;
    const bool append_in_q = append_want != 0, discard_scratch = discard_want != 0, uv_early = uv_early_want != 0;
    int attn_prep_want = 1, tune_wide_want = 1, split_long_want = 1, uv_sm90_want = -1, runtime_split_want = 1,
        uv_combine_want = 1, down_gemv_want = 1;
    if (!env_switch("LATTE_MLA_ATTN_PREP", 1, &attn_prep_want) || !env_switch("LATTE_MLA_TUNE_WIDE", 1, &tune_wide_want) ||
        !env_switch("LATTE_MLA_SPLIT_LONG", 1, &split_long_want) || !env_switch("LATTE_MLA_UV_SM90", -1, &uv_sm90_want) ||
        !env_switch("LATTE_MLA_RUNTIME_SPLIT", 1, &runtime_split_want) ||
        !env_switch("LATTE_MLA_UV_COMBINE", 1, &uv_combine_want) ||
        !env_switch("LATTE_MLA_DOWN_GEMV", 1, &down_gemv_want))
        return LATTE_STATUS_INVALID_ARGUMENT;
    int down_gemv_rows = latte::kGemvLayerRows;
    if (const char *v = getenv("LATTE_MLA_DOWN_GEMV_ROWS"); v && v[0]) {
        char *end = nullptr;
        const long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > latte::kGemvMaxRows)
            return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                                   "environment: LATTE_MLA_DOWN_GEMV_ROWS=\"%.40s\" is not a batch size from 1 to %d", v,
                                   latte::kGemvMaxRows);
        down_gemv_rows = (int)n;
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
    cp->sm90 = want_sm90 && latte::gemm_sm90_available(plan->device);
    cp->sm90_forced = sm90_forced;
    cp->q_fused = q_fused;
    // on Hopper (where it was measured; cp->sm90 also means the bf16 down_out it writes exists), not where the
    // environment asks for one engine for every projection (LATTE_MLA_GEMM, LATTE_MLA_SIMPLE_GEMM)
    cp->down_gemv = down_gemv_want != 0 && !simple && !(gemm_env && gemm_env[0]) && cp->sm90 &&
                    latte::gemv_bf16_available(plan->device);
    cp->down_gemv_rows = down_gemv_rows;
    cp->append_in_q = append_in_q;
    cp->discard_scratch = discard_scratch;
    cp->uv_early = uv_early;
    cp->uv_combine = uv_combine_want != 0 && want_sm90 && latte::mla_uv_combine_available(plan->device);
    cp->uv_sm90 = uv_sm90_want;
    cp->balance = balance_want != 0;
    cp->attn_prep = attn_prep_want != 0;
    cp->split_long = split_long_want != 0;
    cp->runtime_split = runtime_split_want != 0;
    cp->tune_wide = tune_wide_want != 0;
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
    for (int i = 0; i < cp->n_shapes; i++) shape_free(cp, cp->shapes[i]);
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
    if (const latte_status st = check_current_device(plan, &dev)) return st;
    cudaError_t e = cudaSuccess;

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
    t.down_out = (cp->use_lt || cp->sm90) ? (bf16 *)(ws + L.down_out) : nullptr;
    GemmProblem P[kNProj];
    mla_problems(cp, c, M, L, t, P);
    // o_lat is dead once W_UV has read it (only the run sets this: tune's timing loops re-read their operands)
    P[kUv].discard_a = cp->discard_scratch ? 1 : 0;
    float *partial = (float *)(ws + L.partial);
    const bf16 *rope_cos = (const bf16 *)a->rope_cos, *rope_sin = (const bf16 *)a->rope_sin;
    bf16 *cache = (bf16 *)a->kv_cache.data;
    const bool rotated_at_read = c.key_convention == LATTE_MLA_KEYS_ROTATED_AT_READ;

    // How each projection runs (the shape's entry: untuned default or tune's choice), decided before anything
    // is enqueued (a rejected run writes nothing).
    struct ShapeHolder {  // frees a shape the plan's full table could not keep, on every return
        const MlaCudaPlan *cp;
        RunShape *shape;
        bool temporary;
        ~ShapeHolder() {
            if (temporary) shape_free(cp, shape);
        }
    } lt = {cp, nullptr, false};
    ShapeSelection sel;
    lt.shape = shape_for(cp, c, M, a->x_row_stride, a->y_row_stride, L, &lt.temporary, &sel);
    if (!lt.shape) return latte_set_error(LATTE_STATUS_OUT_OF_MEMORY, "mla (CUDA): host allocation of a run shape failed");
    bool on_lt[kNProj], on_sm90[kNProj], any_stream_k = false;
    for (int i = 0; i < kNProj; i++) {
        on_lt[i] = sel.use[i].lt;
        // sm90 also needs the run's pointers to suit TMA (16-byte aligned x): else our mma.sync GEMM, default split
        on_sm90[i] = sel.use[i].sm90 && latte::gemm_sm90_supports(P[i], true);
        // only stream-K launches use the fixup counters (whole tiles never touch them)
        any_stream_k = any_stream_k || (on_sm90[i] && sel.use[i].sm90cfg.stream_k);
        if (!on_lt[i] && cp->lt_forced)
            return latte_set_error(LATTE_STATUS_NOT_SUPPORTED,
                                   "environment: LATTE_MLA_GEMM=cublaslt, but cuBLASLt has no algorithm for the %s "
                                   "at batch %lld: %s",
                                   kProjectionName[i], (long long)M, latte::cublaslt_status_name(lt.shape->g[i].status));
        if (!on_sm90[i] && cp->sm90_forced)
            return latte_set_error(LATTE_STATUS_NOT_SUPPORTED,
                                   "environment: LATTE_MLA_GEMM=sm90, but the Hopper GEMM cannot take the %s's operands "
                                   "at batch %lld (x, y and their row strides must be 16-byte / 8-element aligned)",
                                   kProjectionName[i], (long long)M);
        if (on_lt[i] || on_sm90[i]) P[i].split = 1;
        else if (!sel.use[i].sm90) P[i].split = sel.use[i].split;  // else the layout's default split
        // our GEMM's partials must fit the workspace's slice (tune only picks splits that do; kept honest here)
        if (!on_lt[i] && !on_sm90[i] && (P[i].split > 1 || i == kDown) &&
            latte::gemm_partial_bytes(M, P[i].N, P[i].batch, P[i].split) > L.partial_bytes)
            return latte_set_error(LATTE_STATUS_INTERNAL_ERROR, "mla (CUDA): the %s's split %d overflows the partials",
                                   kProjectionName[i], P[i].split);
    }
    // a. at batches up to down_gemv_rows: gemv_bf16, whatever the shape's entry says (bf16 into down_out, as
    // cuBLASLt and sm90)
    const latte::GemvParams gv_down = gemv_of(P[kDown]);
    const bool down_gemv =
        cp->down_gemv && t.down_out && M <= cp->down_gemv_rows && latte::gemv_bf16_supports(gv_down);
    const bool down_bf16 = down_gemv || on_lt[kDown] || on_sm90[kDown];  // down_out holds the rounded product
    latte::MlaQAbsorbArgs qa = q_absorb_args(cp, c, M, t, a->cache_lens, a->max_cache_len, rope_cos, rope_sin);
    // a's epilogue folded into the fused query kernel: where that runs and the down projection leaves bf16
    // [batch][dq + 576] in down_out; q_lora is then read in place from it (row stride dq + 576)
    bool append_in_q = false;
    if (cp->append_in_q && sel.q_fused && down_bf16) {
        latte::MlaQAbsorbArgs qf = qa;
        qf.q_lora = t.down_out;
        qf.q_lora_stride = dq + kRow;
        qf.kv_row = t.down_out + dq;
        qf.kv_row_stride = dq + kRow;
        qf.kv_cache = cache;
        qf.cache_batch_stride = a->kv_cache.batch_stride;
        qf.cache_row_stride = a->kv_cache.row_stride;
        qf.rotate_keys = !rotated_at_read;
        qf.bad_lengths = cp->bad_lengths;
        if (latte::mla_q_absorb_sm90_supports(qf, true)) qa = qf, append_in_q = true;
    }
    const bool q_fused = sel.q_fused && latte::mla_q_absorb_sm90_supports(qa, true);
    // The attention's balanced schedule: its list in the attention's workspace slice, written by the fused query
    // kernel's spare CTA where there is one (the attention then starts with one load of it), else by the attention's
    // launch (a one-CTA kernel ahead of it)
    int *const attn_schedule = (int *)(ws + L.attn + latte::mla_attention_schedule_offset((int)M, H, L.attn_splits));
    int attn_schedule_grid = 0;
    if (q_fused && cp->balance && cp->attn_prep && latte::mla_q_absorb_sm90_spare_sm(qa, cp->gemm.sm_count)) {
        latte::MlaAttentionParams gp;
        gp.batch = (int)M;
        gp.n_heads = H;
        gp.n_splits = L.attn_splits;  // the grid: as the attention's launch finds it (below: ap)
        gp.balance = cp->balance ? 1 : 0;
        gp.split_long = cp->split_long ? 1 : 0;
        gp.runtime_split = cp->runtime_split ? 1 : 0;
        gp.schedule = attn_schedule;
        const int grid = latte::mla_attention_seesaw_grid(gp, dev);
        const int groups = (H + latte::kMlaScheduleGroupHeads - 1) / latte::kMlaScheduleGroupHeads;
        const int n_items = groups * L.attn_run_splits * (int)M;  // < 2^31: the attention's launch checks the same
        if (grid > 0 && grid <= latte::kMlaScheduleCtasMax &&
            latte::mla_schedule_rounds(n_items, grid) <= latte::kMlaScheduleRounds) {
            qa.attn.cache_lens = a->cache_lens;
            qa.attn.max_cache_len = (int)a->max_cache_len;
            // as the attention's launch would write it (mla_attention_runtime_split: one split and its slots)
            qa.attn.n_splits = L.attn_run_splits;
            qa.attn.split_len = L.attn_piece_slots > 0 ? latte::one_split_len((int)a->max_cache_len) : L.attn_split_len;
            qa.attn.n_groups = groups;
            qa.attn.n_items = n_items;
            qa.attn.grid = grid;
            qa.attn.list = attn_schedule;
            if (cp->split_long && L.attn_run_splits == 1) {
                qa.attn.pieces = latte::mla_schedule_pieces(attn_schedule);
                qa.attn.counters = latte::mla_schedule_counters(attn_schedule);
                qa.attn.piece_slots = L.attn_piece_slots;
                if (L.attn_piece_slots > 0)
                    qa.attn.seq_pieces = latte::mla_schedule_seq_pieces(attn_schedule, (int)M, groups);
            }
#if defined(LATTE_DEV_EXPERIMENTS)
            qa.attn.force_pieces = latte::mla_schedule_dev_force_pieces();
#endif
            attn_schedule_grid = grid;
        }
    }
    if (cp->use_lt) {
        // cuBLASLt's runtime enqueues on the driver's current context: make sure it is this device's primary
        // context on this thread (a no-op when it is already; not a stream operation, so capture-safe)
        if ((e = cudaSetDevice(dev))) return cuda_fail(e, "cudaSetDevice");
    }

    // projection i through sm90, cuBLASLt or our mma.sync GEMM (down: the first two only); an error status set, or
    // success. sm90 after the first kernel of the run: programmatic dependent launch.
    int *sm90_counters = (int *)(ws + L.counters);
    auto project_i = [&](int i) -> latte_status {
        if (on_sm90[i]) {
            const cudaError_t se = latte::gemm_sm90_launch(P[i], sel.use[i].sm90cfg, cp->gemm.sm_count, partial,
                                                           sm90_counters, i != kDown, stream);
            if (se == cudaSuccess) return LATTE_STATUS_SUCCESS;
            return cuda_fail(se, kProjectionName[i]);
        }
        if (!on_lt[i]) {
            project(P[i], partial, simple, stream);
            return LATTE_STATUS_SUCCESS;
        }
        const cublasStatus_t ls = latte::lt_gemm_run(cp->lt, lt.shape->g[i], sel.use[i].algo, P[i], ws + L.lt_ws, stream);
        if (ls == CUBLAS_STATUS_SUCCESS) return LATTE_STATUS_SUCCESS;
        return latte_set_error(LATTE_STATUS_CUDA_ERROR, "mla (CUDA): cuBLASLt matmul of the %s: %s",
                               kProjectionName[i], latte::cublaslt_status_name(ls));
    };
    latte_status st;

    auto record = [&](int i) -> cudaError_t {
        if (!events || !events[i]) return cudaSuccess;
        // External: under stream capture the record becomes an event node of the graph (a plain record only marks a
        // capture dependency), so the phases can be timed in graph replays too; outside capture, a plain record
        // (the flag is refused outside capture: cudaErrorIllegalState)
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        if (const cudaError_t ce = cudaStreamIsCapturing(stream, &capture)) return ce;
        return cudaEventRecordWithFlags((cudaEvent_t)events[i], stream,
                                        capture == cudaStreamCaptureStatusActive ? cudaEventRecordExternal
                                                                                 : cudaEventRecordDefault);
    };
#define LATTE_PHASE_CHECK(what)                                     \
    do {                                                            \
        if ((e = cudaGetLastError())) return cuda_fail(e, (what)); \
    } while (0)

    if ((e = record(0))) return cuda_fail(e, "cudaEventRecord(events[0])");
    // Counters must be zero when a stream-K launch starts (a launch leaves them zero, but the workspace is the caller's
    // scratch): zeroed here, and only when a stream-K launch follows (a memset node costs the graph ~1-2 us; the
    // tuned H100/H200 runs use whole tiles or cuBLASLt, and skip it)
    if (any_stream_k && (e = cudaMemsetAsync(sm90_counters, 0, L.counter_bytes, stream)))
        return cuda_fail(e, "zeroing the sm90 GEMM's counters");

    // a. down projection + cache append
    auto project_down = [&]() -> latte_status {
        if (!down_gemv) return project_i(kDown);
        if ((e = latte::gemv_bf16_launch(gv_down, false, stream))) return cuda_fail(e, "down projection (gemv)");
        return LATTE_STATUS_SUCCESS;
    };
    if (append_in_q) {  // the GEMM alone: the fused query kernel appends the rows and reads q_lora from down_out
        if ((st = project_down())) return st;
        LATTE_PHASE_CHECK("down projection");
    } else {
        latte::MlaDownEpilogueArgs ea;
        if (down_bf16) {  // bf16 [batch][dq + 576] into down_out
            if ((st = project_down())) return st;
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
            ea.split = p.split;
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

    // b. up projection, c. query rope, d. W_UK absorption: one fused kernel (PDL after the down epilogue), or three
    if (q_fused) {
        if ((e = latte::mla_q_absorb_sm90_launch(qa, cp->gemm.sm_count, true, stream)))
            return cuda_fail(e, "fused query kernel (up projection, query rope, W_UK absorption)");
    } else {
        if ((st = project_i(kUp))) return st;
        latte::mla_q_rope_launch(t.q, t.q_attn, M, H, a->cache_lens, a->max_cache_len, rope_cos, rope_sin, stream);
        if ((st = project_i(kUk))) return st;
    }
    LATTE_PHASE_CHECK("up projection / query rope / W_UK absorption");
    if ((e = record(2))) return cuda_fail(e, "cudaEventRecord(events[2])");

    // e. attention over the latent cache (split kernel and combine kernel, both enqueued by one call; the combine
    // deferred to f where it is folded into W_UV)
    float *const attn_partial = (float *)(ws + L.attn);  // [n_splits][batch][H][512] fp32, then the LSE (ap below)
    latte::MlaUvCombineParams uvc;
    uvc.o_partial = attn_partial;
    uvc.lse_partial = attn_partial + (size_t)L.attn_splits * (size_t)M * H * kR;
    uvc.seq_pieces = nullptr;  // set from what the attention's launch deferred
    uvc.cache_lens = a->cache_lens;
    uvc.max_cache_len = (int)a->max_cache_len;
    uvc.n_splits = L.attn_splits;
    uvc.split_len = L.attn_split_len;
    uvc.o_lat = t.o_lat;
    uvc.batch = (int)M;
    uvc.n_heads = H;
    uvc.w_uv = cp->w_uv;
    uvc.o = t.o;
    uvc.ldo = (int64_t)H * kV;
    uvc.discard = cp->discard_scratch ? 1 : 0;
#if defined(LATTE_DEV_EXPERIMENTS)
    static const int uvc_experiment = getenv("LATTE_MLA_UVC_EXPERIMENT") ? atoi(getenv("LATTE_MLA_UVC_EXPERIMENT")) : 0;
    uvc.dev_flags = uvc_experiment;
#endif
    const bool uv_combine = cp->uv_combine && L.attn_splits > 1 && M <= latte::kMlaUvCombineMaxBatch &&
                            latte::mla_uv_combine_supports(uvc);
    latte::MlaCombineDeferred deferred;
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
        ap.o_partial = attn_partial;
        // o_partial is [n_splits][batch][H][512] fp32 (a multiple of 256 bytes), lse_partial follows it
        ap.lse_partial = ap.o_partial + (size_t)L.attn_splits * (size_t)M * H * kR;
        ap.o_lat = t.o_lat;
        ap.discard_q = cp->discard_scratch ? 1 : 0;  // q_attn is dead once the attention has read it
        ap.discard_partial = cp->discard_scratch ? 1 : 0;  // and the partials once merged
        // an sm90 W_UV is launched with PDL (as every sm90 launch after the run's first): its CTAs may take the SMs the
        // attention's CTAs leave and load W_UV's first stages during the attention's tail; likewise the W_UV with the
        // combine folded in behind a split attention (where the combine kernel comes between them, nothing is let in)
        ap.launch_dependents = cp->uv_early && ((on_sm90[kUv] && L.attn_splits == 1) || uv_combine) ? 1 : 0;
        ap.balance = cp->balance ? 1 : 0;
        ap.split_long = cp->split_long ? 1 : 0;
        ap.runtime_split = cp->runtime_split ? 1 : 0;
        ap.schedule = attn_schedule;
        ap.schedule_ready = attn_schedule_grid > 0 ? 1 : 0;
        ap.schedule_grid = attn_schedule_grid;
#if defined(LATTE_DEV_EXPERIMENTS)
        // dev builds, timing only: LATTE_MLA_ATTN_TWICE=1 launches the attention once more right before (its code
        // and data then warm when the real one runs; with LATTE_MLA_DISCARD=0, else the second reads discarded Q)
        // =2: only one item of it (sequence 0, heads 0-63: one CTA, one SM), so that the code is in L2 but in one SM's
        // instruction cache only
        static const int attn_twice = getenv("LATTE_MLA_ATTN_TWICE") ? atoi(getenv("LATTE_MLA_ATTN_TWICE")) : 0;
        if (attn_twice) {
            latte::MlaAttentionParams warm = ap;
            if (attn_twice == 2) warm.batch = 1, warm.n_heads = 64, warm.balance = 0, warm.discard_q = 0;
            warm.launch_dependents = 0;
            if ((e = latte::mla_attention_launch(warm, stream))) return cuda_fail(e, "attention launch");
        }
#endif
        if ((e = latte::mla_attention_launch(ap, stream, uv_combine ? &deferred : nullptr)))
            return cuda_fail(e, "attention launch");
        LATTE_PHASE_CHECK("attention");
    }
    // the attention's one call enqueues both its split and combine kernels: [3] and [4] mark the same point
    if ((e = record(3))) return cuda_fail(e, "cudaEventRecord(events[3])");
    if ((e = record(4))) return cuda_fail(e, "cudaEventRecord(events[4])");

    // f. W_UV (with the attention's combine folded in where it was deferred), g. output projection
    if (deferred.needed) {
        uvc.seq_pieces = deferred.seq_pieces;
        if ((e = latte::mla_uv_combine_launch(uvc, true, stream)))
            return cuda_fail(e, "W_UV with the attention's combine");
    } else if ((st = project_i(kUv))) {
        return st;
    }
    if ((st = project_i(kOut))) return st;
    LATTE_PHASE_CHECK("W_UV / output projection");
    if ((e = record(5))) return cuda_fail(e, "cudaEventRecord(events[5])");
#undef LATTE_PHASE_CHECK
    return LATTE_STATUS_SUCCESS;
}

// ---- tune ---------------------------------------------------------------------------------------------
// latte_mla_plan_tune: for one batch at the default strides, time every candidate of every projection on
// the plan's real weights and keep the fastest in the shape's entry. What is timed, per projection:
//   - the untuned choice (heuristic top-1, or our GEMM with gemm_choose_split's split): the baseline
//   - cuBLASLt: lt_gemm_candidates (heuristic top-8, each also with split-K 2/4/8/16 where accepted; unless
//     LATTE_MLA_TUNE_WIDE=0, then the top-1's algorithm with 14 tiles of 64-160 × 64/128 rows where it offers them,
//     unsplit, under five cluster shapes: the H200's fastest output projection is among them, not in the top-8)
//   - our GEMM at K splits 1, 2, 4, 8, 16 and its default, where the partials fit the workspace's slice (so
//     the workspace size stays what latte_mla_workspace_size said, tuned or not); for the down projection
//     with the reduction of its partials (a proxy of the epilogue's extra reads; cuBLASLt writes bf16)
// Each: one warm-up, then kTuneReps timed runs, each after an L2 flush (in a run, the other projections'
// weights evict this one's: a weight that fits in L2 must not be timed hot), the median kept. The flush reads 2x L2
// (a memset flush would leave L2 full of dirty lines that the timed GEMM must write back: on an H100 that slowed every
// candidate by 10-30%, unevenly, unlike anything in a run). The kRetime fastest and the baseline are then timed
// twice more, interleaved, and the choice is the best median of those three medians (with hundreds of near-ties the
// fastest single median is partly luck). A candidate replaces the untuned choice only if it is at least 2% faster
// (less churn from timing noise).
// Operands: scratch activations (cudaMalloc'd here, small random values, freed before returning), the
// caller's workspace for split-K partials and cuBLASLt's workspace (scratch by contract). Nothing of the
// caller's y or cache is touched.
namespace {

constexpr int kTuneReps = 7;
constexpr int kMaxTuneCandidates = latte::kLtMaxCandidates + 16;  // + our sm90 (<= 8) and mma.sync (<= 6)
constexpr int kRetime = 8;  // the fastest candidates timed again (see the tune loop)

// small pseudo-random bf16 values in [-1/8, 1/8) (a hash of the index: no state, any grid)
__global__ void tune_fill_kernel(bf16 *p, size_t n, uint32_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 0x9E3779B1u ^ (uint32_t)(i >> 32) ^ seed;
        h ^= h >> 16;
        h *= 0x85EBCA6Bu;
        h ^= h >> 13;
        h *= 0xC2B2AE35u;
        h ^= h >> 16;
        p[i] = __float2bfloat16(((float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f) * 0.25f);
    }
}

// The L2 flush: reads n16 16-byte units, so that L2 ends up holding clean lines of other data (the sink is never
// written in practice; it keeps the loads)
__global__ void tune_flush_kernel(const uint4 *__restrict__ p, size_t n16, unsigned *sink) {
    unsigned x = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = __ldcg(p + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9E3779B9u) *sink = x;
}

// What tune allocates, released on every return (after the stream has finished with it).
struct TuneScratch {
    cudaStream_t stream = nullptr;
    void *block = nullptr;
    cudaEvent_t ev[2 * kTuneReps] = {};
    ~TuneScratch() {
        if (block) {
            (void)cudaStreamSynchronize(stream);
            cudaFree(block);
        }
        for (cudaEvent_t e : ev)
            if (e) cudaEventDestroy(e);
        (void)cudaGetLastError();
    }
};

// snprintf at buf + *at, truncating at buf_bytes (always NUL-terminated; buf_bytes >= 1)
__attribute__((format(printf, 4, 5))) void buf_append(char *buf, size_t buf_bytes, size_t *at, const char *fmt, ...) {
    if (*at + 1 >= buf_bytes) return;
    va_list ap;
    va_start(ap, fmt);
    const int w = vsnprintf(buf + *at, buf_bytes - *at, fmt, ap);
    va_end(ap);
    if (w > 0) *at += (size_t)w < buf_bytes - *at ? (size_t)w : buf_bytes - 1 - *at;
}

bool same_choice(const ProjChoice &a, const ProjChoice &b) {
    if (a.lt != b.lt || a.sm90 != b.sm90) return false;
    if (a.lt) return !memcmp(&a.algo, &b.algo, sizeof a.algo);
    if (a.sm90) return a.sm90cfg.bn == b.sm90cfg.bn && a.sm90cfg.stream_k == b.sm90cfg.stream_k;
    return a.split == b.split;
}

}  // namespace

extern "C" latte_status latte_cuda_mla_plan_tune(struct latte_mla_plan_s *plan, int64_t batch, int64_t max_cache_len,
                                                 void *workspace, size_t workspace_bytes, latte_stream_t stream_) {
    const cudaStream_t stream = (cudaStream_t)stream_;
    MlaCudaPlan *cp = (MlaCudaPlan *)plan->impl;
    const latte_mla_config &c = plan->config;
    const int64_t M = batch, dim = c.dim, dq = c.q_lora_rank, H = c.n_heads;
    int dev = -1;
    if (const latte_status st = check_current_device(plan, &dev)) return st;
    cudaError_t e = cudaSuccess;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if ((e = cudaStreamIsCapturing(stream, &capture))) return cuda_fail(e, "cudaStreamIsCapturing");
    if (capture != cudaStreamCaptureStatusNone)
        return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT,
                               "stream: it is capturing a graph, but tuning synchronizes and allocates (tune before "
                               "capturing)");
    if (cp->simple_gemm) return LATTE_STATUS_SUCCESS;  // LATTE_MLA_SIMPLE_GEMM=1: one GEMM, nothing to choose

    const MlaLayout L = mla_layout(plan, M, max_cache_len);
    if (workspace_bytes < L.total)  // the API layer checked this already
        return latte_set_error(LATTE_STATUS_INSUFFICIENT_WORKSPACE, "workspace: %zu bytes given, %zu needed",
                               workspace_bytes, L.total);
    bool temporary = false;
    ShapeSelection sel;
    RunShape *shape = shape_for(cp, c, M, dim, dim, L, &temporary, &sel);
    if (!shape) return latte_set_error(LATTE_STATUS_OUT_OF_MEMORY, "mla (CUDA): host allocation of a run shape failed");
    if (temporary) {
        shape_free(cp, shape);
        return latte_set_error(LATTE_STATUS_NOT_SUPPORTED,
                               "plan: its table of run shapes is full (%d batch sizes and strides); a tuned choice "
                               "could not be kept",
                               kMaxShapes);
    }

    // scratch activations and outputs of the five projections, and the L2 flush buffer
    TuneScratch scratch;
    scratch.stream = stream;
    int l2 = 0;
    if ((e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev))) return cuda_fail(e, "cudaDeviceGetAttribute");
    const size_t flush_bytes = align256((size_t)(l2 > (16 << 20) ? l2 : (16 << 20)) * 2);
    // (in bf16 elements; the fused query kernel's lengths (int32, zeroed: position 0) and one cos / sin row last)
    const size_t n_act[] = {(size_t)(M * dim),          (size_t)(M * (dq + kRow)), (size_t)(M * dq),
                            (size_t)(M * H * kQHead),   (size_t)(M * H * kRow),    (size_t)(M * H * kR),
                            (size_t)(M * H * kV),       (size_t)(M * dim),         (size_t)(2 * M),
                            (size_t)(2 * kP)};
    enum { kX, kDownOut, kQLora, kQ, kQAttn, kOLat, kO, kY, kLens, kRope, kNAct };
    size_t off[kNAct], act_bytes = 0;
    for (int i = 0; i < kNAct; i++) {
        off[i] = act_bytes;
        act_bytes += align256(n_act[i] * 2);
    }
    if ((e = cudaMalloc(&scratch.block, act_bytes + flush_bytes + 256)))
        return cuda_fail(e, "cudaMalloc of tuning scratch");
    char *blk = (char *)scratch.block;
    void *flush = blk + act_bytes;
    unsigned *flush_sink = (unsigned *)(blk + act_bytes + flush_bytes);
    if ((e = cudaMemsetAsync(flush, 0x5a, flush_bytes + 256, stream))) return cuda_fail(e, "initializing the L2 flush");
    int sms = cp->gemm.sm_count > 0 ? cp->gemm.sm_count : 132;
    tune_fill_kernel<<<(unsigned)((act_bytes / 2 + 255) / 256 < 4096 ? (act_bytes / 2 + 255) / 256 : 4096), 256, 0,
                       stream>>>((bf16 *)blk, act_bytes / 2, 0x1234567u);
    if ((e = cudaGetLastError())) return cuda_fail(e, "filling the tuning scratch");
    if ((e = cudaMemsetAsync(blk + off[kLens], 0, (size_t)M * 4, stream))) return cuda_fail(e, "zeroing tuning lengths");
    for (int i = 0; i < 2 * kTuneReps; i++)
        if ((e = cudaEventCreate(&scratch.ev[i]))) return cuda_fail(e, "cudaEventCreate");
    if (cp->use_lt && (e = cudaSetDevice(dev))) return cuda_fail(e, "cudaSetDevice");
    MlaOperands t;
    t.x = (const bf16 *)(blk + off[kX]);
    t.x_row_stride = dim;
    t.y = (bf16 *)(blk + off[kY]);
    t.y_row_stride = dim;
    t.q_lora = (bf16 *)(blk + off[kQLora]);
    t.q = (bf16 *)(blk + off[kQ]);
    t.q_attn = (bf16 *)(blk + off[kQAttn]);
    t.o_lat = (bf16 *)(blk + off[kOLat]);
    t.o = (bf16 *)(blk + off[kO]);
    t.down_out = (bf16 *)(blk + off[kDownOut]);
    GemmProblem P[kNProj];
    mla_problems(cp, c, M, L, t, P);
    char *ws = (char *)workspace;
    float *partial = (float *)(ws + L.partial);
    if (cp->sm90 && (e = cudaMemsetAsync(ws + L.counters, 0, L.counter_bytes, stream)))
        return cuda_fail(e, "zeroing the sm90 GEMM's counters");

    // one launch of candidate `cd` for projection i; CUBLAS_STATUS_SUCCESS or cuBLASLt's refusal
    int *sm90_counters = (int *)(ws + L.counters);
    auto launch = [&](int i, const ProjChoice &cd) -> cublasStatus_t {
        if (cd.lt) return latte::lt_gemm_run(cp->lt, shape->g[i], cd.algo, P[i], ws + L.lt_ws, stream);
        if (cd.sm90) {  // a launch error is left for cudaGetLastError; a layout it cannot take skips the candidate
            const cudaError_t se =
                latte::gemm_sm90_launch(P[i], cd.sm90cfg, cp->gemm.sm_count, partial, sm90_counters, false, stream);
            return se == cudaErrorNotSupported ? CUBLAS_STATUS_NOT_SUPPORTED : CUBLAS_STATUS_SUCCESS;
        }
        GemmProblem p = P[i];
        p.split = cd.split;
        if (i == kDown) {  // partials + their reduction (the run's epilogue reads the partials)
            p.C = nullptr;
            p.partial = partial;
            latte::gemm_bf16_launch(p, false, stream);
            latte::gemm_reduce_launch(partial, p.split, 1, M, p.N, t.down_out, p.N, 0, stream);
        } else {
            project(p, partial, false, stream);
        }
        return CUBLAS_STATUS_SUCCESS;
    };
    // median µs of what enqueue() enqueues (it returns false when it refused and enqueued nothing: -1, skipped).
    // A CUDA error fails the tune.
    latte_status st = LATTE_STATUS_SUCCESS;
    auto time_enqueue = [&](auto &&enqueue) -> float {
        float ms[kTuneReps];
        for (int r = -1; r < kTuneReps; r++) {
            tune_flush_kernel<<<(unsigned)sms * 4, 512, 0, stream>>>((const uint4 *)flush, flush_bytes / 16, flush_sink);
            if ((e = cudaGetLastError())) break;
            if (r >= 0 && (e = cudaEventRecord(scratch.ev[2 * r], stream))) break;
            if (!enqueue()) return -1.0f;
            if ((e = cudaGetLastError())) break;
            if (r >= 0 && (e = cudaEventRecord(scratch.ev[2 * r + 1], stream))) break;
        }
        if (!e) e = cudaEventSynchronize(scratch.ev[2 * kTuneReps - 1]);
        for (int r = 0; r < kTuneReps && !e; r++) e = cudaEventElapsedTime(&ms[r], scratch.ev[2 * r], scratch.ev[2 * r + 1]);
        if (e) {
            st = cuda_fail(e, "timing a tuning candidate");
            return -1.0f;
        }
        for (int a = 1; a < kTuneReps; a++)  // insertion sort: 7 values
            for (int b = a; b > 0 && ms[b] < ms[b - 1]; b--) {
                const float tmp = ms[b];
                ms[b] = ms[b - 1];
                ms[b - 1] = tmp;
            }
        return ms[kTuneReps / 2] * 1e3f;
    };
    // candidate cd of projection i; < 0: cuBLASLt (or sm90) refused it
    auto time_candidate = [&](int i, const ProjChoice &cd) -> float {
        return time_enqueue([&] { return launch(i, cd) == CUBLAS_STATUS_SUCCESS; });
    };

    ShapeSelection out = sel;
    // the candidates of one projection and their times (host memory: a few hundred with cuBLASLt's neighbourhood)
    std::unique_ptr<ProjChoice[]> cand_mem(new (std::nothrow) ProjChoice[kMaxTuneCandidates]);
    std::unique_ptr<float[]> us_mem(new (std::nothrow) float[kMaxTuneCandidates]);
    std::unique_ptr<cublasLtMatmulAlgo_t[]> algo_mem(new (std::nothrow) cublasLtMatmulAlgo_t[latte::kLtMaxCandidates]);
    if (!cand_mem || !us_mem || !algo_mem)
        return latte_set_error(LATTE_STATUS_OUT_OF_MEMORY, "mla (CUDA): host allocation of the tuning candidates failed");
    ProjChoice *const cand = cand_mem.get();
    float *const cand_us = us_mem.get();
    for (int i = 0; i < kNProj; i++) {
        int n = 0;
        out.fastest_us[i] = -1.0f;
        auto add = [&](const ProjChoice &cd) {
            if (n >= kMaxTuneCandidates) return;
            for (int k = 0; k < n; k++)
                if (same_choice(cand[k], cd)) return;
            cand[n++] = cd;
        };
        add(sel.untuned[i]);  // candidate 0: the baseline
        if (shape->g[i].ready) {
            cublasLtMatmulAlgo_t *const algos = algo_mem.get();
            const int na = latte::lt_gemm_candidates(cp->lt, shape->g[i], algos, latte::kLtMaxCandidates, cp->tune_wide);
            for (int k = 0; k < na; k++) {
                ProjChoice cd;
                memset(&cd, 0, sizeof cd);
                cd.lt = true;
                cd.split = 1;
                cd.algo = algos[k];
                add(cd);
            }
        }
        if (cp->sm90 && !cp->lt_forced && latte::gemm_sm90_supports(P[i], true)) {
            latte::GemmSm90Config cfgs[8];
            const int nc = latte::gemm_sm90_candidates(M, P[i].N, P[i].K, P[i].batch, cp->gemm.sm_count, cfgs, 8);
            for (int k = 0; k < nc; k++) {
                ProjChoice cd;
                memset(&cd, 0, sizeof cd);
                cd.sm90 = true;
                cd.split = 1;
                cd.sm90cfg = cfgs[k];
                add(cd);
            }
        }
        if (!cp->lt_forced && !cp->sm90_forced) {
            const int k_tiles = P[i].K / 64;
            const int splits[] = {sel.untuned[i].lt ? 1 : sel.untuned[i].split, 1, 2, 4, 8, 16};
            for (int want : splits) {
                int split = want < k_tiles ? want : k_tiles;
                const int per = (k_tiles + split - 1) / split;  // no empty split (as gemm_choose_split)
                split = (k_tiles + per - 1) / per;
                if ((split > 1 || i == kDown) &&
                    latte::gemm_partial_bytes(M, P[i].N, P[i].batch, split) > L.partial_bytes)
                    continue;
                ProjChoice cd;
                memset(&cd, 0, sizeof cd);
                cd.lt = false;
                cd.split = split;
                add(cd);
            }
        }
        int best = -1, timed = 0;
        float best_us = 0.0f, base_us = -1.0f;
        for (int k = 0; k < n; k++) {
            const float us = cand_us[k] = time_candidate(i, cand[k]);
            if (st) return st;
            if (us < 0.0f) continue;
            timed++;
            if (k == 0) base_us = us;
        }
        // With hundreds of near-ties the fastest single timing is partly luck: the kRetime fastest (and the baseline)
        // are timed twice more, interleaved, and the choice is the best median of three among them
        int top[kRetime + 2], n_top = 0;
        for (int k = 0; k < n; k++) {  // the kRetime fastest, sorted (insertion)
            if (cand_us[k] < 0.0f || (n_top == kRetime && cand_us[k] >= cand_us[top[kRetime - 1]])) continue;
            int at = n_top < kRetime ? n_top++ : kRetime - 1;
            while (at > 0 && cand_us[top[at - 1]] > cand_us[k]) top[at] = top[at - 1], at--;
            top[at] = k;
        }
        bool base_in = false;
        for (int j = 0; j < n_top; j++) base_in = base_in || top[j] == 0;
        if (!base_in && base_us >= 0.0f) top[n_top++] = 0;
        // W_UV: an sm90 launch with one n-tile drops o_lat from L2 unwritten (discard_a), which saves the DRAM write
        // of 16.8 MB later in the run (the output projection's stream), and, launched early by the attention
        // (uv_early), loads its first weight stages during the attention's tail; this timing sees neither, so such a
        // candidate is preferred within a slack below. Its fastest is timed again too: a single timing of it against
        // the best median of three of the luckiest candidates used to lose it the slack in some tunes
        // The early launch needs the W_UV GEMM right behind the attention: where the attention is split (a small batch
        // at this length) the combine kernel runs between them, and the sm90 W_UV is only its slower self (batch 1 and
        // 4 on an H200: 3-5 µs slower in the layer than cuBLASLt's; bench/results/2026-11-28-h200-batches, call 4)
        const bool uv_early_here = cp->uv_early && L.attn_splits == 1;
        const bool uv_prefer = i == kUv && (cp->discard_scratch || uv_early_here) && cp->uv_sm90 != 0;
        auto uv_one_tile = [&](int k) { return cand[k].sm90 && cand[k].sm90cfg.bn >= P[i].N; };
        if (uv_prefer) {
            int s = -1;
            for (int k = 0; k < n; k++)
                if (cand_us[k] >= 0.0f && uv_one_tile(k) && (s < 0 || cand_us[k] < cand_us[s])) s = k;
            bool in = false;
            for (int j = 0; j < n_top; j++) in = in || top[j] == s;
            if (s >= 0 && !in) top[n_top++] = s;
        }
        float again[kRetime + 2][2];
        for (int round = 0; round < 2; round++)
            for (int j = 0; j < n_top; j++) {
                again[j][round] = time_candidate(i, cand[top[j]]);
                if (st) return st;
            }
        for (int j = 0; j < n_top; j++) {
            const int k = top[j];
            const float a = cand_us[k], b = again[j][0], c = again[j][1];
            if (b < 0.0f || c < 0.0f) continue;
            cand_us[k] = fmaxf(fminf(a, b), fminf(fmaxf(a, b), c));  // the median of three
            if (best < 0 || cand_us[k] < best_us) best = k, best_us = cand_us[k];
        }
        if (base_us >= 0.0f) base_us = cand_us[0];
        if (best < 0) continue;  // nothing ran (cannot happen for a runnable plan): keep the untuned choice
        if (base_us >= 0.0f && best_us > 0.98f * base_us) best = 0, best_us = base_us;
        // the preferred W_UV (see uv_prefer) within 3% (discard only) or 25% (early launch) of the best;
        // LATTE_MLA_UV_SM90=1 takes it whatever its time. Measured (docs/NOTES.md, "The W_UV engine"): against
        // cuBLASLt's W_UV, 3.6-6 µs faster in the layer on an H200 (it is ~0.8 µs slower alone, ~6% of 14 µs) and ~5
        // µs on an H100 (~1.9 µs, 13-15%, slower alone): the early launch is worth ~30-40% of its isolated time
        if (uv_prefer && !uv_one_tile(best)) {
            const float slack = cp->uv_sm90 == 1 ? 1e30f : uv_early_here ? 1.25f : 1.03f;
            int pick = -1;
            for (int j = 0; j < n_top; j++) {
                const int k = top[j];
                if (cand_us[k] >= 0.0f && cand_us[k] <= slack * best_us && uv_one_tile(k) &&
                    (pick < 0 || cand_us[k] < cand_us[pick]))
                    pick = k;
            }
            if (pick >= 0) out.fastest_us[i] = best_us, best = pick, best_us = cand_us[pick];
        }
        out.use[i] = cand[best];
        out.us[i] = best_us;
        out.untuned_us[i] = base_us;
        out.candidates[i] = timed;
    }
    // b-d: the fused query kernel against up + rope + W_UK as just chosen (the rope timed on its own)
    out.q_fused_us = out.q_split_us = -1.0f;
    {
        const bf16 *rope = (const bf16 *)(blk + off[kRope]);
        const int32_t *lens = (const int32_t *)(blk + off[kLens]);
        const latte::MlaQAbsorbArgs qa = q_absorb_args(cp, c, M, t, lens, 0, rope, rope + kP);
        if (cp->q_fused && latte::mla_q_absorb_sm90_supports(qa, true) && out.us[kUp] > 0.0f && out.us[kUk] > 0.0f) {
            const float fused = time_enqueue(
                [&] { return latte::mla_q_absorb_sm90_launch(qa, cp->gemm.sm_count, false, stream) == cudaSuccess; });
            if (st) return st;
            const float rope_us = time_enqueue([&] {
                latte::mla_q_rope_launch(t.q, t.q_attn, M, (int)H, lens, 0, rope, rope + kP, stream);
                return true;
            });
            if (st) return st;
            if (fused > 0.0f && rope_us > 0.0f) {
                out.q_fused_us = fused;
                out.q_split_us = out.us[kUp] + out.us[kUk] + rope_us;
                out.q_fused = fused < out.q_split_us;
            }
        }
    }
    if ((e = cudaStreamSynchronize(stream))) return cuda_fail(e, "tuning");
    out.tuned = true;
    out.tuned_max_cache_len = max_cache_len;
    out.tuned_attn_splits = L.attn_splits;
    out.tuned_attn_run_splits = L.attn_run_splits;
    {
        std::lock_guard<std::mutex> lock(cp->shape_mutex);
        for (int i = 0; i < kNProj; i++) {  // (the untuned choices stay as they were made)
            shape->sel.use[i] = out.use[i];
            shape->sel.us[i] = out.us[i];
            shape->sel.untuned_us[i] = out.untuned_us[i];
            shape->sel.fastest_us[i] = out.fastest_us[i];
            shape->sel.candidates[i] = out.candidates[i];
        }
        shape->sel.q_fused = out.q_fused;
        shape->sel.q_fused_us = out.q_fused_us;
        shape->sel.q_split_us = out.q_split_us;
        shape->sel.tuned_max_cache_len = out.tuned_max_cache_len;
        shape->sel.tuned_attn_splits = out.tuned_attn_splits;
        shape->sel.tuned_attn_run_splits = out.tuned_attn_run_splits;
        shape->sel.tuned = true;
    }
    return LATTE_STATUS_SUCCESS;
}

// ---- describe -----------------------------------------------------------------------------------------
extern "C" latte_status latte_cuda_mla_plan_describe(struct latte_mla_plan_s *plan, int64_t batch, char *buf,
                                                     size_t buf_bytes) {
    MlaCudaPlan *cp = (MlaCudaPlan *)plan->impl;
    const latte_mla_config &c = plan->config;
    const MlaLayout L = mla_layout(plan, batch, 0);
    bool temporary = false;
    ShapeSelection sel;
    RunShape *shape = shape_for(cp, c, batch, c.dim, c.dim, L, &temporary, &sel);
    if (!shape) return latte_set_error(LATTE_STATUS_OUT_OF_MEMORY, "mla (CUDA): host allocation of a run shape failed");
    if (temporary) shape_free(cp, shape);  // sel is a copy
    size_t at = 0;
    buf[0] = '\0';
#define append(...) buf_append(buf, buf_bytes, &at, __VA_ARGS__)
    for (int i = 0; i < kNProj; i++) {
        const ProjChoice &u = sel.use[i];
        append("%s: ", kProjectionShort[i]);
        if (i == kDown && cp->down_gemv && batch <= cp->down_gemv_rows) {
            append("latte gemv (batches up to %d, where x's rows are 16-byte aligned; else as tuned)\n",
                   cp->down_gemv_rows);
            continue;
        }
        if (u.lt) {
            const latte::LtAlgoInfo a = latte::lt_algo_info(cp->lt, u.algo);
            append("cublasLt algo %d tile %d splitK %d cluster %d", a.id, a.tile, a.split_k, a.cluster);
        } else if (u.sm90) {
            append("latte sm90 bn %d %s", u.sm90cfg.bn, u.sm90cfg.stream_k ? "stream-K" : "whole tiles");
        } else if (cp->simple_gemm) {
            append("latte simple gemm");
        } else {
            append("latte gemm splitK %d", u.split);
        }
        const char *base = sel.untuned[i].lt ? "heuristic" : sel.untuned[i].sm90 ? "cost model" : "default";
        if (sel.tuned && sel.fastest_us[i] >= 0.0f)  // a slower one preferred for what the layer overlaps (W_UV)
            append(", %.1f us (%s %.1f us, %d candidates; preferred to the fastest, %.1f us, for what it saves "
                   "in the layer)\n",
                   (double)sel.us[i], base, (double)sel.untuned_us[i], sel.candidates[i], (double)sel.fastest_us[i]);
        else if (sel.tuned)
            append(", %.1f us (%s %.1f us, %d candidates)\n", (double)sel.us[i], base, (double)sel.untuned_us[i],
                   sel.candidates[i]);
        else
            append(" (%s, not tuned)\n", base);
    }
    if (sel.q_fused_untuned || sel.q_fused) {  // (only where the fused query kernel runs)
        append("up + rope + w_uk: %s", sel.q_fused ? "fused (latte sm90 query kernel)" : "three launches (above)");
        if (sel.tuned && sel.q_fused_us > 0.0f)
            append(", fused %.1f us, three launches %.1f us\n", (double)sel.q_fused_us, (double)sel.q_split_us);
        else
            append(" (%s)\n", sel.tuned ? "not timed" : "default, not tuned");
    }
    if (sel.tuned) {  // what the W_UV choice assumed: the early launch only behind an unsplit attention
        const bool folded = cp->uv_combine && batch <= latte::kMlaUvCombineMaxBatch;
        append("attention at the tuned length %lld: %d split(s)%s%s\n", (long long)sel.tuned_max_cache_len,
               sel.tuned_attn_splits,
               sel.tuned_attn_splits == 1 || sel.tuned_attn_run_splits != 1
                   ? ""
                   : " run as one, its sequences cut into pieces at run time",
               sel.tuned_attn_splits == 1 ? ""
               : folded ? ", then W_UV with the combine folded in (latte sm90, launched early; the w_uv line is for "
                          "lengths the attention runs unsplit)"
                        : ", then the combine kernel (no early W_UV launch)");
    }
#undef append
    return LATTE_STATUS_SUCCESS;
}
