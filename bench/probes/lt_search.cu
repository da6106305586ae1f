// Probe: does an exhaustive search over cuBLASLt's algorithm configurations find clearly faster (>= 5 %) kernels for
// the library's projection GEMMs than the candidates the plan-time tuner times today?
//
// Question it settles: the tuner (latte_mla_plan_tune, candidates from lt_gemm_candidates in cublaslt_loader.cu) picks
// among cuBLASLt's heuristic top-8, each also offered with split-K 2/4/8/16. The projections are skinny bf16 GEMMs with
// M = 128 (the batch) whose time is the weight stream. Is there a configuration outside that candidate set (another
// algo id, tile, stages, split-K, reduction scheme, CTA swizzle, custom option or, on sm_90, cluster shape) that is
// clearly faster? If not, the heuristic set is enough and a wider tuner is not worth its plan time.
//
// Shapes (row-major as in the library: y[M][N] = x[M][K] · W[N][K]ᵀ, bf16 in and out, fp32 compute, alpha 1, beta 0):
//   down   M 128, N 2112,  K 7168   (weights 30.3 MB)
//   up     M 128, N 24576, K 1536   (75.5 MB)
//   out    M 128, N 7168,  K 16384  (235 MB)
//   w_uv   128 heads, strided batch: per head M 128, N 128, K 512; x is [M][128][512] (head h at x + 512 h, row stride
//          128·512), W_UV[h] is [128][512] at w + h·128·512, y is [M][128][128] (head h at y + 128 h, row stride
//          128·128) (16.8 MB). These are cuBLASLt strided batches whose batch offsets are smaller than the leading
//          dimensions (x: 512 vs 65536, y: 128 vs 16384), as the library's W_UV problem (mla_plan.cu) is.
// In cuBLAS's column-major terms y = x·Wᵀ is D (N×M, ld N) = op(A)·B with A = W as column-major K×N (ld K), transa T,
// and B = x as column-major K×M (ld K; w_uv: 128·512), transb N; C = D (beta 0). A tile id names a tile of D (rows
// along N, the weights; columns along M, the batch).
//
// Method: random bf16 operands (uniform [-1, 1], a device hash). Before EVERY timed launch a read-only pass over a
// buffer of 3× the L2 (uint4 loads folded into one word; a memset flush would leave dirty lines) evicts the weights,
// which never sit in L2 in the layer; the flush is outside the events (event, matmul, event). One 64 MiB workspace for
// every configuration (configurations that need more are skipped). Launches go out in chunks: each configuration of a
// chunk is launched once untimed (loads its kernel, drops configurations cuBLASLt refuses at launch), then a one-thread
// kernel holds the stream until the host has queued the whole chunk (or 20 ms pass), so no host gap lands inside a
// timed interval; the chunk's timed launches are interleaved across its configurations. The host checks and queues
// the next chunk while the GPU runs the current one.
//   1. heuristic: cublasLtMatmulAlgoGetHeuristic top-8 with the library's preference (reduction schemes NONE and
//      COMPUTE_TYPE only, 16-byte operand alignment; this probe's 64 MiB workspace), each also with split-K 2/4/8/16
//      and the COMPUTE_TYPE reduction where cublasLtMatmulAlgoCheck accepts it: the tuner's candidate set.
//   2. bases: cublasLtMatmulAlgoGetIds (compute 32F, scale 32F, A/B/C/D 16BF); for each id cublasLtMatmulAlgoInit and
//      its capabilities (CUBLASLT_ALGO_CAP_TILE_IDS, STAGES_IDS, SPLITK_SUPPORT, REDUCTION_SCHEME_MASK,
//      CTA_SWIZZLING_SUPPORT, CUSTOM_OPTION_MAX, MIN_ALIGNMENT_*); every (id, tile, stages) that
//      cublasLtMatmulAlgoCheck accepts with no split and cluster AUTO (else 1x1x1, 2x1x1 or 1x2x1) is a base. The
//      CUDA 13.0 header has no capability that lists an algo's cluster shapes (no CUBLASLT_ALGO_CAP_CLUSTER_SHAPE_IDS),
//      so every value of cublasLtClusterShape_t is tried and kept where cublasLtMatmulAlgoCheck accepts it. The
//      inner-shape id is left at its default (it has no capability either and names pre-sm_90 MMA shapes).
//   3. coarse pass: every base (in a shuffled order, so a pass cut short by the budget is an unbiased sample) at
//      split-K 1/2/4/8/16 (COMPUTE_TYPE reduction where the mask has it), swizzle 0, custom option 0; quick timing:
//      min of 2 flushed launches.
//   4. fine pass: bases in the order of their best coarse time, each expanded over everything: every cluster shape the
//      check accepts × custom option 0..max × swizzle 0/1 × split-K {1,2,3,4,5,6,8,12,16} × every reduction scheme in
//      the algo's mask (NONE for split 1); each combination cublasLtMatmulAlgoCheck accepts (workspace <= 64 MiB) is
//      quick-timed, until the budget runs out. Small bases are thus searched exhaustively, the rest best-first.
//   5. re-time: the best 20 quick times, the best 10 library-admissible quick times and all heuristic candidates,
//      median of 9 flushed launches each (after an untimed one), in one interleaved pool.
//   6. check: the heuristic top-1, the best heuristic candidate, the exhaustive top 10 and the best admissible one are
//      each run once more into an output filled with NaN, then compared with a naive fp32 kernel over 4096 sampled
//      outputs (row-major indexing, independent of the column-major mapping): max |y - ref| / max |ref| <= 1e-2 and no
//      NaN left anywhere in y, else "FAIL" and exit status 3.
// "Admissible" = usable by the library as it stands: reduction NONE or COMPUTE_TYPE (the library excludes INPLACE,
// which sums split-K parts with atomics in arrival order, and OUTPUT_TYPE, which rounds the parts to bf16), operand
// alignment <= 16 bytes (all its API guarantees), workspace <= 32 MiB (mla_plan.cu's kLtWorkspace). Marked "-" with
// the reason: r (reduction), a (alignment), w (workspace).
// Budget: --budget S seconds per shape (default 50): bases take at most 25 % of it, the coarse pass ends by 55 %, the
// fine pass leaves max(2 s, 6 %) for the re-time and the checks. Default run: 4 shapes ≈ 3.5 min on an H100.
//
// Output: device, SM clock (attribute and measured), copy ceiling (device-to-device cudaMemcpyAsync of 256 MiB,
// median of 5, (read + write) TB/s); per shape: the heuristic candidates (µs, weight TB/s = weight bytes / time,
// configuration), the heuristic top-1's time, the best heuristic candidate's time, the best 10 exhaustive
// configurations (algo id, tile, stages, split-K, reduction, swizzle, custom option, cluster shape, workspace bytes),
// the best admissible one, how many configurations were checked / valid / timed, the per-algo-id best, the check
// results and the verdict (time of the best exhaustive configuration relative to the best heuristic candidate).
// --json PATH writes the same as JSON. --warm-act re-reads the activations after each flush (the layer's activations
// are usually L2-resident; the default flushes them too).
//
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probes/lt_search.cu -lcublasLt -o lt_search
// Run:   ./lt_search [down|up|out|w_uv ...] [--budget S] [--json PATH] [--warm-act]   (default: all four shapes)
#include "../../tests/cuda_test_util.cuh"  // CK

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

typedef __nv_bfloat16 bf16;

#define LT(call)                                                                                               \
    do {                                                                                                       \
        cublasStatus_t s_ = (call);                                                                            \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                     \
            fprintf(stderr, "FAIL %s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cublasLtGetStatusName(s_)); \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)

constexpr size_t kWorkspace = (size_t)64 << 20;     // this probe's workspace, the same for every configuration
constexpr size_t kLibWorkspace = (size_t)32 << 20;  // the library's (mla_plan.cu, kLtWorkspace)
constexpr uint32_t kLibAlign = 16;                  // the operand alignment the library's API guarantees
constexpr int kHeurCount = 8;                       // the tuner's heuristic candidates (kLtHeuristicCandidates)
constexpr int kQuickReps = 2, kFinalReps = 9;
constexpr int kQuickChunk = 32, kFinalChunk = 16;
constexpr int kRetimeTop = 20, kRetimeAdmissible = 10, kPrintTop = 10;
constexpr int kSamples = 4096;
constexpr double kTol = 1e-2;
constexpr uint64_t kHoldNs = 20000000;  // the longest a chunk's hold kernel waits for the host
constexpr int kMaxCustom = 255;         // custom options tried: 0 .. min(CUSTOM_OPTION_MAX, this)
static const int32_t kSplits[] = {1, 2, 3, 4, 5, 6, 8, 12, 16};
static const int32_t kCoarseSplits[] = {1, 2, 4, 8, 16};
static const int32_t kHeurSplits[] = {2, 4, 8, 16};  // the tuner's forced splits (lt_gemm_candidates)

// ---------------------------------------------------------------------------------------------------------------------
// names of the enum values (cublasLt.h of CUDA 13.0); each entry is the enumerator itself, so a renamed or removed
// value fails to compile rather than print a wrong name; values missing here print as their number
struct Named {
    int id;
    const char *name;
};
#define TL(s) {CUBLASLT_MATMUL_TILE_##s, #s}
static const Named kTiles[] = {
    {CUBLASLT_MATMUL_TILE_UNDEFINED, "undef"},
    TL(8x8), TL(8x16), TL(16x8), TL(8x32), TL(16x16), TL(32x8), TL(8x64), TL(16x32), TL(32x16), TL(64x8), TL(32x32),
    TL(32x64), TL(64x32), TL(32x128), TL(64x64), TL(128x32), TL(64x128), TL(128x64), TL(64x256), TL(128x128),
    TL(256x64), TL(64x512), TL(128x256), TL(256x128), TL(512x64), TL(64x96), TL(96x64), TL(96x128), TL(128x160),
    TL(160x128), TL(192x128), TL(128x192), TL(128x96), TL(32x256), TL(256x32), TL(8x128), TL(8x192), TL(8x256),
    TL(8x320), TL(8x384), TL(8x448), TL(8x512), TL(8x576), TL(8x640), TL(8x704), TL(8x768), TL(16x64), TL(16x128),
    TL(16x192), TL(16x256), TL(16x320), TL(16x384), TL(16x448), TL(16x512), TL(16x576), TL(16x640), TL(16x704),
    TL(16x768), TL(24x64), TL(24x128), TL(24x192), TL(24x256), TL(24x320), TL(24x384), TL(24x448), TL(24x512),
    TL(24x576), TL(24x640), TL(24x704), TL(24x768), TL(32x192), TL(32x320), TL(32x384), TL(32x448), TL(32x512),
    TL(32x576), TL(32x640), TL(32x704), TL(32x768), TL(40x64), TL(40x128), TL(40x192), TL(40x256), TL(40x320),
    TL(40x384), TL(40x448), TL(40x512), TL(40x576), TL(40x640), TL(40x704), TL(40x768), TL(48x64), TL(48x128),
    TL(48x192), TL(48x256), TL(48x320), TL(48x384), TL(48x448), TL(48x512), TL(48x576), TL(48x640), TL(48x704),
    TL(48x768), TL(56x64), TL(56x128), TL(56x192), TL(56x256), TL(56x320), TL(56x384), TL(56x448), TL(56x512),
    TL(56x576), TL(56x640), TL(56x704), TL(56x768), TL(64x192), TL(64x320), TL(64x384), TL(64x448), TL(64x576),
    TL(64x640), TL(64x704), TL(64x768), TL(72x64), TL(72x128), TL(72x192), TL(72x256), TL(72x320), TL(72x384),
    TL(72x448), TL(72x512), TL(72x576), TL(72x640), TL(80x64), TL(80x128), TL(80x192), TL(80x256), TL(80x320),
    TL(80x384), TL(80x448), TL(80x512), TL(80x576), TL(88x64), TL(88x128), TL(88x192), TL(88x256), TL(88x320),
    TL(88x384), TL(88x448), TL(88x512), TL(96x192), TL(96x256), TL(96x320), TL(96x384), TL(96x448), TL(96x512),
    TL(104x64), TL(104x128), TL(104x192), TL(104x256), TL(104x320), TL(104x384), TL(104x448), TL(112x64), TL(112x128),
    TL(112x192), TL(112x256), TL(112x320), TL(112x384), TL(120x64), TL(120x128), TL(120x192), TL(120x256), TL(120x320),
    TL(120x384), TL(128x320), TL(128x384), TL(136x64), TL(136x128), TL(136x192), TL(136x256), TL(136x320), TL(144x64),
    TL(144x128), TL(144x192), TL(144x256), TL(144x320), TL(152x64), TL(152x128), TL(152x192), TL(152x256), TL(152x320),
    TL(160x64), TL(160x192), TL(160x256), TL(168x64), TL(168x128), TL(168x192), TL(168x256), TL(176x64), TL(176x128),
    TL(176x192), TL(176x256), TL(184x64), TL(184x128), TL(184x192), TL(184x256), TL(192x64), TL(192x192), TL(192x256),
    TL(200x64), TL(200x128), TL(200x192), TL(208x64), TL(208x128), TL(208x192), TL(216x64), TL(216x128), TL(216x192),
    TL(224x64), TL(224x128), TL(224x192), TL(232x64), TL(232x128), TL(232x192), TL(240x64), TL(240x128), TL(240x192),
    TL(248x64), TL(248x128), TL(248x192), TL(256x192), TL(264x64), TL(264x128), TL(272x64), TL(272x128), TL(280x64),
    TL(280x128), TL(288x64), TL(288x128), TL(296x64), TL(296x128), TL(304x64), TL(304x128), TL(312x64), TL(312x128),
    TL(320x64), TL(320x128), TL(328x64), TL(328x128), TL(336x64), TL(336x128), TL(344x64), TL(344x128), TL(352x64),
    TL(352x128), TL(360x64), TL(360x128), TL(368x64), TL(368x128), TL(376x64), TL(376x128), TL(384x64), TL(384x128),
    TL(392x64), TL(400x64), TL(408x64), TL(416x64), TL(424x64), TL(432x64), TL(440x64), TL(448x64), TL(456x64),
    TL(464x64), TL(472x64), TL(480x64), TL(488x64), TL(496x64), TL(504x64), TL(520x64), TL(528x64), TL(536x64),
    TL(544x64), TL(552x64), TL(560x64), TL(568x64), TL(576x64), TL(584x64), TL(592x64), TL(600x64), TL(608x64),
    TL(616x64), TL(624x64), TL(632x64), TL(640x64), TL(648x64), TL(656x64), TL(664x64), TL(672x64), TL(680x64),
    TL(688x64), TL(696x64), TL(704x64), TL(712x64), TL(720x64), TL(728x64), TL(736x64), TL(744x64), TL(752x64),
    TL(760x64), TL(768x64), TL(64x16), TL(64x24), TL(64x40), TL(64x48), TL(64x56), TL(64x72), TL(64x80), TL(64x88),
    TL(64x104), TL(64x112), TL(64x120), TL(64x136), TL(64x144), TL(64x152), TL(64x160), TL(64x168), TL(64x176),
    TL(64x184), TL(64x200), TL(64x208), TL(64x216), TL(64x224), TL(64x232), TL(64x240), TL(64x248), TL(64x264),
    TL(64x272), TL(64x280), TL(64x288), TL(64x296), TL(64x304), TL(64x312), TL(64x328), TL(64x336), TL(64x344),
    TL(64x352), TL(64x360), TL(64x368), TL(64x376), TL(64x392), TL(64x400), TL(64x408), TL(64x416), TL(64x424),
    TL(64x432), TL(64x440), TL(64x456), TL(64x464), TL(64x472), TL(64x480), TL(64x488), TL(64x496), TL(64x504),
    TL(64x520), TL(64x528), TL(64x536), TL(64x544), TL(64x552), TL(64x560), TL(64x568), TL(64x584), TL(64x592),
    TL(64x600), TL(64x608), TL(64x616), TL(64x624), TL(64x632), TL(64x648), TL(64x656), TL(64x664), TL(64x672),
    TL(64x680), TL(64x688), TL(64x696), TL(64x712), TL(64x720), TL(64x728), TL(64x736), TL(64x744), TL(64x752),
    TL(64x760), TL(128x8), TL(128x16), TL(128x24), TL(128x40), TL(128x48), TL(128x56), TL(128x72), TL(128x80),
    TL(128x88), TL(128x104), TL(128x112), TL(128x120), TL(128x136), TL(128x144), TL(128x152), TL(128x168), TL(128x176),
    TL(128x184), TL(128x200), TL(128x208), TL(128x216), TL(128x224), TL(128x232), TL(128x240), TL(128x248),
    TL(128x264), TL(128x272), TL(128x280), TL(128x288), TL(128x296), TL(128x304), TL(128x312), TL(128x328),
    TL(128x336), TL(128x344), TL(128x352), TL(128x360), TL(128x368), TL(128x376), TL(128x392), TL(128x400),
    TL(128x408), TL(128x416), TL(128x424), TL(128x432), TL(128x440), TL(128x448), TL(128x456), TL(128x464),
    TL(128x472), TL(128x480), TL(128x488), TL(128x496), TL(128x504), TL(128x512), TL(192x8), TL(192x16), TL(192x24),
    TL(192x32), TL(192x40), TL(192x48), TL(192x56), TL(192x72), TL(192x80), TL(192x88), TL(192x96), TL(192x104),
    TL(192x112), TL(192x120), TL(192x136), TL(192x144), TL(192x152), TL(192x160), TL(192x168), TL(192x176),
    TL(192x184), TL(192x200), TL(192x208), TL(192x216), TL(192x224), TL(192x232), TL(192x240), TL(192x248),
    TL(192x264), TL(192x272), TL(192x280), TL(192x288), TL(192x296), TL(192x304), TL(192x312), TL(192x320),
    TL(192x328), TL(192x336), TL(256x8), TL(256x16), TL(256x24), TL(256x40), TL(256x48), TL(256x56), TL(256x72),
    TL(256x80), TL(256x88), TL(256x96), TL(256x104), TL(256x112), TL(256x120), TL(256x136), TL(256x144), TL(256x152),
    TL(256x160), TL(256x168), TL(256x176), TL(256x184), TL(256x200), TL(256x208), TL(256x216), TL(256x224),
    TL(256x232), TL(256x240), TL(256x248), TL(256x256), TL(320x8), TL(320x16), TL(320x24), TL(320x32), TL(320x40),
    TL(320x48), TL(320x56), TL(320x72), TL(320x80), TL(320x88), TL(320x96), TL(320x104), TL(320x112), TL(320x120),
    TL(320x136), TL(320x144), TL(320x152), TL(320x160), TL(320x168), TL(320x176), TL(320x184), TL(320x192),
    TL(320x200), TL(384x8), TL(384x16), TL(384x24), TL(384x32), TL(384x40), TL(384x48), TL(384x56), TL(384x72),
    TL(384x80), TL(384x88), TL(384x96), TL(384x104), TL(384x112), TL(384x120), TL(384x136), TL(384x144), TL(384x152),
    TL(384x160), TL(384x168), TL(448x8), TL(448x16), TL(448x24), TL(448x32), TL(448x40), TL(448x48), TL(448x56),
    TL(448x72), TL(448x80), TL(448x88), TL(448x96), TL(448x104), TL(448x112), TL(448x120), TL(448x128), TL(448x136),
    TL(448x144), TL(512x8), TL(512x16), TL(512x24), TL(512x32), TL(512x40), TL(512x48), TL(512x56), TL(512x72),
    TL(512x80), TL(512x88), TL(512x96), TL(512x104), TL(512x112), TL(512x120), TL(512x128), TL(576x8), TL(576x16),
    TL(576x24), TL(576x32), TL(576x40), TL(576x48), TL(576x56), TL(576x72), TL(576x80), TL(576x88), TL(576x96),
    TL(576x104), TL(576x112), TL(640x8), TL(640x16), TL(640x24), TL(640x32), TL(640x40), TL(640x48), TL(640x56),
    TL(640x72), TL(640x80), TL(640x88), TL(640x96), TL(704x8), TL(704x16), TL(704x24), TL(704x32), TL(704x40),
    TL(704x48), TL(704x56), TL(704x72), TL(704x80), TL(704x88), TL(768x8), TL(768x16), TL(768x24), TL(768x32),
    TL(768x40), TL(768x48), TL(768x56), TL(768x72), TL(768x80), TL(256x512), TL(256x1024), TL(512x512), TL(512x1024)
};
#undef TL
#define ST(s) {CUBLASLT_MATMUL_STAGES_##s, #s}
static const Named kStagesNames[] = {
    {CUBLASLT_MATMUL_STAGES_UNDEFINED, "undef"},
    ST(16x1), ST(16x2), ST(16x3), ST(16x4), ST(16x5), ST(16x6), ST(32x1), ST(32x2), ST(32x3), ST(32x4), ST(32x5),
    ST(32x6), ST(64x1), ST(64x2), ST(64x3), ST(64x4), ST(64x5), ST(64x6), ST(128x1), ST(128x2), ST(128x3), ST(128x4),
    ST(128x5), ST(128x6), ST(32x10), ST(8x4), ST(16x10), ST(8x5), ST(8x3), ST(8xAUTO), ST(16xAUTO), ST(32xAUTO),
    ST(64xAUTO), ST(128xAUTO), ST(256xAUTO), ST(768xAUTO)
};
#undef ST
// also the cluster shapes the fine pass tries (there is no capability listing an algo's cluster shapes)
#define CL(s) {CUBLASLT_CLUSTER_SHAPE_##s, #s}
static const Named kClusters[] = {
    {CUBLASLT_CLUSTER_SHAPE_AUTO, "auto"},
    CL(1x1x1), CL(2x1x1), CL(4x1x1), CL(1x2x1), CL(2x2x1), CL(4x2x1), CL(1x4x1), CL(2x4x1), CL(4x4x1), CL(8x1x1),
    CL(1x8x1), CL(8x2x1), CL(2x8x1), CL(16x1x1), CL(1x16x1), CL(3x1x1), CL(5x1x1), CL(6x1x1), CL(7x1x1), CL(9x1x1),
    CL(10x1x1), CL(11x1x1), CL(12x1x1), CL(13x1x1), CL(14x1x1), CL(15x1x1), CL(3x2x1), CL(5x2x1), CL(6x2x1), CL(7x2x1),
    CL(1x3x1), CL(2x3x1), CL(3x3x1), CL(4x3x1), CL(5x3x1), CL(3x4x1), CL(1x5x1), CL(2x5x1), CL(3x5x1), CL(1x6x1),
    CL(2x6x1), CL(1x7x1), CL(2x7x1), CL(1x9x1), CL(1x10x1), CL(1x11x1), CL(1x12x1), CL(1x13x1), CL(1x14x1), CL(1x15x1)
};
#undef CL

static const char *name_of(const Named *t, size_t n, int id) {
    for (size_t i = 0; i < n; i++)
        if (t[i].id == id) return t[i].name;
    return "?";
}
#define NAME_OF(table, id) name_of(table, sizeof(table) / sizeof(table[0]), (int)(id))

static const char *red_name(uint32_t r) {
    switch (r) {
        case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
        case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
        case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "compute";
        case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "output";
        default: return "?";
    }
}

// ---------------------------------------------------------------------------------------------------------------------
// device side

__device__ __forceinline__ uint64_t global_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ uint32_t hash32(uint32_t h) {
    h *= 0x9e3779b1u;
    h ^= h >> 15;
    h *= 0x85ebca77u;
    h ^= h >> 13;
    h *= 0xc2b2ae3du;
    h ^= h >> 16;
    return h;
}

// uniform [-1, 1) bf16
__global__ void init_kernel(bf16 *p, size_t n, uint32_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint32_t h = hash32((uint32_t)i ^ hash32(seed + (uint32_t)(i >> 32)));
        p[i] = __float2bfloat16((float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f);
    }
}

// read-only pass: plain (L2-allocating, normal-priority) loads, folded into a word that is stored only if it matches
__global__ void read_kernel(const uint4 *__restrict__ p, size_t n16, unsigned *sink) {
    unsigned x = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = p[i];
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) sink[0] = x;
}

// holds the stream until the host has queued chunk `ticket` (the flag, which only grows, reaches it) or timeout_ns pass
__global__ void hold_kernel(const volatile unsigned *flag, unsigned ticket, uint64_t timeout_ns) {
    const uint64_t t0 = global_ns();
    while (*flag < ticket && global_ns() - t0 < timeout_ns) {
    }
}

__global__ void clock_kernel(unsigned long long *out, uint64_t ns) {
    const uint64_t t0 = global_ns();
    const long long c0 = clock64();
    while (global_ns() - t0 < ns) {
    }
    out[0] = (unsigned long long)(clock64() - c0);
    out[1] = global_ns() - t0;
}

// the problem in the library's row-major terms, element strides
struct Geo {
    int M, N, K, batch;
    long long x_ld, x_bs, w_ld, w_bs, y_ld, y_bs;
};

// one warp per sampled output y[z][m][n] = sum_k x[z][m][k] · w[z][n][k], in fp32 from the same bf16 operands
__global__ void ref_kernel(Geo g, const bf16 *x, const bf16 *w, const bf16 *y, int samples, float *ref, float *got) {
    const int s = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (s >= samples) return;
    int z, m, n;
    if (s == 0) {
        z = m = n = 0;
    } else if (s == 1) {
        z = g.batch - 1, m = g.M - 1, n = g.N - 1;
    } else {
        z = (int)(hash32(3u * s + 0x1234u) % (uint32_t)g.batch);
        m = (int)(hash32(3u * s + 0x5678u) % (uint32_t)g.M);
        n = (int)(hash32(3u * s + 0x9abcu) % (uint32_t)g.N);
    }
    const bf16 *xr = x + z * g.x_bs + m * g.x_ld, *wr = w + z * g.w_bs + n * g.w_ld;
    float acc = 0.0f;
    for (int k = lane; k < g.K; k += 32) acc = fmaf(__bfloat162float(xr[k]), __bfloat162float(wr[k]), acc);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) {
        ref[s] = acc;
        got[s] = __bfloat162float(y[z * g.y_bs + m * g.y_ld + n]);
    }
}

// bf16 NaN / Inf (exponent all ones) anywhere in y: outputs a configuration left unwritten
__global__ void nan_kernel(const unsigned short *y, size_t n, unsigned *count) {
    unsigned c = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        c += (y[i] & 0x7f80u) == 0x7f80u;
    if (c) atomicAdd(count, c);
}

// ---------------------------------------------------------------------------------------------------------------------
// host side

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void appendf(std::string &s, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    s += buf;
}

// a JSON number, or null
static std::string num(double v, const char *fmt = "%.6g") {
    if (!isfinite(v)) return "null";
    char b[64];
    snprintf(b, sizeof b, fmt, v);
    return b;
}

static float median_of(std::vector<float> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5f * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Shape {
    const char *name;
    Geo g;
    size_t x_elems() const { return (size_t)((g.M - 1) * g.x_ld + (g.batch - 1) * g.x_bs + g.K); }
    size_t w_elems() const { return (size_t)((g.batch - 1) * g.w_bs + (g.N - 1) * g.w_ld + g.K); }
    size_t y_elems() const { return (size_t)((g.M - 1) * g.y_ld + (g.batch - 1) * g.y_bs + g.N); }
    double weight_bytes() const { return 2.0 * g.batch * g.N * (double)g.K; }
};

static const Shape kShapes[] = {
    {"down", {128, 2112, 7168, 1, 7168, 0, 7168, 0, 2112, 0}},
    {"up", {128, 24576, 1536, 1, 1536, 0, 1536, 0, 24576, 0}},
    {"out", {128, 7168, 16384, 1, 16384, 0, 16384, 0, 7168, 0}},
    {"w_uv", {128, 128, 512, 128, 128 * 512, 512, 512, 128 * 512, 128 * 128, 128}},
};
constexpr int kNShapes = (int)(sizeof(kShapes) / sizeof(kShapes[0]));

// one configuration, with what was measured of it
struct Cfg {
    cublasLtMatmulAlgo_t algo;
    int id = -1;
    uint32_t tile = 0, stages = 0, red = 0, swz = 0, custom = 0;
    int32_t split = 1;
    uint16_t cluster = 0, inner = 0;
    size_t ws = 0;
    float waves = 0;
    uint32_t align = 0;  // the largest minimum alignment the algo needs of A, B, C, D (bytes)
    int base = -1;       // index of its base (exhaustive), -1 for the heuristic's
    int heur = -1;       // heuristic rank it derives from (-1: exhaustive)
    float quick = NAN, med = NAN;
    bool failed = false;
    double err = NAN;
    unsigned nan = 0;
    bool checked = false;
};

// an (algo id, tile, stages) that cublasLtMatmulAlgoCheck accepts, with the id's capabilities
struct Base {
    cublasLtMatmulAlgo_t algo;  // tile, stages and cluster set, split 1
    int id;
    uint32_t tile, stages, red_mask, swz_support, align;
    int32_t splitk_support, custom_max;
    uint16_t cluster;
    float coarse = NAN;
    bool expanded = false;
};

struct Ctx {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulPreference_t pref;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // A = W (K×N, op T), B = x (K×M), C = D = y (N×M)
    cudaStream_t st;
    void *ws;
    uint4 *flush;
    size_t flush16;
    unsigned *sink;
    int sms;
    unsigned *flag_h, *flag_d;  // mapped host word: the last chunk ticket fully queued
    unsigned ticket = 0;
    std::vector<cudaEvent_t> ev;  // two halves: the chunk in flight and the one being queued
    int half = 0;
    bool warm_act;
    const Shape *s = nullptr;
    bf16 *x = nullptr, *w = nullptr, *y = nullptr;
    // counters of the current shape
    long checked = 0, valid = 0, timed = 0, launch_fail = 0;
    // the chunk queued last, not yet read back
    struct Chunk {
        std::vector<Cfg *> live;
        std::vector<char> bad;
        int reps = 0, ev0 = 0;
        bool final_pass = false;
    } inflight;
};
constexpr int kEvHalf = 2 * (kFinalReps * kFinalChunk > kQuickReps * kQuickChunk ? kFinalReps * kFinalChunk
                                                                                  : kQuickReps * kQuickChunk);

static cublasStatus_t matmul(Ctx &c, const cublasLtMatmulAlgo_t &algo) {
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(c.lt, c.desc, &alpha, c.w, c.a, c.x, c.b, &beta, c.y, c.d, c.y, c.d, &algo, c.ws, kWorkspace,
                          c.st);
}

static bool cset(cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoConfigAttributes_t attr, const void *buf, size_t n) {
    return cublasLtMatmulAlgoConfigSetAttribute(a, attr, buf, n) == CUBLAS_STATUS_SUCCESS;
}

template <class T>
static T cget(const cublasLtMatmulAlgo_t &a, cublasLtMatmulAlgoConfigAttributes_t attr) {
    T v = 0;
    size_t got = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&a, attr, &v, sizeof v, &got) != CUBLAS_STATUS_SUCCESS) v = 0;
    return v;
}

template <class T>
static T capget(const cublasLtMatmulAlgo_t &a, cublasLtMatmulAlgoCapAttributes_t attr) {
    T v = 0;
    size_t got = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&a, attr, &v, sizeof v, &got) != CUBLAS_STATUS_SUCCESS) v = 0;
    return v;
}

static std::vector<uint32_t> capget_ids(const cublasLtMatmulAlgo_t &a, cublasLtMatmulAlgoCapAttributes_t attr) {
    std::vector<uint32_t> v;
    size_t need = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&a, attr, nullptr, 0, &need) == CUBLAS_STATUS_SUCCESS && need > 0) {
        v.resize(need / sizeof(uint32_t));
        size_t got = 0;
        if (cublasLtMatmulAlgoCapGetAttribute(&a, attr, v.data(), v.size() * sizeof(uint32_t), &got) !=
            CUBLAS_STATUS_SUCCESS)
            v.clear();
        else
            v.resize(got / sizeof(uint32_t));
    }
    return v;
}

static uint32_t algo_align(const cublasLtMatmulAlgo_t &a) {
    uint32_t m = 0;
    m = std::max(m, capget<uint32_t>(a, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES));
    m = std::max(m, capget<uint32_t>(a, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES));
    m = std::max(m, capget<uint32_t>(a, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES));
    m = std::max(m, capget<uint32_t>(a, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES));
    return m;
}

// the configuration an algo carries
static void read_cfg(const cublasLtMatmulAlgo_t &a, Cfg *c) {
    c->algo = a;
    c->id = cget<int32_t>(a, CUBLASLT_ALGO_CONFIG_ID);
    c->tile = cget<uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID);
    c->stages = cget<uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID);
    c->split = cget<int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
    c->red = cget<uint32_t>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
    c->swz = cget<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
    c->custom = cget<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
    c->inner = cget<uint16_t>(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID);
    c->cluster = cget<uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
    if (c->split < 1) c->split = 1;
}

// cublasLtMatmulAlgoCheck on the current shape; fills workspace and waves where it accepts
static bool check_algo(Ctx &c, const cublasLtMatmulAlgo_t &a, size_t *ws, float *waves) {
    cublasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    c.checked++;
    if (cublasLtMatmulAlgoCheck(c.lt, c.desc, c.a, c.b, c.d, c.d, &a, &r) != CUBLAS_STATUS_SUCCESS ||
        r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > kWorkspace)
        return false;
    c.valid++;
    if (ws) *ws = r.workspaceSize;
    if (waves) *waves = r.wavesCount;
    return true;
}

static uint64_t cfg_key(const Cfg &c) {
    return ((uint64_t)(c.id & 0xffff) << 48) | ((uint64_t)(c.tile & 0xfff) << 36) |
           ((uint64_t)(c.stages & 0xff) << 28) | ((uint64_t)(c.cluster & 0xff) << 20) |
           ((uint64_t)(c.custom & 0xff) << 12) | ((uint64_t)(c.split & 0xff) << 4) | ((uint64_t)(c.red & 7) << 1) |
           (uint64_t)(c.swz & 1);
}

// "" when the library could use the configuration as it stands, else r / a / w (reduction, alignment, workspace)
static std::string inadmissible(const Cfg &c) {
    std::string s;
    const bool red_ok = c.red == CUBLASLT_REDUCTION_SCHEME_NONE || c.red == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    if (!red_ok) s += "r";
    if (c.align > kLibAlign) s += "a";
    if (c.ws > kLibWorkspace) s += "w";
    return s;
}

static void flush_l2(Ctx &c) {
    read_kernel<<<c.sms * 4, 512, 0, c.st>>>(c.flush, c.flush16, c.sink);
    if (c.warm_act) read_kernel<<<c.sms * 2, 512, 0, c.st>>>((const uint4 *)c.x, c.s->x_elems() * 2 / 16, c.sink);
}

static void print_cfg_line(FILE *f, const Cfg &c) {
    fprintf(f, "id %3d  tile %3u %-7s  stages %2u %-7s  split %2d %-7s  swz %u  cust %u  cluster %2u %-6s  ws %9zu",
            c.id, c.tile, NAME_OF(kTiles, c.tile), c.stages, NAME_OF(kStagesNames, c.stages), c.split, red_name(c.red),
            c.swz, c.custom, c.cluster, NAME_OF(kClusters, c.cluster), c.ws);
}

// reads back the chunk in flight: quick = min of its launches (ranking), med = median (reported)
static void collect(Ctx &c) {
    Ctx::Chunk &k = c.inflight;
    if (k.live.empty()) return;
    const int n = (int)k.live.size();
    const cudaError_t e = cudaEventSynchronize(c.ev[k.ev0 + 2 * (k.reps * n - 1) + 1]);
    if (e != cudaSuccess) {
        fprintf(stderr, "FAIL: %s while timing these configurations (%s) or the chunk after them:\n",
                cudaGetErrorName(e), c.s->name);
        for (Cfg *p : k.live) {
            fprintf(stderr, "  ");
            print_cfg_line(stderr, *p);
            fprintf(stderr, "\n");
        }
        exit(1);
    }
    for (int j = 0; j < n; j++) {
        if (k.bad[j]) {
            k.live[j]->failed = true;
            c.launch_fail++;
            continue;
        }
        std::vector<float> t;
        for (int r = 0; r < k.reps; r++) {
            const int i = k.ev0 + 2 * (r * n + j);
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, c.ev[i], c.ev[i + 1]));
            t.push_back(ms * 1000.0f);
        }
        if (k.final_pass) {
            k.live[j]->med = median_of(t);
        } else {
            k.live[j]->quick = *std::min_element(t.begin(), t.end());
            c.timed++;
        }
    }
    k.live.clear();
}

// queues `reps` timed launches of each configuration (each after the flush, cudaEvents around the matmul alone), in
// chunks; the host queues chunk i + 1 (and checks the configurations of the next) while the GPU runs chunk i, and
// reads chunk i back once chunk i + 1 is queued. Results are complete after drain().
static void submit(Ctx &c, const std::vector<Cfg *> &v, int reps, bool final_pass) {
    const int chunk = final_pass ? kFinalChunk : kQuickChunk;
    for (size_t i0 = 0; i0 < v.size(); i0 += chunk) {
        const size_t i1 = std::min(v.size(), i0 + (size_t)chunk);
        Ctx::Chunk k;
        k.reps = reps;
        k.final_pass = final_pass;
        for (size_t i = i0; i < i1; i++) {  // untimed launch: loads the kernel, drops what cuBLASLt refuses
            if (v[i]->failed) continue;
            if (matmul(c, v[i]->algo) != CUBLAS_STATUS_SUCCESS) {
                v[i]->failed = true;
                c.launch_fail++;
            } else {
                k.live.push_back(v[i]);
            }
        }
        CK(cudaGetLastError());
        if (k.live.empty()) continue;
        const int n = (int)k.live.size();
        if (2 * reps * n > kEvHalf) {
            fprintf(stderr, "FAIL: event pool too small\n");
            exit(1);
        }
        k.ev0 = c.half * kEvHalf;
        c.half ^= 1;
        k.bad.assign(n, 0);
        const unsigned ticket = ++c.ticket;
        hold_kernel<<<1, 1, 0, c.st>>>(c.flag_d, ticket, kHoldNs);
        CK(cudaGetLastError());
        for (int r = 0; r < reps; r++)
            for (int j = 0; j < n; j++) {
                const int e = k.ev0 + 2 * (r * n + j);
                flush_l2(c);
                CK(cudaEventRecord(c.ev[e], c.st));
                if (matmul(c, k.live[j]->algo) != CUBLAS_STATUS_SUCCESS) k.bad[j] = 1;
                CK(cudaEventRecord(c.ev[e + 1], c.st));
            }
        std::atomic_thread_fence(std::memory_order_seq_cst);
        *(volatile unsigned *)c.flag_h = ticket;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        collect(c);  // the previous chunk (its event half is free again after this)
        c.inflight = k;
    }
}

static void drain(Ctx &c) {
    collect(c);
    CK(cudaStreamSynchronize(c.st));
}

// one launch into a NaN-filled y, then the sampled fp32 reference and the NaN count
static void check_cfg(Ctx &c, Cfg *p, float *ref_d, float *got_d, unsigned *cnt_d) {
    const size_t ny = c.s->y_elems();
    CK(cudaMemsetAsync(c.y, 0xff, ny * 2, c.st));  // 0xffff: a bf16 NaN
    CK(cudaMemsetAsync(cnt_d, 0, sizeof(unsigned), c.st));
    if (matmul(c, p->algo) != CUBLAS_STATUS_SUCCESS) {
        p->checked = true;
        p->err = INFINITY;
        return;
    }
    ref_kernel<<<(kSamples * 32 + 255) / 256, 256, 0, c.st>>>(c.s->g, c.x, c.w, c.y, kSamples, ref_d, got_d);
    nan_kernel<<<c.sms * 4, 256, 0, c.st>>>((const unsigned short *)c.y, ny, cnt_d);
    CK(cudaGetLastError());
    std::vector<float> ref(kSamples), got(kSamples);
    CK(cudaMemcpyAsync(ref.data(), ref_d, kSamples * sizeof(float), cudaMemcpyDeviceToHost, c.st));
    CK(cudaMemcpyAsync(got.data(), got_d, kSamples * sizeof(float), cudaMemcpyDeviceToHost, c.st));
    CK(cudaMemcpyAsync(&p->nan, cnt_d, sizeof(unsigned), cudaMemcpyDeviceToHost, c.st));
    CK(cudaStreamSynchronize(c.st));
    double max_ref = 0, max_diff = 0;
    bool finite = true;
    for (int i = 0; i < kSamples; i++) {
        if (!isfinite(got[i])) finite = false;
        max_ref = std::max(max_ref, (double)fabsf(ref[i]));
        max_diff = std::max(max_diff, (double)fabsf(got[i] - ref[i]));
    }
    p->err = finite && max_ref > 0 ? max_diff / max_ref : INFINITY;
    p->checked = true;
}

static bool check_ok(const Cfg &c) { return c.checked && c.err <= kTol && c.nan == 0; }

static void json_cfg(std::string &j, const Cfg &c, double wbytes) {
    const std::string inad = inadmissible(c);
    appendf(j, "{\"algo\": %d, \"tile\": %u, \"tile_name\": \"%s\", \"stages\": %u, \"stages_name\": \"%s\", ", c.id,
            c.tile, NAME_OF(kTiles, c.tile), c.stages, NAME_OF(kStagesNames, c.stages));
    appendf(j, "\"split_k\": %d, \"reduction\": \"%s\", \"reduction_id\": %u, \"swizzle\": %u, \"custom\": %u, ",
            c.split, red_name(c.red), c.red, c.swz, c.custom);
    appendf(j, "\"cluster\": %u, \"cluster_name\": \"%s\", \"inner_shape\": %u, \"workspace_bytes\": %zu, ", c.cluster,
            NAME_OF(kClusters, c.cluster), c.inner, c.ws);
    appendf(j, "\"waves\": %.3f, \"align_bytes\": %u, \"admissible\": %s, \"inadmissible_why\": \"%s\", ", c.waves,
            c.align, inad.empty() ? "true" : "false", inad.c_str());
    if (isfinite(c.med))
        appendf(j, "\"us\": %.3f, \"weight_tbs\": %.4f, ", c.med, wbytes / c.med * 1e-6);
    else
        appendf(j, "\"us\": null, \"weight_tbs\": null, ");
    if (isfinite(c.quick))
        appendf(j, "\"quick_us\": %.3f, ", c.quick);
    else
        appendf(j, "\"quick_us\": null, ");
    if (c.checked)
        appendf(j, "\"check_err\": %s, \"check_nan\": %u, \"check_ok\": %s}", num(c.err, "%.3e").c_str(), c.nan,
                check_ok(c) ? "true" : "false");
    else
        appendf(j, "\"check_err\": null, \"check_nan\": null, \"check_ok\": null}");
}

// one row of a table: time, weight TB/s, admissibility, configuration, check
static void print_row(const char *tag, const Cfg &c, double wbytes) {
    const std::string inad = inadmissible(c);
    const std::string adm = inad.empty() ? "yes" : "-" + inad;
    printf("  %-6s %8.2f us %5.2f TB/s  %-3s ", tag, c.med, wbytes / c.med * 1e-6, adm.c_str());
    print_cfg_line(stdout, c);
    if (c.checked)
        printf("  check %.1e%s%s", c.err, c.nan ? " NaN" : "", check_ok(c) ? "" : " FAIL");
    printf("\n");
}

struct AlgoSum {
    int bases = 0;
    long timed = 0;
    float best = INFINITY;
};

// the search for one shape; appends its JSON object; returns false when a check failed
static bool run_shape(Ctx &c, const Shape &s, double budget, std::string &json) {
    const double t0 = now_s(), deadline = t0 + budget;
    const double enum_deadline = t0 + 0.25 * budget, coarse_deadline = t0 + 0.55 * budget;
    const double fine_deadline = deadline - std::max(2.0, 0.06 * budget);
    const double wbytes = s.weight_bytes();
    c.s = &s;
    c.checked = c.valid = c.timed = c.launch_fail = 0;
    char batch_txt[64] = "";
    if (s.g.batch > 1) snprintf(batch_txt, sizeof batch_txt, ", strided batch of %d", s.g.batch);
    printf("\n=== %s: M %d, N %d, K %d%s (weights %.1f MB) ===\n", s.name, s.g.M, s.g.N, s.g.K, batch_txt,
           wbytes / 1e6);

    // operands
    CK(cudaMalloc(&c.x, s.x_elems() * 2));
    CK(cudaMalloc(&c.w, s.w_elems() * 2));
    CK(cudaMalloc(&c.y, s.y_elems() * 2));
    init_kernel<<<c.sms * 8, 256, 0, c.st>>>(c.x, s.x_elems(), 0x1000u);
    init_kernel<<<c.sms * 8, 256, 0, c.st>>>(c.w, s.w_elems(), 0x2000u);
    CK(cudaMemsetAsync(c.y, 0, s.y_elems() * 2, c.st));
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(c.st));

    // layouts (column-major): A = W as K×N (ld = W's row stride), op T; B = x as K×M (ld = x's row stride), op N;
    // C = D = y as N×M (ld = y's row stride); batch offsets = the per-head element strides
    auto layout = [&](cublasLtMatrixLayout_t *l, uint64_t rows, uint64_t cols, int64_t ld, int64_t bs) {
        LT(cublasLtMatrixLayoutCreate(l, CUDA_R_16BF, rows, cols, ld));
        if (s.g.batch > 1) {
            const int32_t count = s.g.batch;
            LT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
            LT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &bs, sizeof bs));
        }
    };
    layout(&c.a, s.g.K, s.g.N, s.g.w_ld, s.g.w_bs);
    layout(&c.b, s.g.K, s.g.M, s.g.x_ld, s.g.x_bs);
    layout(&c.d, s.g.N, s.g.M, s.g.y_ld, s.g.y_bs);

    std::deque<Cfg> pool;  // stable addresses
    std::unordered_set<uint64_t> seen;

    // 1. the tuner's candidates: heuristic top-8, each also with split-K 2/4/8/16 (COMPUTE_TYPE)
    std::vector<Cfg *> heur;
    Cfg *h_top1 = nullptr;  // the heuristic's first result as it comes
    {
        cublasLtMatmulHeuristicResult_t res[kHeurCount];
        memset(res, 0, sizeof res);
        int found = 0;
        LT(cublasLtMatmulAlgoGetHeuristic(c.lt, c.desc, c.a, c.b, c.d, c.d, c.pref, kHeurCount, res, &found));
        std::unordered_set<uint64_t> hseen;
        for (int r = 0; r < std::min(found, kHeurCount); r++) {
            if (res[r].state != CUBLAS_STATUS_SUCCESS || res[r].workspaceSize > kWorkspace) continue;
            Cfg h;
            read_cfg(res[r].algo, &h);
            h.ws = res[r].workspaceSize;
            h.waves = res[r].wavesCount;
            h.align = algo_align(res[r].algo);
            h.heur = r;
            if (hseen.insert(cfg_key(h)).second) {
                pool.push_back(h);
                heur.push_back(&pool.back());
                if (r == 0) h_top1 = &pool.back();
            }
            for (int32_t split : kHeurSplits) {
                cublasLtMatmulAlgo_t a = res[r].algo;
                const uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
                if (!cset(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof split) ||
                    !cset(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof scheme))
                    continue;
                Cfg v;
                if (!check_algo(c, a, &v.ws, &v.waves)) continue;
                read_cfg(a, &v);
                v.align = h.align;
                v.heur = r;
                if (hseen.insert(cfg_key(v)).second) {
                    pool.push_back(v);
                    heur.push_back(&pool.back());
                }
            }
        }
        printf("  heuristic: %d results, %zu candidates with the forced splits\n", found, heur.size());
    }

    // 2. bases
    std::vector<Base> bases;
    int n_ids = 0, n_init = 0;
    long base_tried = 0;
    bool enum_cut = false;
    {
        std::vector<int> ids(4096);
        LT(cublasLtMatmulAlgoGetIds(c.lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                    CUDA_R_16BF, (int)ids.size(), ids.data(), &n_ids));
        for (int i = 0; i < n_ids && !enum_cut; i++) {
            cublasLtMatmulAlgo_t a0;
            if (cublasLtMatmulAlgoInit(c.lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                       CUDA_R_16BF, ids[i], &a0) != CUBLAS_STATUS_SUCCESS)
                continue;
            n_init++;
            Base b0;
            b0.id = ids[i];
            b0.splitk_support = capget<int32_t>(a0, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT);
            b0.red_mask = capget<uint32_t>(a0, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
            b0.swz_support = capget<uint32_t>(a0, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT);
            b0.custom_max = capget<int32_t>(a0, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX);
            b0.align = algo_align(a0);
            std::vector<uint32_t> tiles = capget_ids(a0, CUBLASLT_ALGO_CAP_TILE_IDS);
            std::vector<uint32_t> stages = capget_ids(a0, CUBLASLT_ALGO_CAP_STAGES_IDS);
            if (tiles.empty()) tiles.push_back(CUBLASLT_MATMUL_TILE_UNDEFINED);
            if (stages.empty()) stages.push_back(CUBLASLT_MATMUL_STAGES_UNDEFINED);
            for (uint32_t tile : tiles) {
                for (uint32_t stage : stages) {
                    if (now_s() > enum_deadline) {
                        enum_cut = true;
                        break;
                    }
                    cublasLtMatmulAlgo_t a = a0;
                    if (!cset(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile) ||
                        !cset(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage, sizeof stage))
                        continue;
                    base_tried++;
                    static const uint16_t kTry[] = {CUBLASLT_CLUSTER_SHAPE_AUTO, CUBLASLT_CLUSTER_SHAPE_1x1x1,
                                                    CUBLASLT_CLUSTER_SHAPE_2x1x1, CUBLASLT_CLUSTER_SHAPE_1x2x1};
                    for (uint16_t cl : kTry) {
                        cublasLtMatmulAlgo_t ac = a;
                        if (!cset(&ac, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cl, sizeof cl)) continue;
                        if (!check_algo(c, ac, nullptr, nullptr)) continue;
                        Base b = b0;
                        b.algo = ac;
                        b.tile = tile;
                        b.stages = stage;
                        b.cluster = cl;
                        bases.push_back(b);
                        break;
                    }
                }
                if (enum_cut) break;
            }
        }
        printf("  bases: %d algo ids (%d initialised), %zu (id, tile, stages) valid of %ld tried%s  [%.1f s]\n", n_ids,
               n_init, bases.size(), base_tried, enum_cut ? ", CUT by the budget" : "", now_s() - t0);
    }

    // adds a configuration of base bi if the check accepts it and it is new
    auto add_cfg = [&](const cublasLtMatmulAlgo_t &a, int bi, std::vector<Cfg *> &pending) {
        Cfg v;
        if (!check_algo(c, a, &v.ws, &v.waves)) return;
        read_cfg(a, &v);
        v.base = bi;
        v.align = bases[bi].align;
        if (!seen.insert(cfg_key(v)).second) return;
        pool.push_back(v);
        pending.push_back(&pool.back());
    };
    auto set_split = [&](cublasLtMatmulAlgo_t *a, int32_t split, uint32_t red) {
        return cset(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof split) &&
               cset(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red);
    };
    auto run_pending = [&](std::vector<Cfg *> &pending) {
        submit(c, pending, kQuickReps, false);
        pending.clear();
    };
    std::vector<Cfg *> exh;  // every quick-timed exhaustive configuration (after a drain)
    auto gather = [&]() {
        exh.clear();
        for (Cfg &p : pool)
            if (p.heur < 0 && !p.failed && isfinite(p.quick)) {
                exh.push_back(&p);
                Base &b = bases[p.base];
                if (!(b.coarse <= p.quick)) b.coarse = p.quick;
            }
    };

    // 3. coarse pass, bases shuffled
    std::vector<int> order(bases.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = (int)i;
    {
        uint64_t r = 0x243f6a8885a308d3ull;
        for (size_t i = order.size(); i > 1; i--) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            std::swap(order[i - 1], order[(size_t)((r >> 33) % i)]);
        }
    }
    size_t coarse_bases = 0;
    {
        std::vector<Cfg *> pending;
        for (size_t oi = 0; oi < order.size(); oi++) {
            if (now_s() > coarse_deadline) break;
            const int bi = order[oi];
            const Base &b = bases[bi];
            for (int32_t split : kCoarseSplits) {
                if (split > 1 && !b.splitk_support) break;
                uint32_t red = CUBLASLT_REDUCTION_SCHEME_NONE;
                if (split > 1) {
                    if (b.red_mask & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)
                        red = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
                    else if (b.red_mask & CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)
                        red = CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
                    else if (b.red_mask & CUBLASLT_REDUCTION_SCHEME_INPLACE)
                        red = CUBLASLT_REDUCTION_SCHEME_INPLACE;
                    else
                        break;
                }
                cublasLtMatmulAlgo_t a = b.algo;
                if (set_split(&a, split, red)) add_cfg(a, bi, pending);
            }
            coarse_bases++;
            if (pending.size() >= (size_t)kQuickChunk) run_pending(pending);
        }
        if (now_s() < coarse_deadline) run_pending(pending);
        drain(c);
        gather();
        printf("  coarse: %zu of %zu bases, %zu configurations timed  [%.1f s]\n", coarse_bases, bases.size(),
               exh.size(), now_s() - t0);
    }

    // 4. fine pass: bases best-first, each expanded over everything
    size_t expanded = 0, started = 0;
    {
        std::vector<int> rank;
        for (size_t i = 0; i < bases.size(); i++)
            if (isfinite(bases[i].coarse)) rank.push_back((int)i);
        std::sort(rank.begin(), rank.end(), [&](int p, int q) { return bases[p].coarse < bases[q].coarse; });
        std::vector<Cfg *> pending;
        bool cut = false;
        for (int bi : rank) {
            if (now_s() > fine_deadline) break;
            started++;
            Base &b = bases[bi];
            // cluster shapes the check accepts (split 1)
            std::vector<uint16_t> cls;
            for (const Named &cn : kClusters) {
                cublasLtMatmulAlgo_t a = b.algo;
                const uint16_t cl = (uint16_t)cn.id;
                if (cset(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cl, sizeof cl) &&
                    check_algo(c, a, nullptr, nullptr))
                    cls.push_back(cl);
            }
            const int cmax = std::min(std::max(b.custom_max, 0), kMaxCustom);
            for (uint16_t cl : cls) {
                for (int cust = 0; cust <= cmax && !cut; cust++) {
                    for (uint32_t swz = 0; swz <= (b.swz_support ? 1u : 0u) && !cut; swz++) {
                        for (int32_t split : kSplits) {
                            if (split > 1 && !b.splitk_support) break;
                            for (uint32_t red : {0u, 1u, 2u, 4u}) {
                                if ((split == 1) != (red == CUBLASLT_REDUCTION_SCHEME_NONE)) continue;
                                if (split > 1 && !(b.red_mask & red)) continue;
                                cublasLtMatmulAlgo_t a = b.algo;
                                const uint32_t cu = (uint32_t)cust;
                                if (!cset(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cl, sizeof cl) ||
                                    !cset(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &cu, sizeof cu) ||
                                    !cset(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz) ||
                                    !set_split(&a, split, red))
                                    continue;
                                add_cfg(a, bi, pending);
                            }
                        }
                        if (pending.size() >= (size_t)kQuickChunk) {
                            run_pending(pending);
                            if (now_s() > fine_deadline) cut = true;
                        }
                    }
                }
                if (cut) break;
            }
            if (cut) break;
            run_pending(pending);
            b.expanded = true;
            expanded++;
        }
        pending.clear();
        drain(c);
        gather();
        printf("  fine: %zu bases fully expanded (%zu started) of %zu; %ld configurations checked, %ld valid, %ld "
               "timed, %ld refused at launch  [%.1f s]\n",
               expanded, started, bases.size(), c.checked, c.valid, c.timed, c.launch_fail, now_s() - t0);
    }

    // 5. re-time: best 20 quick, best 10 admissible quick, all heuristic candidates; median of 9
    std::vector<Cfg *> sorted = exh;
    std::sort(sorted.begin(), sorted.end(), [](const Cfg *p, const Cfg *q) { return p->quick < q->quick; });
    std::vector<Cfg *> final_set;
    for (size_t i = 0; i < sorted.size() && (int)i < kRetimeTop; i++) final_set.push_back(sorted[i]);
    int nadm = 0;
    for (Cfg *p : sorted) {
        if (nadm >= kRetimeAdmissible) break;
        if (!inadmissible(*p).empty()) continue;
        nadm++;
        if (std::find(final_set.begin(), final_set.end(), p) == final_set.end()) final_set.push_back(p);
    }
    for (Cfg *p : heur) final_set.push_back(p);
    submit(c, final_set, kFinalReps, true);
    drain(c);

    std::vector<Cfg *> top;
    for (Cfg *p : final_set)
        if (p->heur < 0 && !p->failed && isfinite(p->med)) top.push_back(p);
    std::sort(top.begin(), top.end(), [](const Cfg *p, const Cfg *q) { return p->med < q->med; });
    Cfg *best_adm = nullptr;
    for (Cfg *p : top)
        if (inadmissible(*p).empty()) {
            best_adm = p;
            break;
        }
    Cfg *h_best = nullptr;
    if (h_top1 && (h_top1->failed || !isfinite(h_top1->med))) h_top1 = nullptr;
    for (Cfg *p : heur)
        if (!p->failed && isfinite(p->med) && (!h_best || p->med < h_best->med)) h_best = p;

    // 6. checks
    float *ref_d, *got_d;
    unsigned *cnt_d;
    CK(cudaMalloc(&ref_d, kSamples * sizeof(float)));
    CK(cudaMalloc(&got_d, kSamples * sizeof(float)));
    CK(cudaMalloc(&cnt_d, sizeof(unsigned)));
    std::vector<Cfg *> to_check;
    if (h_top1) to_check.push_back(h_top1);
    if (h_best) to_check.push_back(h_best);
    for (size_t i = 0; i < top.size() && (int)i < kPrintTop; i++) to_check.push_back(top[i]);
    if (best_adm) to_check.push_back(best_adm);
    bool all_ok = true;
    for (Cfg *p : to_check) {
        if (!p->checked) check_cfg(c, p, ref_d, got_d, cnt_d);
        all_ok = all_ok && check_ok(*p);
    }
    CK(cudaFree(ref_d));
    CK(cudaFree(got_d));
    CK(cudaFree(cnt_d));

    // report
    printf("  heuristic candidates (median of %d, flushed; h<rank>, * = the top-1 as returned):\n", kFinalReps);
    for (Cfg *p : heur) {
        if (p->failed || !isfinite(p->med)) {
            printf("  h%-5d refused at launch  ", p->heur);
            print_cfg_line(stdout, *p);
            printf("\n");
            continue;
        }
        char tag[16];
        snprintf(tag, sizeof tag, "h%d%s", p->heur, p == h_top1 ? "*" : "");
        print_row(tag, *p, wbytes);
    }
    printf("  exhaustive, best %d (median of %d, flushed; adm = usable by the library as it stands):\n", kPrintTop,
           kFinalReps);
    for (size_t i = 0; i < top.size() && (int)i < kPrintTop; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "#%zu", i + 1);
        print_row(tag, *top[i], wbytes);
    }
    if (best_adm) print_row("adm", *best_adm, wbytes);
    std::map<int, AlgoSum> per_id;
    for (const Base &b : bases) per_id[b.id].bases++;
    for (Cfg *p : exh) {
        AlgoSum &a = per_id[p->id];
        a.timed++;
        a.best = std::min(a.best, p->quick);
    }
    printf("  per algo id (bases, configurations timed, best quick time):");
    int col = 0;
    for (auto &kv : per_id) {
        if (col++ % 4 == 0) printf("\n   ");
        if (isfinite(kv.second.best))
            printf("  id %3d: %4d %6ld %8.2f us", kv.first, kv.second.bases, kv.second.timed, kv.second.best);
        else
            printf("  id %3d: %4d %6ld        - us", kv.first, kv.second.bases, kv.second.timed);
    }
    printf("\n");
    const Cfg *best = top.empty() ? nullptr : top[0];
    double gain = NAN, gain_adm = NAN;
    if (h_top1)
        printf("  heuristic top-1:              %8.2f us  %5.2f TB/s\n", h_top1->med, wbytes / h_top1->med * 1e-6);
    if (h_best)
        printf("  best heuristic candidate:     %8.2f us  %5.2f TB/s\n", h_best->med, wbytes / h_best->med * 1e-6);
    if (best && h_best) {
        gain = (h_best->med - best->med) / h_best->med * 100.0;
        printf("  best exhaustive:              %8.2f us  %5.2f TB/s  %+.1f %% time vs the best heuristic one%s\n",
               best->med, wbytes / best->med * 1e-6, -gain, gain >= 5.0 ? "  <-- >= 5 % faster" : "");
    }
    if (best_adm && h_best) {
        gain_adm = (h_best->med - best_adm->med) / h_best->med * 100.0;
        printf("  best exhaustive, admissible:  %8.2f us  %5.2f TB/s  %+.1f %% time vs the best heuristic one%s\n",
               best_adm->med, wbytes / best_adm->med * 1e-6, -gain_adm, gain_adm >= 5.0 ? "  <-- >= 5 % faster" : "");
    }
    printf("  result check (max |y - ref| / max |ref| over %d samples, tol %.0e, no NaN in y): %s\n", kSamples, kTol,
           all_ok ? "all ok" : "FAILED");
    printf("  [%.1f s]\n", now_s() - t0);

    // JSON
    appendf(json, "    {\"name\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, \"batch\": %d, \"weight_bytes\": %.0f,\n",
            s.name, s.g.M, s.g.N, s.g.K, s.g.batch, wbytes);
    appendf(json,
            "     \"counts\": {\"algo_ids\": %d, \"algo_ids_initialised\": %d, \"bases_tried\": %ld, "
            "\"bases_valid\": %zu, \"bases_coarse\": %zu, \"bases_expanded\": %zu, \"bases_cut_by_budget\": %s, ",
            n_ids, n_init, base_tried, bases.size(), coarse_bases, expanded, enum_cut ? "true" : "false");
    appendf(json,
            "\"configs_checked\": %ld, \"configs_valid\": %ld, \"configs_timed\": %ld, \"launch_refused\": %ld},\n",
            c.checked, c.valid, c.timed, c.launch_fail);
    appendf(json, "     \"heuristic\": [");
    for (size_t i = 0; i < heur.size(); i++) {
        appendf(json, "%s\n       {\"rank\": %d, \"config\": ", i ? "," : "", heur[i]->heur);
        json_cfg(json, *heur[i], wbytes);
        appendf(json, "}");
    }
    appendf(json, "],\n     \"heuristic_top1_us\": %s, \"best_heuristic_us\": %s,\n     \"best_heuristic\": ",
            num(h_top1 ? h_top1->med : NAN).c_str(), num(h_best ? h_best->med : NAN).c_str());
    if (h_best)
        json_cfg(json, *h_best, wbytes);
    else
        appendf(json, "null");
    appendf(json, ",\n     \"exhaustive_top\": [");
    for (size_t i = 0; i < top.size() && (int)i < kPrintTop; i++) {
        appendf(json, "%s\n       ", i ? "," : "");
        json_cfg(json, *top[i], wbytes);
    }
    appendf(json, "],\n     \"best_admissible\": ");
    if (best_adm)
        json_cfg(json, *best_adm, wbytes);
    else
        appendf(json, "null");
    appendf(json, ",\n     \"per_algo_id\": [");
    col = 0;
    for (auto &kv : per_id) {
        appendf(json, "%s{\"id\": %d, \"bases\": %d, \"timed\": %ld, \"best_quick_us\": %s}", col++ ? ", " : "",
                kv.first, kv.second.bases, kv.second.timed,
                num(kv.second.best).c_str());
    }
    appendf(json, "],\n     \"gain_vs_best_heuristic_pct\": %s, \"gain_admissible_vs_best_heuristic_pct\": %s, ",
            num(gain, "%.2f").c_str(), num(gain_adm, "%.2f").c_str());
    appendf(json, "\"checks_ok\": %s, \"seconds\": %.1f}", all_ok ? "true" : "false", now_s() - t0);

    LT(cublasLtMatrixLayoutDestroy(c.a));
    LT(cublasLtMatrixLayoutDestroy(c.b));
    LT(cublasLtMatrixLayoutDestroy(c.d));
    CK(cudaFree(c.x));
    CK(cudaFree(c.w));
    CK(cudaFree(c.y));
    c.x = c.w = c.y = nullptr;
    return all_ok;
}

static void usage() {
    fprintf(stderr, "usage: lt_search [down|up|out|w_uv ...] [--budget S] [--json PATH] [--warm-act]\n");
}

int main(int argc, char **argv) {
    double budget = 50.0;
    const char *json_path = nullptr;
    bool warm_act = false;
    std::vector<int> shapes;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--budget") && i + 1 < argc) {
            budget = atof(argv[++i]);
            if (!(budget > 0)) {
                fprintf(stderr, "lt_search: --budget wants seconds > 0\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            json_path = argv[++i];
        } else if (!strcmp(argv[i], "--warm-act")) {
            warm_act = true;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage();
            return 0;
        } else {
            int k = -1;
            for (int j = 0; j < kNShapes; j++)
                if (!strcmp(argv[i], kShapes[j].name)) k = j;
            if (k < 0) {
                fprintf(stderr, "lt_search: unknown argument '%s'\n", argv[i]);
                usage();
                return 2;
            }
            shapes.push_back(k);
        }
    }
    if (shapes.empty())
        for (int j = 0; j < kNShapes; j++) shapes.push_back(j);

    int ndev = 0;
    const cudaError_t de = cudaGetDeviceCount(&ndev);
    if (de != cudaSuccess || ndev == 0) {
        fprintf(stderr, "lt_search: no CUDA device (%s)\n", de != cudaSuccess ? cudaGetErrorString(de) : "none found");
        return 1;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaSetDevice(0));
    int clock_khz = 0, mem_khz = 0;
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    CK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0));

    Ctx c;
    c.sms = prop.multiProcessorCount;
    c.warm_act = warm_act;
    CK(cudaStreamCreateWithFlags(&c.st, cudaStreamNonBlocking));
    const size_t flush_bytes = ((size_t)prop.l2CacheSize * 3 + 15) / 16 * 16;
    c.flush16 = flush_bytes / 16;
    CK(cudaMalloc(&c.flush, flush_bytes));
    CK(cudaMemset(c.flush, 0x5a, flush_bytes));
    CK(cudaMalloc(&c.sink, sizeof(unsigned)));
    CK(cudaMalloc(&c.ws, kWorkspace));
    CK(cudaHostAlloc(&c.flag_h, sizeof(unsigned), cudaHostAllocMapped));
    *c.flag_h = 0;
    CK(cudaHostGetDevicePointer((void **)&c.flag_d, c.flag_h, 0));
    c.ev.resize(2 * kEvHalf);
    for (cudaEvent_t &e : c.ev) CK(cudaEventCreate(&e));

    // copy ceiling: device-to-device copy of 256 MiB, median of 5, (read + write) bytes / time
    double copy_tbs = 0;
    {
        const size_t n = (size_t)256 << 20;
        void *src, *dst;
        CK(cudaMalloc(&src, n));
        CK(cudaMalloc(&dst, n));
        CK(cudaMemset(src, 1, n));
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        CK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, c.st));
        std::vector<float> t;
        for (int i = 0; i < 5; i++) {
            CK(cudaEventRecord(e0, c.st));
            CK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, c.st));
            CK(cudaEventRecord(e1, c.st));
            CK(cudaEventSynchronize(e1));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            t.push_back(ms * 1000.0f);
        }
        copy_tbs = 2.0 * n / median_of(t) * 1e-6;
        CK(cudaEventDestroy(e0));
        CK(cudaEventDestroy(e1));
        CK(cudaFree(src));
        CK(cudaFree(dst));
    }
    // SM clock as it runs: clock64 cycles over globaltimer nanoseconds, 20 ms
    double sm_mhz = 0;
    {
        unsigned long long *d, h[2];
        CK(cudaMalloc(&d, sizeof h));
        clock_kernel<<<1, 32, 0, c.st>>>(d, 20000000ull);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, c.st));
        CK(cudaStreamSynchronize(c.st));
        sm_mhz = h[1] ? (double)h[0] / (double)h[1] * 1e3 : 0;
        CK(cudaFree(d));
    }

    LT(cublasLtCreate(&c.lt));
    // the library's descriptor and preference (cublaslt_loader.cu, lt_context_create), with this probe's workspace
    LT(cublasLtMatmulDescCreate(&c.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t op_w = CUBLAS_OP_T, op_x = CUBLAS_OP_N;
    LT(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_w, sizeof op_w));
    LT(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_x, sizeof op_x));
    LT(cublasLtMatmulPreferenceCreate(&c.pref));
    const uint64_t ws = kWorkspace;
    const uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, align = kLibAlign;
    LT(cublasLtMatmulPreferenceSetAttribute(c.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    LT(cublasLtMatmulPreferenceSetAttribute(c.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions,
                                            sizeof reductions));
    LT(cublasLtMatmulPreferenceSetAttribute(c.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align, sizeof align));
    LT(cublasLtMatmulPreferenceSetAttribute(c.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align, sizeof align));
    LT(cublasLtMatmulPreferenceSetAttribute(c.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align, sizeof align));
    LT(cublasLtMatmulPreferenceSetAttribute(c.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align, sizeof align));

    const size_t ltv = cublasLtGetVersion();
    printf("lt_search: %s (sm_%d%d), %d SMs, L2 %d MB, SM clock %.0f MHz max / %.0f MHz measured, memory %.0f MHz\n",
           prop.name, prop.major, prop.minor, c.sms, prop.l2CacheSize >> 20, clock_khz / 1e3, sm_mhz, mem_khz / 1e3);
    printf("  copy ceiling (D2D 256 MiB, read + write): %.2f TB/s; cuBLASLt %zu; budget %.0f s per shape; "
           "read-only flush of %zu MB before each timed launch%s\n",
           copy_tbs, ltv, budget, flush_bytes >> 20, warm_act ? ", then the activations re-read" : "");
    if (prop.major != 9) printf("  note: not an sm_90 device; cluster shapes will not apply\n");

    std::string json;
    appendf(json, "{\"device\": \"%s\", \"sm\": %d, \"sms\": %d, \"l2_bytes\": %d, \"sm_clock_mhz_max\": %.0f, ",
            prop.name, prop.major * 10 + prop.minor, c.sms, prop.l2CacheSize, clock_khz / 1e3);
    appendf(json, "\"sm_clock_mhz_measured\": %.0f, \"copy_ceiling_tbs\": %.4f, \"cublaslt_version\": %zu, ", sm_mhz,
            copy_tbs, ltv);
    appendf(json,
            "\"budget_s\": %.1f, \"flush_bytes\": %zu, \"warm_act\": %s, \"workspace_bytes\": %zu,\n \"shapes\": [\n",
            budget, flush_bytes, warm_act ? "true" : "false", kWorkspace);
    bool ok = true;
    for (size_t i = 0; i < shapes.size(); i++) {
        if (i) json += ",\n";
        ok = run_shape(c, kShapes[shapes[i]], budget, json) && ok;
    }
    json += "\n ]}\n";
    if (json_path) {
        FILE *f = fopen(json_path, "w");
        if (!f || fwrite(json.data(), 1, json.size(), f) != json.size() || fclose(f) != 0) {
            fprintf(stderr, "lt_search: cannot write %s\n", json_path);
            return 1;
        }
        printf("\nwrote %s\n", json_path);
    }

    LT(cublasLtMatmulPreferenceDestroy(c.pref));
    LT(cublasLtMatmulDescDestroy(c.desc));
    LT(cublasLtDestroy(c.lt));
    for (cudaEvent_t e : c.ev) CK(cudaEventDestroy(e));
    CK(cudaFreeHost(c.flag_h));
    CK(cudaFree(c.ws));
    CK(cudaFree(c.sink));
    CK(cudaFree(c.flush));
    CK(cudaStreamDestroy(c.st));
    if (!ok) {
        fprintf(stderr, "lt_search: a result check FAILED (see above)\n");
        return 3;
    }
    return 0;
}
