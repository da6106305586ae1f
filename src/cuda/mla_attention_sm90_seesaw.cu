// MLA decode: attention over the latent cache on Hopper (sm_90a), v3: "seesaw" warpgroups fed by TMA.
//
// What: the same function, schedule, partial format and combine as the other attention kernels (mla_attention.cu,
// mla_attention_sm90.cu; shared/spec/mla-decode.md):
//   s[h][t] = bf16(bf16(q_lat[h]·c[t] + q_pe[h]·k_pe[t]) · scale),  p = softmax_t(s),  o_lat[h] = Σ_t bf16(p)·c[t] / l,
// per item (sequence, split, 64 heads); persistent: one CTA per SM takes its items one after the other.
// Why a third kernel: v2.1 (mla_attention_sm90.cu) is issue/latency bound (ncu: no eligible warp 52% of cycles): both
// warpgroups compute S of the same tile at m64n32 (smem-bound: 3 KB of operands per 64 KFLOP), then both wait on the
// same softmax, and every thread spends ~20 instructions a tile on cp.async.
// The idea (FlashMLA's published schedule, our own code and our own hand-off): tiles go in pairs (tile 2i in buffer
// 0, 2i+1 in buffer 1). Warpgroup 0 owns S of buffer 0 and O_L (latent columns 0-255); warpgroup 1 owns S of buffer 1
// and O_R (256-511). Per pair, with M the running row max both agree on (natural units):
//   both: S_w = Q·K_wᵀ (m64n64, 36 wgmma each, side by side) → publishes its row max mx_w (of the scores as the
//         reference rounds them) → rounds the scores → waits for the other's max → M' = max(M, mx_0, mx_1) (the same
//         floats: the same M' on both sides)
//   WG0: O_L·= e^(M−M'); P0 = e^(S0 − M') in bf16, stored and multiplied in two halves of 32 tokens (O_L += P0·V0_L:
//        the first half's k-steps run while the second is exponentiated) → publishes P0 → waits for P1 →
//        O_L += P1·V1_L.
//   WG1: the same with S1, P1, O_R += P1·V1_R → publishes P1 → waits for P0 → O_R += P0·V0_R.
//   Row sums: each warpgroup the fp32 sums of the P it computed (before rounding, as the reference's softmax sums),
//   rescaled with O; added across the warpgroups at the end.
// Why this hand-off (timeline of block 0, H100, 6144; bench/results/2026-11-24-h100-6795692/dev): the first version
//   made WG1 wait for WG0's max before its softmax and WG0 re-round P0 for WG1 (P0' = P0·e^(m_a − m_b)) after WG1's;
//   the two softmaxes ran one after the other with the tensor cores idle (~1,300 + ~800 cycles a pair).
// Copies: TMA, one 64 × 64 box (8 KB, 128-byte swizzle: the layout wgmma reads) per chunk of 64 columns, one mbarrier
//   per (buffer, chunk). A chunk is reloaded as soon as its last reader is done, by that reader's warpgroup:
//     buffer 0 chunks 0-3 after WG0's P0·V0_L, chunks 4-8 (with P0) after WG1's P0·V0_R;
//     buffer 1 chunks 4-8 after WG1's P1·V1_R, chunks 0-3 (and P1) after WG0's P1·V1_L.
//   A copy takes ~2,000 cycles to land (timeline), a pair ~7,500: each warpgroup waits for its P·V at the end of its
//   pair rather than behind its next S, so that the copies start as early as possible.
//   WG0 multiplies the latent chunks of its S in the order 0..7 and WG1 4..7, 0..3 (each starts on the chunks released
//   first), then the k_pe chunk 8 (see the rope below). The map covers rows 0..max_cache_len of every sequence (they
//   exist: max_cache_len < capacity) and zero-fills beyond; rows ≥ T of a sequence's last tile hold other data (NaN in
//   the tests) and 0·NaN = NaN in P·V, so the owner warpgroup zeroes their latent part after its S (the scores are
//   masked anyway).
// Persistent (2026-11-24): a grid of one CTA per SM, each taking items c, c + grid, ... (the two head groups of a
//   sequence side by side: they share its tiles in L2) as one stream of tiles: a released buffer is refilled with the
//   item's tile two further on or else the next item's first tiles, so an item's start waits for nothing the previous
//   item could hide. Alone this gained little (512: −1.4 µs): the item timeline (globaltimer per CTA, dev builds) showed
//   where an item's end went instead, and the two changes below took it from ~9 to ~4.6 µs an item:
// The tail: every reference length attends 64k + 1 tokens, so an item's last tile held one token and cost a pair
//   (~8,600 cycles: an S of 36 wgmma, a softmax, two P·V). A last tile of ≤ kTailMax tokens alone in its pair goes
//   through the CUDA cores (tail_scores, tail_update: ~2 µs, mostly the scores' shared-memory loads; the scores now
//   go through one warpgroup's tensor cores, m64n8).
// The output: stored from the registers, o_lat took ~5 µs an item (8 µs with 16-byte stores after a quad transpose);
//   it is staged in the Q region instead (free once the item's S are done) and written by TMA stores; the next item's
//   Q is copied in once they have read the region.
// Shared memory (1024-byte aligned; every operand chunk [64 rows][128 B], unit u of row r at u ^ (r % 8)):
//   Q [64][576] 72 KB (and the output's staging) | KV [2][64][576] 144 KB | P1 [64][64] 8 KB | 18 + 6 + 1 mbarriers
//   (copies, hand-offs, Q) | the row maxima of S0 and S1, row sums. The tail's scores live in buffer 0's rows 32-47.
//   P0 lives in buffer 0's k_pe chunk (8), free once S0 has read it.
// Keys' rope (reference convention): the S owner rotates its tile's k_pe chunk in smem right before the chunk's 4
// wgmma, the last of its S (2 unit pairs per thread). The rotation costs ~1,000 cycles a pair on the critical path
// (its shared-memory loads wait behind the wgmma's operand reads); its cos/sin are loaded into registers in the
// previous pair, after the warpgroup's last wgmma (a wgmma issues only once the warp's pending loads are complete).
#include "cuda/mla_attention.cuh"
#include "cuda/mla_attention_common.cuh"
#include "cuda/mla_attention_schedule.cuh"
#include "cuda/ptx.cuh"
#include "cuda/smem_optin.cuh"
#include "cuda/tma.cuh"

#include <cstdlib>
#include <mutex>

namespace latte {
namespace {

using namespace attention_detail;

constexpr int kHeads = 64;                        // heads per block: the wgmma M
constexpr int kThreads = 256;                     // 2 warpgroups
constexpr int kTile = 64;                         // tokens per KV tile
constexpr int kChunks = kMlaRow / 64;             // 9 chunks of 64 bf16 per row
constexpr uint32_t kChunkBytes = 64 * 128;
constexpr uint32_t kTileBytes = kChunks * kChunkBytes;  // 72 KB
constexpr uint32_t kP1Off = 3 * kTileBytes;
constexpr uint32_t kBarOff = kP1Off + kChunkBytes;      // mbarriers full[buffer][chunk], then the 4 hand-offs
constexpr uint32_t kStatOff = kBarOff + 256;
// the row maxima of S0 and of S1, [2][64] each (by pair parity), row_sum[2][64]
constexpr uint32_t kStatBytes = 6 * kHeads * sizeof(float);
constexpr size_t kSmemBytes = kStatOff + kStatBytes + 1024;  // + slack to align the base to 1024 bytes
// The balanced schedule (MlaAttentionParams::balance, mla_attention_schedule.cuh): this CTA's items, one per round, its
// row of the list copied into the mbarriers' slot after the 25 barriers (no more shared memory than before).
constexpr int kListMax = kMlaScheduleRounds;
static_assert(kHeads == kMlaScheduleGroupHeads, "the list's items are the kernel's");
constexpr uint32_t kListOff = kBarOff + (2 * kChunks + 7) * 8;
static_assert(kListOff + kListMax * sizeof(int) <= kStatOff, "the list fits the mbarriers' slot");
static_assert((2 * kChunks + 7) * 8 <= 256, "mbarriers fit their slot");
// An item's last tile with at most this many tokens, alone in its pair (an odd number of tiles), goes through the CUDA
// cores instead of the tensor cores: every reference length attends 64k + 1 tokens, and a pair of one token cost
// nearly a whole pair (~8,600 cycles, H100 timeline at 512: an S of 36 wgmma, a softmax, two P·V), against ~1,000.
[[maybe_unused]] constexpr int kTailMax = 4;
// A whole sequence of at most this many tokens (one split, one tile) goes through the tail as well: there every score is
// known before P is rounded, so P is rounded as the reference rounds it (tail_update's `whole`). Up to 4 tokens since
// 2026-11-25; 5-8 since 2026-12-07, after the oracle found one element of a 6-token sequence outside the tolerance under
// the pair's flash rounding (NOTES, "Short sequences' P rounded as the reference"). 8: the tail's m64n8 scores, its 4n
// rotating threads of one warpgroup and its s_tail rows (32 + 2n of buffer 0's chunk 0) all hold up to 8 tokens.
[[maybe_unused]] constexpr int kTailWholeMax = 8;
static_assert(kTailMax <= kTailWholeMax && kTailWholeMax <= 8, "the tail's scores are one m64n8 wgmma");
static_assert(kSmemBytes <= 232448, "fits the 227 KB a Hopper block may opt into");

#if LATTE_PTX_SM90A  // the device-only part (the sm_80 image and the host pass do not see it)
constexpr uint32_t kQOff = 0;
constexpr uint32_t kKvOff = kTileBytes;  // [2] tiles
// Hand-offs between the warpgroups, one phase a pair each: mbarriers after the 18 copy barriers, all 128 threads of
// the producer warpgroup arrive (release), the consumer waits on the pair's parity (acquire). Each has at most one
// phase outstanding (the next signal of a hand-off always waits on a later hand-off the other way). Not a named
// barrier's bar.arrive / bar.sync (equivalent on the hardware, as fast: 6144, same run 502 vs 508 us): racecheck does
// not see that order and reports hazards on every hand-off (bench/probes/racecheck_handoff.cu shows it in isolation;
// it also reports one lane a warp arriving after __syncwarp, so all threads arrive).
constexpr int kHandMa = 0;  // WG0 → WG1: the row max of S0 published
constexpr int kHandMb = 1;  // WG1 → WG0: the row max of S1 published
constexpr int kHandP0 = 2;  // WG0 → WG1: P0 published, buffer 0's rows >= T zeroed
constexpr int kHandP1 = 3;  // WG1 → WG0: P1 published, buffer 1's rows >= T zeroed
constexpr int kHandEnd = 4;  // both ways, once (256 arrivals): the row sums of both warpgroups published. Not
                             // __syncthreads: racecheck reports the exchange across it, apparently because the
                             // warpgroups passed their own named barriers a different number of times (the probe's
                             // mode 4 vs 5)
constexpr int kHandTail = 5;  // both ways (256 arrivals): the tail's scores published (see the tail)
constexpr int kBarOut = 1;  // named barrier of all 256 threads: the item's bf16 output staged in the Q region
constexpr int kBarWg = 4;   // + warpgroup: the named barrier of the 128 threads of one warpgroup

__device__ __forceinline__ uint32_t unit_offset(int r, int c, int u) {
    return (uint32_t)c * kChunkBytes + (uint32_t)r * 128u + ((uint32_t)(u ^ (r & 7)) << 4);
}
#endif

// kExp: timing experiments (built only with -DLATTE_DEV_EXPERIMENTS, chosen by LATTE_MLA_WGMMA_EXPERIMENT). Leaving one
// stage out (wrong results): 1 no KV copies after the first pair (the barriers complete with 0 bytes), 2 no S wgmma,
// 3 no P·V wgmma, 4 no key rotation. Bits that keep the results: 8 a timeline of block 0 (clock64 at each step of
// pairs 8-15, both warpgroups: mla_attention_seesaw_trace), 16 each copy also prefetches the same chunks of the next
// pair's tile into L2, 32 WG1 starts its S after WG0's S is done (its row max published) instead of beside it; 64 (with
// 8: 72) leaves the bf16 output stores out (wrong results); 128 leaves a split's or piece's fp32 partial stores out
// (wrong results).
[[maybe_unused]] constexpr int kTraceCtas = 512, kTraceItems = 3;  // the item timeline's size (dev builds, experiment bit 8)
#if defined(LATTE_DEV_EXPERIMENTS)
constexpr int kTracePairs = 8, kTraceSlots = 32;
__device__ unsigned long long g_seesaw_trace[2][kTracePairs][kTraceSlots];
__device__ int g_trace_item = 0, g_trace_first_pair = 8;  // which of block 0's items, from which pair
__device__ long long g_schedule_clocks[8];  // the one-CTA list writer's steps (MlaScheduleArgs::clocks)
// and, for every CTA (up to kTraceCtas), globaltimer (ns) at its entry, at each of its first kTraceItems items' Q
// ready, pairs done (WG0) and output written, and at its exit
__device__ unsigned long long g_seesaw_items[kTraceCtas][2 + 3 * kTraceItems];
// and the end of each CTA's items 0 and 1 in steps: pairs done, tail tile landed, tail scores exchanged, tail folded in,
// row sums exchanged, output written (thread 0)
__device__ unsigned long long g_seesaw_end[kTraceCtas][2][6];
// and the start (thread 0): the items that read nothing cleared, the list read, the first item known (its length
// read), the mbarriers set up and the first copies issued
__device__ unsigned long long g_seesaw_start[kTraceCtas][4];
__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}
#endif
#if LATTE_PTX_SM90A
// One work item: (sequence b, split, group of 64 heads), numbered as the non-persistent grid numbered its blocks
// (group fastest, then split, then sequence: the two head groups of a sequence run side by side and share its tiles
// through L2); units past batch · n_splits are the pieces of long sequences split at run time (one split only; the
// list's writer made them: mla_attention_schedule.cuh), split = −1 − the piece's slot. real: a valid length and a
// non-empty split (else the item only writes its NaN rows or its −inf LSE).
struct SeesawItem {
    int b, split, head0, heads, T, tok_begin, n_tiles;
    int tail;  // tokens of the last tile when it goes through the CUDA cores (see the tail below), else 0
    bool real;
};
__device__ __forceinline__ SeesawItem seesaw_item(const MlaAttentionParams &p, int n_groups, int item) {
    SeesawItem it;
    const int group = item % n_groups, unit = item / n_groups, n_units = p.batch * p.n_splits;
    it.head0 = group * kHeads;
    it.heads = min(kHeads, p.n_heads - it.head0);
    int tok_end;
    if (unit < n_units) {
        it.split = unit % p.n_splits;
        it.b = unit / p.n_splits;
        const int len = p.cache_lens[it.b];
        it.T = len + 1;
        it.tok_begin = it.split * p.split_len;
        tok_end = min(it.T, it.tok_begin + p.split_len);
        it.real = length_is_valid(len, p.max_cache_len) && it.tok_begin < tok_end;
    } else {  // a piece: a valid length, at least one token
        const int4 piece = *reinterpret_cast<const int4 *>(mla_schedule_pieces(p.schedule) + (unit - n_units));
        it.split = -1 - (unit - n_units);
        it.b = piece.x;
        it.T = p.cache_lens[it.b] + 1;
        it.tok_begin = piece.y;
        tok_end = piece.z;
        it.real = true;
    }
    it.n_tiles = it.real ? (tok_end - it.tok_begin + kTile - 1) / kTile : 0;
    const int last_tokens = tok_end - it.tok_begin - kTile * (it.n_tiles - 1);
    // (a whole sequence in one tile: the tail takes up to kTailWholeMax tokens; stage_out is n_splits == 1)
    const int tail_max = it.n_tiles == 1 && p.n_splits == 1 && unit < n_units ? kTailWholeMax : kTailMax;
    it.tail = it.real && (it.n_tiles & 1) && last_tokens <= tail_max ? last_tokens : 0;
    return it;
}

// A piece's end (every thread calls it, after writing its rows of the piece's partial and LSE): the last of the
// (sequence, head group)'s pieces to finish combines them into o_lat, as the combine kernel does (mla_attention.cu):
// o = bf16(Σ_j w_j o_j), w_j = e^(lse_j − max) / Σ_j e^(lse_j − max). Who is last: a counter per (sequence, head group),
// zeroed by the list's writer; each piece's threads fence their rows before the count (the last CTA then reads every
// piece's rows from L2). Nothing goes through shared memory: the "last" bit is broadcast by the barrier's reduction
// and each head's weights are written over its pieces' LSE (dead once read; one thread a head reads and writes them)
// for the others to read back from L2 after the barrier. (Through shared memory, racecheck reported both exchanges:
// its known false report once the warpgroups have passed their own named barriers unequal numbers of times,
// bench/probes/racecheck_handoff.cu modes 4-7; the kernel has no spare shared memory for an mbarrier.) Inline: out of
// line (an ABI call in the item loop) ptxas spilled 212 bytes around the call.
// ~k × 128 KB read from L2 by one SM (a few µs for k ~ 6), once per long sequence.
__device__ __forceinline__ void seesaw_piece_done(const MlaAttentionParams &p, int b, int head0, int heads, int slot,
                                               int n_groups) {
    const int tid = threadIdx.x;
    __threadfence();  // this thread's rows of the partial, before the count that lets another CTA read them
    ptx::named_bar_sync(kBarOut, kThreads);
    bool last_count = false;
    if (tid == 0) {
        const int slots = mla_schedule_pieces(p.schedule)[slot].slots;
        int *const counter = mla_schedule_counters(p.schedule) + b * n_groups + head0 / kHeads;
        last_count = atomicAdd(counter, 1) == mla_piece_count(slots) - 1;
    }
    if (ptx::named_bar_sync_or(kBarOut, kThreads, last_count)) {
        // the last: every piece's rows are written (their fences came before their counts)
        __threadfence();
        const int slots = mla_schedule_pieces(p.schedule)[slot].slots;
        const int slot0 = mla_piece_slot0(slots), k = mla_piece_count(slots);
        // w[j][h] over lse[slot0 + j][head0 + h]
        float *const w = p.lse_partial + (size_t)slot0 * p.n_heads + head0;
        if (tid < heads) {
            float *const lse = w + tid;
            float mx = -INFINITY;
            for (int j = 0; j < k; ++j) mx = fmaxf(mx, __ldcg(lse + (size_t)j * p.n_heads));
            float den = 0.f;
            for (int j = 0; j < k; ++j) den += expf(__ldcg(lse + (size_t)j * p.n_heads) - mx);
            const float inv_den = 1.f / den;
            for (int j = 0; j < k; ++j) {
                const float wj = expf(__ldcg(lse + (size_t)j * p.n_heads) - mx) * inv_den;
                __stcg(lse + (size_t)j * p.n_heads, wj);
            }
        }
        ptx::named_bar_sync(kBarOut, kThreads);  // the weights written, before any thread reads them
        // 8 float4 of a row each pass (a thread: columns 4·c4 of 8 rows 8 apart), the pieces 2 at a time: 16 loads in
        // flight a thread, enough to keep one SM's L2 requests busy
        constexpr int kRowsPerPass = 8;
        const int c4 = tid % 128;
        for (int h_base = tid / 128; h_base < heads; h_base += 2 * kRowsPerPass) {
            float4 acc[kRowsPerPass];
#pragma unroll
            for (int i = 0; i < kRowsPerPass; ++i) acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
            for (int j = 0; j < k; ++j) {
                const float4 *src = reinterpret_cast<const float4 *>(p.o_partial) +
                                    ((size_t)(slot0 + j) * p.n_heads + head0) * (kMlaLatent / 4) + c4;
                float4 v[kRowsPerPass];
                float wv[kRowsPerPass];
#pragma unroll
                for (int i = 0; i < kRowsPerPass; ++i) {
                    const int h = h_base + 2 * i;
                    v[i] = h < heads ? __ldcg(src + (size_t)h * (kMlaLatent / 4)) : make_float4(0.f, 0.f, 0.f, 0.f);
                    wv[i] = h < heads ? __ldcg(w + (size_t)j * p.n_heads + h) : 0.f;
                }
#pragma unroll
                for (int i = 0; i < kRowsPerPass; ++i) {
                    const float wj = wv[i];
                    acc[i].x = fmaf(wj, v[i].x, acc[i].x), acc[i].y = fmaf(wj, v[i].y, acc[i].y);
                    acc[i].z = fmaf(wj, v[i].z, acc[i].z), acc[i].w = fmaf(wj, v[i].w, acc[i].w);
                }
            }
#pragma unroll
            for (int i = 0; i < kRowsPerPass; ++i) {
                const int h = h_base + 2 * i;
                if (h >= heads) continue;
                const __nv_bfloat162 lo = __floats2bfloat162_rn(acc[i].x, acc[i].y);
                const __nv_bfloat162 hi = __floats2bfloat162_rn(acc[i].z, acc[i].w);
                uint2 packed;
                packed.x = *reinterpret_cast<const uint32_t *>(&lo);
                packed.y = *reinterpret_cast<const uint32_t *>(&hi);
                reinterpret_cast<uint2 *>(p.o_lat + ((size_t)b * p.n_heads + head0 + h) * kMlaLatent)[c4] = packed;
            }
        }
    }
    ptx::named_bar_sync(kBarOut, kThreads);  // (the next item starts together: its Q lands in the Q region by TMA)
}

#endif

template <int kExp>
__global__ void __launch_bounds__(kThreads, 1)
    mla_attention_seesaw_kernel(const __grid_constant__ CUtensorMap kv_map, const __grid_constant__ CUtensorMap q_map,
                                const __grid_constant__ CUtensorMap o_map, const MlaAttentionParams p) {
#if LATTE_PTX_SM90A
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw_u32 = ptx::smem_u32(smem_raw);
    unsigned char *smem = smem_raw + (((raw_u32 + 1023u) & ~1023u) - raw_u32);
    const uint32_t base = ptx::smem_u32(smem);
    // the row maxima of S0 (s_ma) and S1 (s_mb) in two slots by pair parity: a pair's write never lands in the slot
    // the other warpgroup read in the previous pair (that read is ordered before it by the hand-offs too; two slots
    // keep it so if they change)
    float *s_ma = reinterpret_cast<float *>(smem + kStatOff);  // [2][64]
    float *s_mb = s_ma + 2 * kHeads;                            // [2][64]
    float *row_sum = s_mb + 2 * kHeads;                         // [2][64]

    const int n_groups = (p.n_heads + kHeads - 1) / kHeads;
    const int n_items = n_groups * p.n_splits * p.batch;
    const int tid = threadIdx.x;
    // kExp & 8: globaltimer at event `slot` of this CTA (thread 0)
    const auto stamp = [&](int slot) {
#if defined(LATTE_DEV_EXPERIMENTS)
        if ((kExp & 8) && tid == 0 && blockIdx.x < kTraceCtas) g_seesaw_items[blockIdx.x][slot] = global_ns();
#else
        (void)slot;
#endif
    };
    stamp(0);
    const auto stamp_end = [&](int slot, uint32_t item_no) {
#if defined(LATTE_DEV_EXPERIMENTS)
        if ((kExp & 8) && tid == 0 && item_no < 2 && blockIdx.x < kTraceCtas) g_seesaw_end[blockIdx.x][item_no][slot] = global_ns();
#else
        (void)slot, (void)item_no;
#endif
    };

    const auto stamp_start = [&](int slot) {
#if defined(LATTE_DEV_EXPERIMENTS)
        if ((kExp & 8) && tid == 0 && blockIdx.x < kTraceCtas) g_seesaw_start[blockIdx.x][slot] = global_ns();
#else
        (void)slot;
#endif
    };
    // Items that read nothing, first: NaN rows for an invalid length (the combine writes them if it runs), −inf LSE
    // for an empty split (the combine never reads its o_partial)
    for (int item = blockIdx.x; item < n_items; item += gridDim.x) {
        const SeesawItem it = seesaw_item(p, n_groups, item);
        if (it.real) continue;
        if (!length_is_valid(it.T - 1, p.max_cache_len)) {
            if (p.n_splits == 1) {
                const uint4 nan8 = make_uint4(0x7fc07fc0u, 0x7fc07fc0u, 0x7fc07fc0u, 0x7fc07fc0u);  // 8 bf16 NaN
                uint4 *out = reinterpret_cast<uint4 *>(p.o_lat + ((size_t)it.b * p.n_heads + it.head0) * kMlaLatent);
                for (int i = tid; i < it.heads * kMlaLatent / 8; i += kThreads) out[i] = nan8;
            }
        } else if (tid < it.heads) {
            p.lse_partial[((size_t)it.split * p.batch + it.b) * p.n_heads + it.head0 + tid] = -INFINITY;
        }
    }
    // This CTA's items, in the order it takes them: one per round k of grid items. Balanced (p.balance): its row of
    // the list written before this kernel (mla_attention_schedule.cuh: longest first, in a snake over the CTAs). Why:
    // with round-robin (CTA c takes items c, c + grid, ...) and lengths uniform in [1, 8K], some CTA gets two long
    // items and the grid takes ~2× the average CTA's work; the snake's rounds pair long with short. (The launcher
    // clears p.balance where there is no list.)
    const int cta = (int)blockIdx.x;
    // the list in shared memory: nothing of this stays in registers (the pair loop is at the register limit). All
    // kListMax rounds (−1 past the last): with pieces the list has more items than n_items (the launcher sets balance
    // only where n_items fits the list)
    int *const s_list = reinterpret_cast<int *>(smem + kListOff);
    stamp_start(0);
    if (p.balance) {
        if (tid < kListMax) s_list[tid] = p.schedule[cta * kMlaScheduleRounds + tid];
        __syncthreads();
    }
    stamp_start(1);
    // item of round k for this CTA, or −1 where the round has none for it
    const auto list_item = [&](int k) -> int {
        if (p.balance) return s_list[k];
        const int item = (int)blockIdx.x + k * (int)gridDim.x;
        return item < n_items ? item : -1;
    };
    // the next round after `k` whose item reads the cache (−1: none)
    const auto next_real = [&](int k) {
        const int n_rounds = p.balance ? kListMax : (int)((n_items + gridDim.x - 1) / gridDim.x);
        for (int j = k + 1; j < n_rounds; ++j) {
            const int i = list_item(j);
            if (i >= 0 && seesaw_item(p, n_groups, i).real) return j;
        }
        return -1;
    };
    int round = next_real(-1);
    if (round < 0) return;
    SeesawItem cur = seesaw_item(p, n_groups, list_item(round));
    stamp_start(2);

    const int warp = tid / 32, lane = tid % 32;
    // the warpgroup index through a shuffle: ptxas then knows it is warp-uniform, and the wgmma in the per-warpgroup
    // branches stay asynchronous (otherwise it serializes them: "wgmma ... serialized ... in divergent path")
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0), wtid = tid % 128;
    const int g = lane / 4, t4 = lane % 4;
    const int r0 = 16 * (warp % 4) + g, r1 = r0 + 8;  // the two head rows of this thread's accumulator fragments

    const uint32_t bar0 = base + kBarOff;
    auto full_bar = [&](int buf, int c) { return bar0 + 8u * (uint32_t)(buf * kChunks + c); };
    auto tile_base = [&](int buf) { return base + kKvOff + (uint32_t)buf * kTileBytes; };
    // chunks [c_begin, c_end) of tile `tile` of item `it` into buffer `buf` (one thread), in the order the S reads them
    auto issue_copies = [&](const SeesawItem &it, int tile, int buf, int c_begin, int c_end) {
        for (int c = c_begin; c < c_end; ++c) {
            if (kExp == 1 && tile > 1) {
                ptx::mbarrier_arrive_expect_tx(full_bar(buf, c), 0);
                continue;
            }
            ptx::mbarrier_arrive_expect_tx(full_bar(buf, c), kChunkBytes);
            // evict-first: the cache streams through L2 once per step (the other head group's CTA, a few µs later, is
            // its only re-reader); Q, the output and the layer's other scratch then keep their lines. H100, layer:
            // −3 to −8 µs at every length; attention alone −4 µs at 512 (NOTES, "Dead scratch and the cache's L2 policy")
            ptx::tma_load_3d_hint(tile_base(buf) + (uint32_t)c * kChunkBytes, &kv_map, 64 * c, it.tok_begin + tile * kTile,
                                  it.b, full_bar(buf, c), ptx::l2_policy_evict_first());
            if ((kExp & 16) && tile + 2 < it.n_tiles)
                ptx::tma_prefetch_3d(&kv_map, 64 * c, it.tok_begin + (tile + 2) * kTile, it.b);
        }
    };
    // Q of item `it` (one thread): 9 boxes of [64 heads][64 columns], heads beyond n_heads zero-filled
    const uint32_t q_bar = bar0 + 8u * (uint32_t)(2 * kChunks + kHandTail + 1);
    auto issue_q = [&](const SeesawItem &it) {
        ptx::mbarrier_arrive_expect_tx(q_bar, kTileBytes);
        for (int c = 0; c < kChunks; ++c)
            ptx::tma_load_3d(base + kQOff + (uint32_t)c * kChunkBytes, &q_map, 64 * c, it.head0, it.b, q_bar);
    };
    uint32_t items_done = 0;  // items this CTA finished: the parity of the Q barrier and of the end hand-offs
    // One split: the bf16 output goes out through the Q region and TMA stores, so the next item's Q is copied after
    // that (else as soon as the item's last S is done)
    const bool stage_out = p.n_splits == 1;
#if defined(LATTE_DEV_EXPERIMENTS)
    // read once: a global load between wgmma would hold them up
    const int trace_item = (kExp & 8) ? g_trace_item : 0, trace_first_pair = (kExp & 8) ? g_trace_first_pair : 0;
#endif
    // kExp & 8: clock64 of step `ev` of pair `pair` (block 0's first item, one thread a warpgroup)
    auto trace = [&](int pair, int ev) {
#if defined(LATTE_DEV_EXPERIMENTS)
        if ((kExp & 8) && blockIdx.x == 0 && items_done == (uint32_t)trace_item && tid % 128 == 0 &&
            pair >= trace_first_pair && pair < trace_first_pair + kTracePairs)
            g_seesaw_trace[tid / 128][pair - trace_first_pair][ev] = clock64();
#else
        (void)pair, (void)ev;
#endif
    };

    // a hand-off: every thread of the producer warpgroup signals after its writes, the consumer waits before its reads
    auto hand_bar = [&](int h) { return bar0 + 8u * (uint32_t)(2 * kChunks + h); };
    auto hand_signal = [&](int h) { ptx::mbarrier_arrive(hand_bar(h)); };
    auto hand_wait = [&](int h, uint32_t parity) { ptx::mbarrier_wait(hand_bar(h), parity); };

    if (tid == 0) {
        for (int i = 0; i < 2 * kChunks; ++i) ptx::mbarrier_init(bar0 + 8u * i, 1);
        for (int h = kHandMa; h <= kHandP1; ++h) ptx::mbarrier_init(hand_bar(h), 128);
        ptx::mbarrier_init(hand_bar(kHandEnd), 256);
        ptx::mbarrier_init(hand_bar(kHandTail), 256);
        ptx::mbarrier_init(q_bar, 1);
        ptx::fence_mbarrier_init();
    }
    __syncthreads();  // the mbarriers are initialized
    // the next kernel (the layer's W_UV GEMM) may launch now: its CTAs can only take an SM this grid has left (shared
    // memory), and there they load their weights' first stages before waiting for this grid to complete
    if (p.launch_dependents) ptx::griddep_launch_dependents();
    // the first item's Q and first two tiles; a later item's are issued while the item before it finishes
    if (tid == 0) {
        issue_q(cur);
        issue_copies(cur, 0, 0, 0, kChunks);
        if (cur.n_tiles > 1) issue_copies(cur, 1, 1, 0, kChunks);
    }
    stamp_start(3);

    const bool rotate = p.rope_cos != nullptr;
    const int my_buf = wg;  // the buffer whose S this warpgroup computes
    // S descriptors: A = Q chunk c (K-major), B = the tile's token rows (K-major); a k-step adds 32 bytes (2 units)
    const uint64_t q_desc0 = ptx::wgmma_desc_sw128(base + kQOff, 16, 1024);
    const uint64_t k_desc0 = ptx::wgmma_desc_sw128(tile_base(my_buf), 16, 1024);
    // P·V: A = P (K-major over tokens), B = latent chunks 4·wg..+4 of a tile (MN-major: 8 KB between blocks of 64
    // columns, 1 KB between groups of 8 token rows); a k-step of 16 tokens adds 32 bytes to A and 2 KB to B
    const uint64_t p0_desc = ptx::wgmma_desc_sw128(tile_base(0) + 8 * kChunkBytes, 16, 1024);  // P0
    const uint64_t p1_desc = ptx::wgmma_desc_sw128(base + kP1Off, 16, 1024);
    const uint64_t v0_desc = ptx::wgmma_desc_sw128(tile_base(0) + 4 * wg * kChunkBytes, kChunkBytes, 1024);
    const uint64_t v1_desc = ptx::wgmma_desc_sw128(tile_base(1) + 4 * wg * kChunkBytes, kChunkBytes, 1024);

    float o[128];
    float s[32];
    float m_run0 = -INFINITY, m_run1 = -INFINITY;  // M: the running row max (natural units) both warpgroups agree on
    float l0 = 0.f, l1 = 0.f;  // this thread's share of the row sums of the tiles this warpgroup computed S of
    // The pipeline's state across the items of this CTA: the phase parity of each buffer's copy barriers (one phase
    // per tile copied into the buffer) and the pairs done (one phase of each hand-off per pair; the slot of the row
    // maxima)
    uint32_t full_parity0 = 0, full_parity1 = 0;
    uint32_t pairs_done = 0;

    // S = Q·Kᵀ of the tile in this warpgroup's buffer (pair `pair`), the k_pe chunk rotated first; waited for, tokens ≥ T
    // masked, not yet rounded (row_max, then round_scores).
    // this thread's two k_pe unit pairs in the rotation: rows wtid/4 and wtid/4 + 32, rope dims 8u..8u+7, 32 + 8u..
    const int pe_row = wtid / 4, pe_u = wtid % 4;
    // Their cos/sin, loaded for the tile whose S this warpgroup computes next. Where they are loaded matters (timeline,
    // H100, 6144): an __ldg at the S's start was sunk by the compiler to the rotation, which then waited ~700 cycles
    // for L2 in the middle of the S; loaded at the S's start and kept there (volatile), the S's first wgmma waited
    // for them instead (a wgmma issues only once the warp's pending register loads are complete). So they are loaded
    // in the previous pair, right after this warpgroup's last P·V of that pair is issued (then waited for).
    uint4 tab[2][4];
    auto load_tables = [&](const SeesawItem &it, int tile) {
        const int t_first = it.tok_begin + tile * kTile;
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int t = t_first + pe_row + 32 * k;
            if (rotate && tile < it.n_tiles && t < it.T) {
                const uint4 *c = reinterpret_cast<const uint4 *>(p.rope_cos + (size_t)t * kMlaRope) + pe_u;
                const uint4 *sn = reinterpret_cast<const uint4 *>(p.rope_sin + (size_t)t * kMlaRope) + pe_u;
                tab[k][0] = ptx::ld_nc_early(c), tab[k][1] = ptx::ld_nc_early(c + 4);
                tab[k][2] = ptx::ld_nc_early(sn), tab[k][3] = ptx::ld_nc_early(sn + 4);
            } else {
                tab[k][0] = tab[k][1] = tab[k][2] = tab[k][3] = make_uint4(0, 0, 0, 0);
            }
        }
    };
    auto compute_s = [&](int tile, uint32_t parity) {
        const int t_first = cur.tok_begin + tile * kTile, T = cur.T;
#pragma unroll
        for (int i = 0; i < 32; ++i) s[i] = 0.f;
        ptx::wgmma_fence();
        // chunk order: WG0 0..7, WG1 4..7, 0..3 (the chunks each gets back first), then the k_pe chunk 8, rotated by
        // this warpgroup right before its 4 wgmma: the rotation's shared-memory loads and stores wait behind the S
        // wgmma's operand reads (~1,000 cycles, timeline at 6144), so it goes where 32 of this warpgroup's wgmma are
        // queued ahead of it (it was the 5th chunk: the S waited for it)
#pragma unroll 1
        for (int i = 0; i < kChunks; ++i) {
            const int c = i == 8 ? 8 : (wg == 0 ? i : (i + 4) % 8);
            ptx::mbarrier_wait(full_bar(my_buf, c), parity);
            trace(tile / 2, 16 + i);
            if (c == 8 && rotate && kExp != 4) {
                unsigned char *tile_ptr = smem + kKvOff + my_buf * kTileBytes;
#pragma unroll
                for (int k = 0; k < 2; ++k) {
                    const int row = pe_row + 32 * k;
                    if (t_first + row < T) {
                        uint4 *lo_ptr = reinterpret_cast<uint4 *>(tile_ptr + unit_offset(row, 8, pe_u));
                        uint4 *hi_ptr = reinterpret_cast<uint4 *>(tile_ptr + unit_offset(row, 8, pe_u + 4));
                        uint4 x_lo = *lo_ptr, x_hi = *hi_ptr;
                        rotate_pair(x_lo.x, x_hi.x, tab[k][0].x, tab[k][1].x, tab[k][2].x, tab[k][3].x);
                        rotate_pair(x_lo.y, x_hi.y, tab[k][0].y, tab[k][1].y, tab[k][2].y, tab[k][3].y);
                        rotate_pair(x_lo.z, x_hi.z, tab[k][0].z, tab[k][1].z, tab[k][2].z, tab[k][3].z);
                        rotate_pair(x_lo.w, x_hi.w, tab[k][0].w, tab[k][1].w, tab[k][2].w, tab[k][3].w);
                        *lo_ptr = x_lo;
                        *hi_ptr = x_hi;
                    }
                }
                ptx::fence_proxy_async_smem();  // the rotated keys, visible to wgmma
                ptx::named_bar_sync(kBarWg + wg, 128);
            }
            const uint64_t qd = q_desc0 + (uint64_t)(c * (kChunkBytes >> 4));
            const uint64_t kd = k_desc0 + (uint64_t)(c * (kChunkBytes >> 4));
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
                if (kExp != 2) ptx::wgmma_m64n64k16_ss(s, qd + 2 * kk, kd + 2 * kk);
        }
        trace(tile / 2, 2);
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
        trace(tile / 2, 3);
        // tokens ≥ T masked (the dot products, before they are rounded: round_scores keeps −inf)
        const int tok0 = t_first + 2 * t4;
        const bool full = t_first + kTile <= T;  // warp-uniform: only a sequence's last tile masks
        if (!full) {
#pragma unroll
            for (int j = 0; j < 8; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    if (tok0 + 8 * j + e >= T) s[4 * j + e] = -INFINITY, s[4 * j + 2 + e] = -INFINITY;
        }
    };
    // The rows' maxima of the scores, taken on the dot products and rounded once: the score's rounding
    // (bf16(bf16(x)·scale), scale > 0) is monotonic, so the max of the rounded scores is the rounded max, and it is
    // published before the 32 scores are rounded (round_scores, while the other warpgroup's max is awaited).
    auto row_max = [&](float &mx0, float &mx1) {
        mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            mx0 = fmaxf(mx0, fmaxf(s[4 * j], s[4 * j + 1]));
            mx1 = fmaxf(mx1, fmaxf(s[4 * j + 2], s[4 * j + 3]));
        }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        mx0 = score_fast(mx0, p.softmax_scale), mx1 = score_fast(mx1, p.softmax_scale);
    };
    // the scores as the reference rounds them (natural units)
    auto round_scores = [&]() {
#pragma unroll
        for (int i = 0; i < 32; ++i) s[i] = score_fast(s[i], p.softmax_scale);
    };
    // s ← exp2(s − m) in fp32 (m = −inf: nothing valid yet, every s is −inf and becomes 0)
    // P = e^(s − m) of the tokens of 16-byte units [j0, j0 + 4) of the row (32 tokens: two k-steps of the P·V) as
    // exp2(s·log2 e − m·log2 e), rounded to bf16 into the P tile at `p_tile` (row-major [64 heads][64 tokens],
    // swizzled); adds the rows' fp32 sums (before rounding, as the reference's softmax sums) to sum0 / sum1
    auto exp_store_half = [&](unsigned char *p_tile, int j0, float m0, float m1, float &sum0, float &sum1) {
        const float sub0 = m0 == -INFINITY ? 0.f : m0 * kLog2e, sub1 = m1 == -INFINITY ? 0.f : m1 * kLog2e;
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {  // tokens 8j + 2·t4, +1: 16-byte unit j of the row
            const int j = j0 + jj;
            const float e0 = fast_exp2(fmaf(s[4 * j], kLog2e, -sub0)), e1 = fast_exp2(fmaf(s[4 * j + 1], kLog2e, -sub0));
            const float e2 = fast_exp2(fmaf(s[4 * j + 2], kLog2e, -sub1)), e3 = fast_exp2(fmaf(s[4 * j + 3], kLog2e, -sub1));
            sum0 += e0 + e1, sum1 += e2 + e3;
            *reinterpret_cast<__nv_bfloat162 *>(p_tile + r0 * 128 + ((j ^ (r0 & 7)) << 4) + 4 * t4) =
                __floats2bfloat162_rn(e0, e1);
            *reinterpret_cast<__nv_bfloat162 *>(p_tile + r1 * 128 + ((j ^ (r1 & 7)) << 4) + 4 * t4) =
                __floats2bfloat162_rn(e2, e3);
        }
    };
    // the latent part of rows ≥ T of `tile` in buffer `buf` ← 0 (only a sequence's last, partial tile)
    auto zero_tail = [&](int tile, int buf) {
        const int rows_valid = cur.T - (cur.tok_begin + tile * kTile);
        if (rows_valid >= kTile) return;
        unsigned char *tile_ptr = smem + kKvOff + buf * kTileBytes;
        for (int i = wtid; i < (kTile - rows_valid) * 64; i += 128) {
            const int row = rows_valid + i / 64, cu = i % 64;  // every unit of the row's chunks 0-7
            *reinterpret_cast<uint4 *>(tile_ptr + (cu / 8) * kChunkBytes + row * 128 + (cu % 8) * 16) =
                make_uint4(0, 0, 0, 0);
        }
    };
    auto scale_o = [&](float a0, float a1) {
        if (__any_sync(0xffffffffu, a0 != 1.f || a1 != 1.f)) {
#pragma unroll
            for (int j = 0; j < 32; ++j) {
                o[4 * j] *= a0, o[4 * j + 1] *= a0;
                o[4 * j + 2] *= a1, o[4 * j + 3] *= a1;
            }
        }
    };
    auto issue_pv = [&](uint64_t a_desc, uint64_t b_desc) {
        ptx::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
            if (kExp != 3) ptx::wgmma_m64n256k16_ss_tb(o, a_desc + 2 * kk, b_desc + (uint64_t)(kk * (2048 >> 4)));
        ptx::wgmma_commit();
    };
    // This warpgroup's own P and its P·V, in two halves of 32 tokens: the first half's two k-steps run while the
    // second half is exponentiated (the softmax is the longest stretch with nothing else for the tensor cores).
    // O is rescaled first. One commit group for the four k-steps. `bar` is this warpgroup's named barrier.
    auto softmax_pv = [&](unsigned char *p_tile, uint64_t a_desc, uint64_t b_desc, float m0, float m1, float &sum0,
                          float &sum1) {
        sum0 = 0.f, sum1 = 0.f;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            exp_store_half(p_tile, 4 * half, m0, m1, sum0, sum1);
            ptx::fence_proxy_async_smem();
            ptx::named_bar_sync(kBarWg + wg, 128);  // this half of P, visible to this warpgroup's wgmma
            if (half == 0) ptx::wgmma_fence();
#pragma unroll
            for (int kk = 2 * half; kk < 2 * half + 2; ++kk)
                if (kExp != 3) ptx::wgmma_m64n256k16_ss_tb(o, a_desc + 2 * kk, b_desc + (uint64_t)(kk * (2048 >> 4)));
        }
        ptx::wgmma_commit();
    };
    // 2^(from − to) for a running max that moved from `from` to `to` (1 while both are −inf)
    const auto rescale = [](float from, float to) { return to == -INFINITY ? 1.f : fast_exp2((from - to) * kLog2e); };

    // The tail (kTailMax tokens; kTailWholeMax for a whole sequence): the scores of its n tokens (rows 0..n-1 of buffer 0)
    // for the 64 heads, by warpgroup 0's tensor cores: 36 wgmma m64n8k16 (A = Q, B = the tile's rows 0..7; rows n..7 hold
    // other data, NaN in the tests: only their own columns, never read, see it), after WG0's threads 0..4n-1 have rotated
    // the n rows' k_pe units in place (the reference convention; V reads only the latent chunks). Rounded as the reference
    // rounds them into s_tail[n][64]: rows 32.. of buffer 0's chunk 0, scratch once the tile has landed (the wgmma read
    // rows 0..7). It was four CUDA-core threads a head: ~1.5 µs an item in the scores' shared-memory loads (H100
    // timeline).
    unsigned char *const tail_tile_ptr = smem + kKvOff;  // buffer 0
    float *const s_tail = reinterpret_cast<float *>(tail_tile_ptr + 32 * 128);
    uint32_t tails_done = 0;  // the parity of the tail hand-off
    const auto tail_scores = [&](int t_first, int n, uint32_t parity) {
        const int rot_row = wtid / 4, rot_u = wtid % 4;  // this thread's unit pair (u, u + 4) of a k_pe row
        const bool rotator = wg == 0 && rotate && wtid < 4 * n;
        uint4 tc_lo = make_uint4(0, 0, 0, 0), tc_hi = tc_lo, ts_lo = tc_lo, ts_hi = tc_lo;
        if (rotator) {  // requested before the tile is waited for
            const uint4 *c = reinterpret_cast<const uint4 *>(p.rope_cos + (size_t)(t_first + rot_row) * kMlaRope) + rot_u;
            const uint4 *sn = reinterpret_cast<const uint4 *>(p.rope_sin + (size_t)(t_first + rot_row) * kMlaRope) + rot_u;
            tc_lo = c[0], tc_hi = c[4], ts_lo = sn[0], ts_hi = sn[4];
        }
#pragma unroll 1
        for (int c = 0; c < kChunks; ++c) ptx::mbarrier_wait(full_bar(0, c), parity);
        stamp_end(1, items_done);
        if (wg == 0) {
            if (rotate) {
                if (rotator) {
                    uint4 *lo_ptr = reinterpret_cast<uint4 *>(tail_tile_ptr + unit_offset(rot_row, 8, rot_u));
                    uint4 *hi_ptr = reinterpret_cast<uint4 *>(tail_tile_ptr + unit_offset(rot_row, 8, rot_u + 4));
                    uint4 k_lo = *lo_ptr, k_hi = *hi_ptr;
                    rotate_pair(k_lo.x, k_hi.x, tc_lo.x, tc_hi.x, ts_lo.x, ts_hi.x);
                    rotate_pair(k_lo.y, k_hi.y, tc_lo.y, tc_hi.y, ts_lo.y, ts_hi.y);
                    rotate_pair(k_lo.z, k_hi.z, tc_lo.z, tc_hi.z, ts_lo.z, ts_hi.z);
                    rotate_pair(k_lo.w, k_hi.w, tc_lo.w, tc_hi.w, ts_lo.w, ts_hi.w);
                    *lo_ptr = k_lo;
                    *hi_ptr = k_hi;
                }
                ptx::fence_proxy_async_smem();  // the rotated keys, visible to wgmma
                ptx::named_bar_sync(kBarWg + 0, 128);
            }
            float acc[4] = {0.f, 0.f, 0.f, 0.f};
            ptx::wgmma_fence();
#pragma unroll
            for (int c = 0; c < kChunks; ++c) {
                const uint64_t qd = q_desc0 + (uint64_t)(c * (kChunkBytes >> 4));
                const uint64_t kd = k_desc0 + (uint64_t)(c * (kChunkBytes >> 4));  // WG0's buffer: 0, the tail's
#pragma unroll
                for (int kk = 0; kk < 4; ++kk) ptx::wgmma_m64n8k16_ss(acc, qd + 2 * kk, kd + 2 * kk);
            }
            ptx::wgmma_commit();
            ptx::wgmma_wait<0>();
#pragma unroll
            for (int e = 0; e < 2; ++e) {  // tokens 2·t4 + e of rows r0, r1
                const int j = 2 * t4 + e;
                if (j < n) {
                    s_tail[j * kHeads + r0] = score_reference(acc[e], p.softmax_scale);
                    s_tail[j * kHeads + r1] = score_reference(acc[2 + e], p.softmax_scale);
                }
            }
        }
        ptx::fence_proxy_async_smem();  // the scratch rows and rotated keys, before the tile's next copy overwrites them
    };
    // ... then each thread folds the tail into its rows of O: the pair's max, O and the row sums rescaled,
    // O += bf16(p)·v over its 64 columns of the tail rows (the fp32 sum of p once a row: WG0's thread t4 = 0).
    // `whole`: the tail is the whole sequence (a sequence of at most kTailWholeMax tokens, one split): every score is
    // known here, so P is rounded as the reference rounds it, p = bf16(e / Σe), and the row sum becomes 1. (Elsewhere P is
    // rounded before its row sum is known, bf16(e), as in any flash kernel; on a sequence of a few tokens each p
    // weighs so much that this rounding alone put elements of y outside the reference's tolerance: the oracle's
    // short sequences, NOTES.)
    const auto tail_update = [&](int n, bool whole) {
        float mt0 = -INFINITY, mt1 = -INFINITY;
        for (int j = 0; j < n; ++j) mt0 = fmaxf(mt0, s_tail[j * kHeads + r0]), mt1 = fmaxf(mt1, s_tail[j * kHeads + r1]);
        const float mn0 = fmaxf(m_run0, mt0), mn1 = fmaxf(m_run1, mt1);
        const float a0 = rescale(m_run0, mn0), a1 = rescale(m_run1, mn1);
        scale_o(a0, a1);
        l0 *= a0, l1 *= a1;
        const float sub0 = mn0 == -INFINITY ? 0.f : mn0 * kLog2e, sub1 = mn1 == -INFINITY ? 0.f : mn1 * kLog2e;
        float sum0 = 0.f, sum1 = 0.f;  // whole: the rows' sums first
        if (whole) {
#pragma unroll 1
            for (int j = 0; j < n; ++j) {
                sum0 += fast_exp2(fmaf(s_tail[j * kHeads + r0], kLog2e, -sub0));
                sum1 += fast_exp2(fmaf(s_tail[j * kHeads + r1], kLog2e, -sub1));
            }
        }
#pragma unroll 1
        for (int j = 0; j < n; ++j) {
            float e0 = fast_exp2(fmaf(s_tail[j * kHeads + r0], kLog2e, -sub0));
            float e1 = fast_exp2(fmaf(s_tail[j * kHeads + r1], kLog2e, -sub1));
            if (whole) {
                e0 = __fdiv_rn(e0, sum0), e1 = __fdiv_rn(e1, sum1);
            } else if (wg == 0 && t4 == 0) {
                l0 += e0, l1 += e1;
            }
            const float p0 = __bfloat162float(__float2bfloat16_rn(e0)), p1 = __bfloat162float(__float2bfloat16_rn(e1));
#pragma unroll
            for (int jj = 0; jj < 32; ++jj) {  // columns 256·wg + 8jj + 2·t4, +1: chunk 4·wg + jj/8, unit jj % 8
                const float2 v = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(
                    tail_tile_ptr + unit_offset(j, 4 * wg + jj / 8, jj % 8) + 4 * t4));
                o[4 * jj] = fmaf(p0, v.x, o[4 * jj]);
                o[4 * jj + 1] = fmaf(p0, v.y, o[4 * jj + 1]);
                o[4 * jj + 2] = fmaf(p1, v.x, o[4 * jj + 2]);
                o[4 * jj + 3] = fmaf(p1, v.y, o[4 * jj + 3]);
            }
        }
        if (whole && wg == 0 && t4 == 0) l0 = 1.f, l1 = 1.f;  // O holds Σ p·v already: the end divides by 1
        m_run0 = mn0, m_run1 = mn1;
    };

    // Each warpgroup runs its own loop over the pairs (one loop with the branch inside would let ptxas see a path from
    // WG0's P·V left in flight into WG1's code, and serialize the wgmma).
    // Persistent: the CTA takes its items one after the other as one stream of tiles. When a buffer is released, the
    // next tile copied into it is the item's tile two further on, or else the next item's tile 0 (buffer 0) or 1
    // (buffer 1); the next item's Q is copied once both S of the item's last pair are done (WG0 knows it at the max
    // exchange). So an item's first S waits for nothing the previous item could not hide, unlike a new block's.
    load_tables(cur, my_buf);  // tile 0 (WG0) or 1 (WG1)
    for (;;) {
        const int next_round = next_real(round);
        const bool has_next = next_round >= 0;
        const SeesawItem nxt = has_next ? seesaw_item(p, n_groups, list_item(next_round)) : cur;
        // the tile that follows `tile` of this item in buffer `buf`: its item and index; false: none
        const auto follow = [&](int tile, int buf, SeesawItem &it, int &t) -> bool {
            if (tile + 2 < cur.n_tiles) {
                it = cur, t = tile + 2;
                return true;
            }
            if (has_next && buf < nxt.n_tiles) {
                it = nxt, t = buf;
                return true;
            }
            return false;
        };
        const auto issue_follow = [&](int tile, int buf, int c_begin, int c_end) {
            SeesawItem it;
            int t;
            if (follow(tile, buf, it, t)) issue_copies(it, t, buf, c_begin, c_end);
        };
        // the tables of the tile this warpgroup computes S of next (none: zeros, never read)
        const auto load_follow = [&](int tile, int buf) {
            SeesawItem it;
            int t;
            if (follow(tile, buf, it, t)) load_tables(it, t);
            else load_tables(cur, cur.n_tiles);  // zeros
        };
#pragma unroll
        for (int i = 0; i < 128; ++i) o[i] = 0.f;
        m_run0 = -INFINITY, m_run1 = -INFINITY;
        l0 = 0.f, l1 = 0.f;
        const int n_pair_tiles = cur.n_tiles - (cur.tail > 0);  // the tiles that go through the tensor cores
        if (stage_out && items_done > 0 && tid == 0) {
            ptx::bulk_wait_read();  // the previous item's output stores have read the Q region
            issue_q(cur);
        }
        ptx::mbarrier_wait(q_bar, items_done & 1u);  // this item's Q
        if (p.discard_q && cur.split >= 0) {  // ... is in shared memory and no CTA reads it again (a piece's is): its lines leave L2 without a DRAM write
            const char *q_item =
                reinterpret_cast<const char *>(p.q + (int64_t)cur.b * p.q_batch_stride + (int64_t)cur.head0 * kMlaRow);
            for (int i = tid; i < cur.heads * (kMlaRow * 2 / 128); i += kThreads) ptx::discard_l2(q_item + 128 * i);
        }
        if (items_done < kTraceItems) stamp(1 + 3 * items_done);
        // Each pair: both warpgroups publish the row max of their S and take the pair's max M' = max(M, both) (the
        // same floats on both sides: the same result); each then exponentiates its own S against M', stores its P,
        // rescales its half of O by 2^(M − M') and multiplies its own tile, then the other's (P0·V0_R, P1·V1_L) once
        // that P is there.
        if (wg == 0) {
#pragma unroll 1
            for (int pair = 0; 2 * pair < n_pair_tiles; ++pair, ++pairs_done) {
                const int tile0 = 2 * pair, tile1 = tile0 + 1;
                const bool has1 = tile1 < n_pair_tiles, last = tile1 + 1 >= cur.n_tiles;  // (never with a tail)
                const uint32_t parity = pairs_done & 1u;
                // ---- WG0: S0, the max exchange, P0, P0·V0_L, then P1·V1_L ----
                trace(pair, 0);
                compute_s(tile0, full_parity0);
                float mx0, mx1;
                row_max(mx0, mx1);
                float *ma_slot = s_ma + parity * kHeads;
                const float *mb_slot = s_mb + parity * kHeads;
                if (t4 == 0) ma_slot[r0] = mx0, ma_slot[r1] = mx1;
                hand_signal(kHandMa);
                round_scores();
                trace(pair, 4);
                hand_wait(kHandMb, parity);  // the row max of S1 (so S1 is done)
                // the item's last pair: both S are done with Q, the next item's may come in
                if (last && has_next && wtid == 0 && !stage_out) issue_q(nxt);
                const float mn0 = fmaxf(m_run0, fmaxf(mx0, mb_slot[r0])), mn1 = fmaxf(m_run1, fmaxf(mx1, mb_slot[r1]));
                trace(pair, 5);
                zero_tail(tile0, 0);  // S0 has read the tile; P·V of both warpgroups come after this (the barriers in
                                      // softmax_pv make the zeros visible to this warpgroup's wgmma)
                const float a0 = rescale(m_run0, mn0), a1 = rescale(m_run1, mn1);
                scale_o(a0, a1);
                float sum0, sum1;
                softmax_pv(smem + kKvOff + 8 * kChunkBytes, p0_desc, v0_desc, mn0, mn1, sum0, sum1);  // O_L += P0·V0_L
                hand_signal(kHandP0);  // P0 and the zeroed rows, for WG1's wgmma
                l0 = l0 * a0 + sum0;
                l1 = l1 * a1 + sum1;
                trace(pair, 6);
                if (has1) {
                    hand_wait(kHandP1, parity);  // P1 and buffer 1's zeroed rows
#pragma unroll 1
                    for (int c = 0; c < 4; ++c) ptx::mbarrier_wait(full_bar(1, c), full_parity1);
                    trace(pair, 7);
                    issue_pv(p1_desc, v1_desc);  // O_L += P1·V1_L
                } else {
                    // nothing to multiply, but every phase of a hand-off is waited for: with items in a row, WG1's
                    // next arrival would otherwise find this phase unobserved (synccheck: "missing wait")
                    hand_wait(kHandP1, parity);
                }
                load_follow(tile0, 0);  // after this warpgroup's last wgmma of the pair (a wgmma waits for pending loads)
                trace(pair, 8);
                if (has1)
                    ptx::wgmma_wait<1>();
                else
                    ptx::wgmma_wait<0>();
                trace(pair, 9);  // P0·V0_L done: buffer 0's chunks 0-3 are free
                if (wtid == 0) issue_follow(tile0, 0, 0, 4);
                if (has1) {
                    ptx::wgmma_wait<0>();  // P1·V1_L done: buffer 1's chunks 0-3 (and P1) are free
                    trace(pair, 10);
                    if (wtid == 0) issue_follow(tile1, 1, 0, 4);
                }
                trace(pair, 11);  // the pair's last copies issued (~300 cycles for 4 on the H200 at 6144)
                m_run0 = mn0, m_run1 = mn1;
                full_parity0 ^= 1u;
                if (has1) full_parity1 ^= 1u;
            }
        } else {
#pragma unroll 1
            for (int pair = 0; 2 * pair < n_pair_tiles; ++pair, ++pairs_done) {
                const int tile0 = 2 * pair, tile1 = tile0 + 1;
                const bool has1 = tile1 < n_pair_tiles;
                const uint32_t parity = pairs_done & 1u;
                // ---- WG1: S1 (beside S0), the max exchange, P1, P1·V1_R, then P0·V0_R ----
                float mx0 = -INFINITY, mx1 = -INFINITY;
                trace(pair, 0);
                if (kExp & 32) hand_wait(kHandMa, parity);  // S1 after S0 (WG0's row max published means S0 is done)
                if (has1) {
                    compute_s(tile1, full_parity1);
                    row_max(mx0, mx1);
                }
                const float *ma_slot = s_ma + parity * kHeads;
                float *mb_slot = s_mb + parity * kHeads;
                if (t4 == 0) mb_slot[r0] = mx0, mb_slot[r1] = mx1;
                hand_signal(kHandMb);
                if (has1) round_scores();
                trace(pair, 4);
                hand_wait(kHandMa, parity);  // the row max of S0
                const float mn0 = fmaxf(m_run0, fmaxf(mx0, ma_slot[r0])), mn1 = fmaxf(m_run1, fmaxf(mx1, ma_slot[r1]));
                trace(pair, 5);
                float sum0 = 0.f, sum1 = 0.f;
                const float a0 = rescale(m_run0, mn0), a1 = rescale(m_run1, mn1);
                scale_o(a0, a1);
                if (has1) {
                    zero_tail(tile1, 1);
                    softmax_pv(smem + kP1Off, p1_desc, v1_desc, mn0, mn1, sum0, sum1);  // O_R += P1·V1_R
                }
                hand_signal(kHandP1);  // P1 and the zeroed rows, for WG0's wgmma
                l0 = l0 * a0 + sum0;
                l1 = l1 * a1 + sum1;
                trace(pair, 6);
                hand_wait(kHandP0, parity);  // P0 and buffer 0's zeroed rows
                trace(pair, 7);
                issue_pv(p0_desc, v0_desc);  // O_R += P0·V0_R
                load_follow(tile1, 1);  // after this warpgroup's last wgmma of the pair
                trace(pair, 8);
                if (has1) {
                    ptx::wgmma_wait<1>();  // P1·V1_R done: buffer 1's chunks 4-8 are free
                    trace(pair, 9);
                    if (wtid == 0) issue_follow(tile1, 1, 4, kChunks);
                }
                ptx::wgmma_wait<0>();  // P0·V0_R done: buffer 0's chunks 4-8 (with P0) are free
                trace(pair, 10);
                if (wtid == 0) issue_follow(tile0, 0, 4, kChunks);
                trace(pair, 11);  // the pair's last copies issued (~450 cycles for 5)
                // an item of one tile left buffer 1 empty (the item before had no tile 1 for it): the next item's
                // tile 1 goes there now. (An item of 3, 5, ... tiles released buffer 1 to the next item already.)
                if (!has1 && pair == 0 && wtid == 0) issue_follow(tile1, 1, 0, kChunks);
                m_run0 = mn0, m_run1 = mn1;
                full_parity0 ^= 1u;
                if (has1) full_parity1 ^= 1u;
            }
        }

        // every wgmma of the pairs is complete here (WG0's last wait is split over two `if (has1)`, which ptxas does not
        // pair: without this it sees a P·V possibly in flight into the tail's wgmma and serializes them all, C7514)
        ptx::wgmma_wait<0>();
        if (items_done < kTraceItems) stamp(2 + 3 * items_done);
        stamp_end(0, items_done);
        // ---- the tail: the item's last tile of a few tokens (in buffer 0): scores by WG0's tensor cores, the rest on the CUDA cores ----
        if (cur.tail > 0) {
            const int tail_tile = cur.n_tiles - 1;
            tail_scores(cur.tok_begin + tail_tile * kTile, cur.tail, full_parity0);
            hand_signal(kHandTail);
            hand_wait(kHandTail, tails_done & 1u);  // the scores published; Q and the keys read
            ++tails_done;
            stamp_end(2, items_done);
            if (has_next && tid == 0 && !stage_out) issue_q(nxt);
            tail_update(cur.tail, stage_out && cur.split >= 0 && cur.n_tiles == 1);
            stamp_end(3, items_done);
            // the tables of this warpgroup's next tile (loaded here, not in the last pair: no registers held for them
            // across the tail)
            load_follow(wg == 0 ? tail_tile : tail_tile - 1, wg);
        }

        // ---- row sums: this thread's share → quad → both warpgroups ----
        l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
        l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
        l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
        l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
        if (t4 == 0) {
            row_sum[wg * kHeads + r0] = l0;
            row_sum[wg * kHeads + r1] = l1;
        }
        hand_signal(kHandEnd);
        hand_wait(kHandEnd, items_done & 1u);
        const float lt0 = row_sum[r0] + row_sum[kHeads + r0], lt1 = row_sum[r1] + row_sum[kHeads + r1];
        stamp_end(4, items_done);
        if (cur.tail > 0) {  // both warpgroups are done with buffer 0 (the tail tile): it goes to the next item
            const int tail_tile = cur.n_tiles - 1;
            if (tid == 0) {
                issue_follow(tail_tile, 0, 0, kChunks);
                if (cur.n_tiles == 1) issue_follow(1, 1, 0, kChunks);  // buffer 1 had nothing of this item
            }
            full_parity0 ^= 1u;
        }

        // ---- output: one split per sequence, the normalized o_lat in bf16; else the split's normalized partial
        //      output (fp32) and its natural-log LSE. (The next item's copies are in flight meanwhile.) ----
        // bf16 (stage_out): written from the registers straight to global memory, the output took ~5 µs an item on
        // the H100 (timeline at 512; 4-byte stores, 8 rows × 16 bytes per warp store; 16-byte stores after a quad
        // transpose took longer still, and leaving the stores out took the item's end from ~8 µs to ~0.3). So each
        // thread writes its rows into the Q region (free: every S of the item is done) in the operands' swizzled
        // layout, chunk = 64 columns (conflict-free: the 8 rows of a warp store land in 8 different 16-byte units),
        // and thread 0 stores the 8 chunks with TMA (heads beyond n_heads are clipped), then copies the next item's
        // Q in once the stores have read the region.
        const int col0 = 256 * wg + 2 * t4;
        if (stage_out && cur.split >= 0) {
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
                const int r = hh == 0 ? r0 : r1;
                const float inv_l = 1.f / (hh == 0 ? lt0 : lt1);
#pragma unroll
                for (int j = 0; j < 32; ++j)
                    *reinterpret_cast<__nv_bfloat162 *>(smem + kQOff + unit_offset(r, 4 * wg + j / 8, j % 8) + 4 * t4) =
                        __floats2bfloat162_rn(o[4 * j + 2 * hh] * inv_l, o[4 * j + 2 * hh + 1] * inv_l);
            }
            ptx::fence_proxy_async_smem();  // the staged rows, for the TMA stores
            // all 256 threads: a named barrier, not an mbarrier hand-off (whose wait loop here made ptxas spill)
            ptx::named_bar_sync(kBarOut, 256);
            if (tid == 0) {
                if (!(kExp & 64))
                    for (int c = 0; c < kChunks - 1; ++c)
                        ptx::tma_store_3d(&o_map, 64 * c, cur.head0, cur.b, base + kQOff + (uint32_t)c * kChunkBytes);
                ptx::bulk_commit();  // the next item's Q follows once they have read the region (at its start)
            }
        } else {
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
                const int r = hh == 0 ? r0 : r1;
                if (r >= cur.heads) continue;
                const float inv_l = 1.f / (hh == 0 ? lt0 : lt1);
                // a piece's rows: its slot's (mla_attention_schedule.cuh)
                const int prow = cur.split >= 0 ? cur.split * p.batch + cur.b : -1 - cur.split;
                const size_t row_out = (size_t)prow * p.n_heads + cur.head0 + r;
                float *dst = p.o_partial + row_out * kMlaLatent + col0;
#pragma unroll
                for (int j = 0; j < 32; ++j)
                    if (!(kExp & 128))
                        *reinterpret_cast<float2 *>(dst + 8 * j) =
                            make_float2(o[4 * j + 2 * hh] * inv_l, o[4 * j + 2 * hh + 1] * inv_l);
                if (wg == 0 && t4 == 0)
                    p.lse_partial[row_out] = (hh == 0 ? m_run0 : m_run1) + logf(hh == 0 ? lt0 : lt1);
            }
            // the last of a long sequence's pieces to finish combines them (from L2: no shared memory), unless the
            // combine kernel follows (static splits run as one with run-time pieces: its many warps are faster)
            if (cur.split < 0 && !p.seq_pieces) seesaw_piece_done(p, cur.b, cur.head0, cur.heads, -1 - cur.split, n_groups);
        }
        if (items_done < kTraceItems) stamp(3 + 3 * items_done);
        stamp_end(5, items_done);
        if (!has_next) break;
        round = next_round;
        cur = nxt;
        ++items_done;
    }
    if (stage_out && tid == 0) ptx::bulk_wait();  // the last item's output stores, done before the CTA exits
    stamp(1 + 3 * kTraceItems);
#else
    (void)kv_map, (void)q_map, (void)o_map, (void)p;
#endif  // LATTE_PTX_SM90A
}

// ---- host side: the tensor maps of the cache and of the queries, the grid ----
// The cache as a 3-D tensor (576 columns, rows 0..max_cache_len, batch), boxes of 64 × 64 in the 128-byte swizzle.
// false: TMA cannot describe this cache (a stride or the base address the unit cannot take): use v2.1.
bool encode_kv_map(const MlaAttentionParams &p, CUtensorMap *map) {
    const uint64_t row_bytes = (uint64_t)p.cache_row_stride * 2;
    const uint64_t rows = (uint64_t)p.max_cache_len + 1;
    // one sequence: its stride is never used; give the unit a legal one
    const uint64_t batch_bytes = p.batch > 1 ? (uint64_t)p.cache_batch_stride * 2 : rows * row_bytes;
    const uint64_t dims[3] = {(uint64_t)kMlaRow, rows, (uint64_t)p.batch};
    const uint64_t strides[2] = {row_bytes, batch_bytes};
    const uint32_t box[3] = {64, (uint32_t)kTile, 1};
    return tma_encode_bf16_3d(map, p.kv_cache, dims, strides, box);
}
// The queries as a 3-D tensor (576 columns, n_heads, batch), boxes of 64 columns × 64 heads (heads beyond n_heads
// zero-filled). Takes what the cache's map takes (16-byte aligned base and strides: checked by the launcher).
// The output o_lat as a 3-D tensor (512 columns, n_heads, batch; packed), boxes of 64 columns × 64 heads for the TMA
// stores (heads beyond n_heads are not written).
bool encode_o_map(const MlaAttentionParams &p, CUtensorMap *map) {
    const uint64_t head_bytes = (uint64_t)kMlaLatent * 2;
    const uint64_t dims[3] = {(uint64_t)kMlaLatent, (uint64_t)p.n_heads, (uint64_t)p.batch};
    const uint64_t strides[2] = {head_bytes, (uint64_t)p.n_heads * head_bytes};
    const uint32_t box[3] = {64, (uint32_t)kHeads, 1};
    return tma_encode_bf16_3d(map, p.o_lat, dims, strides, box);
}
bool encode_q_map(const MlaAttentionParams &p, CUtensorMap *map) {
    const uint64_t head_bytes = (uint64_t)p.q_head_stride * 2;
    const uint64_t batch_bytes = p.batch > 1 ? (uint64_t)p.q_batch_stride * 2 : (uint64_t)p.n_heads * head_bytes;
    const uint64_t dims[3] = {(uint64_t)kMlaRow, (uint64_t)p.n_heads, (uint64_t)p.batch};
    const uint64_t strides[2] = {head_bytes, batch_bytes};
    const uint32_t box[3] = {64, (uint32_t)kHeads, 1};
    return tma_encode_bf16_3d(map, p.q, dims, strides, box);
}

// The balanced schedule's list when no earlier kernel wrote it: one CTA (mla_attention_schedule.cuh)
__global__ void __launch_bounds__(256, 1) mla_attention_schedule_kernel(const MlaScheduleArgs a) {
    __shared__ __align__(16) int smem[kMlaScheduleSmemInts];
    mla_schedule_write(a, smem);
}

// The grid: one CTA per SM (each takes ~227 KB of smem), or one per item where there are fewer items. Dev builds:
// LATTE_MLA_SEESAW_CTAS=N caps it at N instead (e.g. a large N: one CTA per item, the non-persistent grid).
// 0: an error (*e says which), or nothing to do.
long long seesaw_ctas(const MlaAttentionParams &p, int device, cudaError_t *e) {
    *e = cudaSuccess;
    const long long items = (long long)p.n_splits * p.batch * ((p.n_heads + kHeads - 1) / kHeads);
    if (items > 0x7fffffffLL) return *e = cudaErrorInvalidValue, 0;
    int sms = 0;
    if ((*e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return 0;
    long long ctas = sms > 0 ? sms : 1;
#if defined(LATTE_DEV_EXPERIMENTS)
    static const long long cap = [] {
        const char *v = getenv("LATTE_MLA_SEESAW_CTAS");
        return v ? atoll(v) : 0ll;
    }();
    if (cap > 0) ctas = cap;
#endif
    // static splits that may run as one with run-time pieces (mla_attention_runtime_split): every SM, which the pieces
    // can fill (the static items may be fewer: 32 sequences × 2 splits × 2 head groups are 128)
    const bool pieces_may_fill = p.runtime_split && p.split_long && p.balance && p.schedule && p.n_splits > 1 &&
                                 p.n_splits <= kMlaRuntimeSplitsMax;
    return ctas > items && !pieces_may_fill ? items : ctas;
}

// ctas: seesaw_ctas's grid; piece_slots: mla_attention_runtime_split's (both decided once, by the caller)
template <int kExp>
cudaError_t launch_seesaw(const MlaAttentionParams &p_in, long long ctas, int piece_slots, const CUtensorMap &map,
                          const CUtensorMap &q_map, const CUtensorMap &o_map, int device, cudaStream_t stream) {
    if (const cudaError_t e = smem_optin_once<mla_attention_seesaw_kernel<kExp>>(kSmemBytes, device)) return e;
    cudaError_t e;
    MlaAttentionParams p = p_in;
    const int n_groups = (p.n_heads + kHeads - 1) / kHeads;
    if (piece_slots > 0) {  // one split; the combine kernel that follows merges the pieces
        p.n_splits = 1, p.split_len = one_split_len(p.max_cache_len);
        p.seq_pieces = mla_schedule_seq_pieces(p.schedule, p.batch, n_groups);
    }
    const int n_items = (int)((long long)p.n_splits * p.batch * n_groups);
    // balanced only with a list: workspace for it, at most kListMax rounds, a grid the list can describe
    p.balance = p.balance && p.schedule && ctas <= kMlaScheduleCtasMax &&
                mla_schedule_rounds(n_items, (int)ctas) <= kListMax;
    if (p.balance && !(p.schedule_ready && p.schedule_grid == ctas)) {
        MlaScheduleArgs a;
        a.cache_lens = p.cache_lens;
        a.max_cache_len = p.max_cache_len;
        a.n_splits = p.n_splits;
        a.split_len = p.split_len;
        a.n_groups = n_groups;
        a.n_items = n_items;
        a.grid = (int)ctas;
        a.list = p.schedule;
        const bool split_long = p.split_long && p.n_splits == 1;
        a.pieces = split_long ? mla_schedule_pieces(p.schedule) : nullptr;
        a.counters = split_long ? mla_schedule_counters(p.schedule) : nullptr;
        a.piece_slots = piece_slots;
        a.seq_pieces = piece_slots > 0 ? mla_schedule_seq_pieces(p.schedule, p.batch, n_groups) : nullptr;
#if defined(LATTE_DEV_EXPERIMENTS)
        long long *clocks = nullptr;
        if (cudaGetSymbolAddress(reinterpret_cast<void **>(&clocks), g_schedule_clocks) == cudaSuccess) a.clocks = clocks;
        a.force_pieces = mla_schedule_dev_force_pieces();
#endif
        mla_attention_schedule_kernel<<<1, 256, 0, stream>>>(a);
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
    }
    mla_attention_seesaw_kernel<kExp><<<(unsigned)ctas, kThreads, kSmemBytes, stream>>>(map, q_map, o_map, p);
    return cudaGetLastError();
}

}  // namespace

#if defined(LATTE_DEV_EXPERIMENTS)
cudaError_t mla_attention_seesaw_trace(unsigned long long *host) {
    return cudaMemcpyFromSymbol(host, g_seesaw_trace, sizeof(g_seesaw_trace));
}
cudaError_t mla_attention_seesaw_trace_select(int item, int first_pair) {
    cudaError_t e = cudaMemcpyToSymbol(g_trace_item, &item, sizeof(int));
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(g_trace_first_pair, &first_pair, sizeof(int));
    return e;
}
cudaError_t mla_attention_seesaw_item_trace(unsigned long long *host) {
    cudaError_t e = cudaMemcpyFromSymbol(host, g_seesaw_items, sizeof(g_seesaw_items));
    if (e == cudaSuccess) e = cudaMemcpyFromSymbol(host + kTraceCtas * (2 + 3 * kTraceItems), g_seesaw_end, sizeof(g_seesaw_end));
    if (e == cudaSuccess)
        e = cudaMemcpyFromSymbol(host + kTraceCtas * (2 + 3 * kTraceItems) + kTraceCtas * 2 * 6, g_seesaw_start,
                                 sizeof(g_seesaw_start));
    return e;
}
cudaError_t mla_attention_schedule_clocks(long long *host) {
    return cudaMemcpyFromSymbol(host, g_schedule_clocks, sizeof(g_schedule_clocks));
}
cudaError_t mla_attention_seesaw_item_trace_clear() {
    static const unsigned long long zeros[kTraceCtas][2 + 3 * kTraceItems] = {}, zeros_end[kTraceCtas][2][6] = {};
    cudaError_t e = cudaMemcpyToSymbol(g_seesaw_items, zeros, sizeof(zeros));
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(g_seesaw_end, zeros_end, sizeof(zeros_end));
    static const unsigned long long zeros_start[kTraceCtas][4] = {};
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(g_seesaw_start, zeros_start, sizeof(zeros_start));
    return e;
}
#endif

int mla_attention_seesaw_grid(const MlaAttentionParams &p, int device) {
    cudaError_t e;
    const long long ctas = seesaw_ctas(p, device, &e);
    return e == cudaSuccess && ctas > 0 ? (int)ctas : 0;
}

// A static schedule of 2..kMlaRuntimeSplitsMax splits runs as one split with pieces cut at run time (see
// MlaAttentionParams::runtime_split) where the list is written and may split: a balanced list for this grid (at most
// kListMax rounds of one split's items), long sequences allowed to split, and every sequence a unit of the list.
int mla_attention_runtime_split(const MlaAttentionParams &p, int grid) {
    const int n_groups = (p.n_heads + kHeads - 1) / kHeads;
    const long long one_split_items = (long long)p.batch * n_groups;
    const bool ok = p.runtime_split && p.split_long && p.balance && p.schedule && p.n_splits > 1 &&
                    p.n_splits <= kMlaRuntimeSplitsMax && grid > 0 && grid <= kMlaScheduleCtasMax &&
                    p.batch < kMlaScheduleUnitsMax && mla_schedule_rounds((int)one_split_items, grid) <= kListMax;
    return ok ? p.n_splits * p.batch : 0;
}

cudaError_t mla_attention_seesaw_launch(const MlaAttentionParams &p_in, int device, cudaStream_t stream,
                                        int *piece_slots_out) {
    if (piece_slots_out) *piece_slots_out = 0;
    MlaAttentionParams p = p_in;
    // the grid of the static splits' items, also where they run as one split with run-time pieces (which fill it)
    cudaError_t e;
    const long long ctas = seesaw_ctas(p_in, device, &e);
    if (ctas <= 0) return e;
    const int piece_slots = mla_attention_runtime_split(p_in, (int)ctas);
    // q's lines are discarded only where each is read once (one split, also where the static splits run as one with
    // run-time pieces: a piece's queries are not discarded) and an item's queries are whole lines (packed heads of
    // 1152 bytes = 9 lines, 128-byte aligned rows)
    p.discard_q = p_in.discard_q && (p.n_splits == 1 || piece_slots > 0) && p.q_head_stride == kMlaRow &&
                  reinterpret_cast<uintptr_t>(p.q) % 128 == 0 && (p.batch == 1 || p.q_batch_stride % 64 == 0);
    CUtensorMap map, q_map, o_map;
    if (!encode_kv_map(p, &map) || !encode_q_map(p, &q_map) || !encode_o_map(p, &o_map)) return cudaErrorNotSupported;
#if defined(LATTE_DEV_EXPERIMENTS)
    static const int exp = [] {
        const char *v = getenv("LATTE_MLA_WGMMA_EXPERIMENT");
        return v ? atoi(v) : 0;
    }();
    switch (exp) {
        case 1: e = launch_seesaw<1>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        case 2: e = launch_seesaw<2>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        case 3: e = launch_seesaw<3>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        case 4: e = launch_seesaw<4>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        case 8: e = launch_seesaw<8>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        case 16: e = launch_seesaw<16>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        case 32: e = launch_seesaw<32>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        case 40: e = launch_seesaw<40>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        case 48: e = launch_seesaw<48>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        case 56: e = launch_seesaw<56>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        case 72: e = launch_seesaw<72>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        case 128: e = launch_seesaw<128>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
        default: e = launch_seesaw<0>(p, ctas, piece_slots, map, q_map, o_map, device, stream); break;
    }
#else
    e = launch_seesaw<0>(p, ctas, piece_slots, map, q_map, o_map, device, stream);
#endif
    if (e == cudaSuccess && piece_slots_out) *piece_slots_out = piece_slots;
    return e;
}

}  // namespace latte
