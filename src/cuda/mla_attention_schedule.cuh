// The Hopper attention's balanced schedule (MlaAttentionParams::balance), as a step of its own: which item each CTA of
// the seesaw kernel takes in each round, written to a list in workspace before the kernel starts. FlashMLA does the same
// (its metadata kernel runs before the attention). Two writers run this one function: a one-CTA kernel that
// mla_attention_launch enqueues ahead of the attention, and, in the layer, a spare CTA of the fused query kernel (the
// query kernel has 128 tiles for 132 SMs), so that the layer's attention starts with one load of its list.
//
// Why not in the attention itself: ranking there (all of a CTA's threads, before its first item) cost ~3.5 µs at the
// start of the layer's attention even where it found every length equal (NOTES, "The attention's schedule over
// unequal lengths"), and the attention's kernel is at the register limit: its code around the pair loops moves how
// ptxas allocates them.
//
// The schedule (unchanged from the in-kernel version): items (sequence, split, head group) ranked by their tiles,
// longest first (a piece before a whole item of as many tiles; ties: the lower item first); round k holds ranks [k·grid, (k+1)·grid) and gives rank k·grid + i to CTA
// i on an even round and to CTA grid − 1 − i on an odd one (a snake: the CTAs that took the longest items of a round
// take the shortest of the next); a unit's head groups take adjacent ranks, so they run side by side and share the
// unit's tiles in L2. All lengths equal, one round, or more than kMlaScheduleUnitsMax units: index order (CTA c takes
// items c, c + grid, ...), which is as balanced where lengths are equal. Where lengths differ the writer also prices a
// second assignment of the same ranking (LPT: mla_schedule_write) and writes the one whose busiest CTA has less.
//
// Long sequences split at run time (MlaScheduleArgs::pieces; one split per sequence only, i.e. the layer's batches):
// whole items leave a batch with a few long sequences bounded by its longest item (4 sequences of 8K among 124 of 512:
// 129 tiles on one CTA where the balanced share is ~25). So the writer prices every piece length P (tiles; P is
// ceil(longest / k) rounded up to whole pairs, k = 1..kMlaSplitCandidates, one candidate a lane) with a makespan
// estimate, max(the largest item, the total over the CTAs), each item costing its tiles + kMlaItemFixedTiles (and a
// piece kMlaPieceCombineTiles more: its share of the combine), and splits only where the best estimate beats whole
// items by kMlaSplitGain. A sequence of more than P tiles then becomes pieces of P tiles (the last one shorter), each a
// unit of its own (numbered batch + slot), ranked and dealt like the others; each piece writes its normalized fp32
// partial and LSE to o_partial / lse_partial row slot·n_heads + head (one split leaves those [batch][n_heads] rows
// unused), and the last of a (sequence, head group)'s pieces to finish (a counter per pair, zeroed here each run)
// combines them into o_lat. Equal lengths never split (index order as before), nor does a batch of uniformly random
// lengths (its longest item is about the balanced share). The estimate also knows that where there are more items (or
// more of P − 1 tiles and up) than CTAs, some CTA takes two. Equal lengths in pieces (below) are priced exactly instead:
// their items go in index order, so each cut's busiest CTA is a short periodic walk.
//
// Static splits run as one split with run-time pieces (MlaScheduleArgs::piece_slots, MlaAttentionParams::runtime_split;
// batches of about 8-32 at long caches): the static schedule cuts every sequence at max_cache_len / n_splits, so a
// batch of mixed lengths is bounded by its longest split (32 sequences of 1..8191 tokens: two splits of 4,096 tokens,
// about twice the balanced share). There the attention runs one split, and the writer cuts this run's sequences into pieces with
// n_splits · batch slots (the rows the static splits' partials would take), equal lengths too (the grid would idle:
// 32 sequences are 64 items for 132 CTAs; their pieces go in index order, no ranking). The combine kernel that follows
// merges each sequence's pieces (seq_pieces: its first slot and count, 0 where it ran whole) as it merged the static
// splits, faster than the last piece's one CTA (+8 to +17 µs at batches 8-32 with that); the snake deals them (LPT's
// chain made the writer outlast the query kernel beside which it runs, and gains nothing with ~one round of items).
#pragma once

#include "cuda/mla_attention.cuh"
#include "cuda/mla_attention_common.cuh"

#include <cstdlib>

namespace latte {

constexpr int kMlaScheduleGroupHeads = 64;  // heads per item (the seesaw kernel's wgmma M)

// The splitting's cost model (tiles of 64 tokens; a pair of tiles is ~5 µs on an H200): an item's fixed cost (its Q,
// the tail, the row sums and the output: ~8 µs at 512), a piece's share of the combine (its 128 KB of fp32 partial read
// back from L2), the gain a split must promise over whole items, and the piece counts tried for the longest sequence.
constexpr float kMlaItemFixedTiles = 3.0f, kMlaPieceCombineTiles = 0.5f, kMlaSplitGain = 0.85f;
// Equal lengths are priced by each cut's exact busiest CTA in the writer's cost (the pieces' items go in index order:
// a periodic sequence over the CTAs), so a smaller margin: where the estimate's bounds left out that some CTAs take
// three or four items, batch 48 at 4096 took 3 pieces a sequence, 306 quarter tiles on its busiest CTA against 272
// whole (bench/results/2026-11-29-h200-stream-deal, scripts/writer_model.py)
constexpr float kMlaSplitGainExact = 0.97f;
// and with an item's fixed cost fitted to the layer's attention phase (H200, 30 cases at batches 48-128, equal lengths
// whole and in pieces: 20 quarter tiles a whole item, 22 a piece, rms 5.3 µs against 7.3 with kMlaItemFixedQ's 12;
// bench/results/2026-11-29-h200-writer-exact): a piece costs more than the balance its finer cut buys at 12
constexpr int kMlaEqualItemFixedQ = 20;
constexpr int kMlaSplitCandidates = 32;  // a warp's lanes
// A piece: the sequence b, its tokens [tok_begin, tok_end), and (slot0 << 10) | k: the first slot of the sequence's k
// pieces (consecutive slots) and k (<= kMlaSplitCandidates < 1024)
struct MlaPiece {
    int b, tok_begin, tok_end, slots;
};
static_assert(kMlaSplitCandidates < 1024, "a piece count fits 10 bits");
// That word, (slot0 << 10) | k (also each sequence's entry of MlaScheduleArgs::seq_pieces), made by the list's writer
// and read by the seesaw kernel's merge, the combine kernel and the W_UV kernel that folds the combine in
static __host__ __device__ __forceinline__ int mla_piece_slots(int slot0, int k) { return (slot0 << 10) | k; }
static __host__ __device__ __forceinline__ int mla_piece_slot0(int slots) { return slots >> 10; }
static __host__ __device__ __forceinline__ int mla_piece_count(int slots) { return slots & 1023; }
// The pieces ([kMlaScheduleUnitsMax] MlaPiece: a piece is a unit, so there are never more) and their counters
// ([batch][n_groups] int) follow the list in the attention's workspace (mla_attention_workspace_bytes counts them), at
// offsets that do not depend on the batch: the kernel finds them from the list alone
static __host__ __device__ __forceinline__ MlaPiece *mla_schedule_pieces(int *list) {
    return reinterpret_cast<MlaPiece *>(list + (size_t)kMlaScheduleCtasMax * kMlaScheduleRounds);
}
static __host__ __device__ __forceinline__ int *mla_schedule_counters(int *list) {
    return reinterpret_cast<int *>(mla_schedule_pieces(list) + kMlaScheduleUnitsMax);
}
// and where static splits run as one split with run-time pieces, each sequence's pieces ([batch] ints,
// MlaAttentionParams::seq_pieces), after the counters
static __host__ __device__ __forceinline__ int *mla_schedule_seq_pieces(int *list, int batch, int n_groups) {
    return mla_schedule_counters(list) + (size_t)batch * n_groups;
}

struct MlaScheduleArgs {
    const int32_t *cache_lens;
    int max_cache_len;
    int n_splits, split_len;  // the attention's split-KV schedule
    int n_groups;             // head groups of 64 heads
    int n_items;              // n_groups · n_splits · batch
    int grid;                 // the attention's CTAs (<= kMlaScheduleCtasMax)
    int *list;                // out: [grid][kMlaScheduleRounds] items, −1 where a CTA has none in a round
    // Long sequences split at run time (one split only; see above): [batch] pieces and [batch][n_groups] counters of
    // the attention's workspace (mla_attention_schedule_pieces); nullptr: whole items only
    MlaPiece *pieces = nullptr;
    int *counters = nullptr;
    // the pieces' slots: rows of o_partial / lse_partial a piece may take (0: batch, the one-split workspace's unused
    // rows; n_splits · batch where a static split runs as one split, MlaAttentionParams::runtime_split). More slots
    // than sequences also let equal lengths split (the grid would be idle otherwise: 32 sequences are 64 items)
    int piece_slots = 0;
    // with piece_slots: [batch] each sequence's pieces for the combine kernel, (first slot << 10) | k, 0 for a
    // sequence that runs whole (written every run; MlaAttentionParams::seq_pieces); nullptr: none
    int *seq_pieces = nullptr;
    // dev builds: clock64 at the writer's steps (start, keys, split decided, pieces written, ranked, LPT, end)
    long long *clocks = nullptr;
    // dev builds, timing only (LATTE_MLA_FORCE_PIECES, read by the launchers): k > 0 cuts the longest sequence into k
    // pieces (P = its tiles / k in whole pairs) wherever the writer may split, whatever the estimate says
    int force_pieces = 0;
};

// Rounds of the list (at most kMlaScheduleRounds, else the kernel takes index order without a list).
static __host__ __device__ __forceinline__ int mla_schedule_rounds(int n_items, int grid) {
    return (n_items + grid - 1) / grid;
}

#if defined(__CUDACC__)
// LPT's bounds (mla_schedule_lpt): columns (kMlaLptRegs a lane of warp 0 where it places units one at a time), and the
// length from which a run of equal-size units is placed in one parallel step rather than one unit at a time (a unit
// ~300 cycles, a run ~2k: clock64 in dev builds)
constexpr int kMlaLptRegs = 5, kMlaLptColumnsMax = 32 * kMlaLptRegs, kMlaLptRunMin = 8;
// The writer's shared memory (ints): the units' keys (tiles) and scratch; per unit its rank, its round and column under
// LPT; the units in rank order and, per rank, the end of its run of equal sizes; per CTA the snake's load; LPT's
// columns (load, items, a run's quotient and remainder) and warps. 31.8 KB.
constexpr int kMlaScheduleScratch = 12, kMlaLptColInts = 4 * kMlaLptColumnsMax + 32;
constexpr int kMlaScheduleSmemInts = 6 * kMlaScheduleUnitsMax + kMlaScheduleScratch + kMlaScheduleCtasMax + kMlaLptColInts;

// A unit's cost for the assignments, in quarter tiles: its tiles, the item's fixed cost, a piece's combine share
// (0: reads nothing)
constexpr int kMlaItemFixedQ = (int)(4.f * kMlaItemFixedTiles), kMlaPieceCombineQ = (int)(4.f * kMlaPieceCombineTiles);
static __device__ __forceinline__ int mla_schedule_size(int tiles, bool piece) {
    return tiles > 0 ? 4 * tiles + kMlaItemFixedQ + (piece ? kMlaPieceCombineQ : 0) : 0;
}
// The same in the exact pricing of equal lengths (kMlaEqualItemFixedQ; gpu_attention's check prices with it too)
static __host__ __device__ __forceinline__ int mla_schedule_equal_size(int tiles, bool piece) {
    return 4 * tiles + kMlaEqualItemFixedQ + (piece ? kMlaPieceCombineQ : 0);
}
#if defined(LATTE_DEV_EXPERIMENTS)
// dev builds: LATTE_MLA_FORCE_PIECES (MlaScheduleArgs::force_pieces), read once by each launcher
static inline int mla_schedule_dev_force_pieces() {
    static const int k = getenv("LATTE_MLA_FORCE_PIECES") ? atoi(getenv("LATTE_MLA_FORCE_PIECES")) : 0;
    return k;
}
#endif
// A ranked unit's key: its class 2 · tiles + (1 for a piece) (equal classes are equal sizes; a piece ranks before a
// whole item of as many tiles) above 1023 − the unit (ties: the lower unit first), so that every key differs and a
// unit's rank is the number of keys above its own. Its size in the assignments: an item with nothing to read (an
// invalid length) still costs its fixed part (it writes its rows).
constexpr int kMlaKeyClassMax = (1 << 20) - 1;  // tiles past 2^19 (33 M tokens) rank as that many
static __device__ __forceinline__ int mla_schedule_rank_key(int tiles, bool piece, int u) {
    return (min(2 * tiles + (piece ? 1 : 0), kMlaKeyClassMax) << 10) | (1023 - u);
}
static __device__ __forceinline__ int mla_schedule_size_of_key(int key) {
    const int cls = key >> 10;
    return cls >= 2 ? mla_schedule_size(cls >> 1, cls & 1) : kMlaItemFixedQ;
}
static_assert(kMlaScheduleUnitsMax <= 1024, "a unit fits a rank key's 10 bits");
static_assert(7 * kMlaSplitCandidates <= kMlaScheduleUnitsMax, "the split's candidate sums fit its scratch");

// Splits the sequences longer than the best piece length into pieces (see above), if that promises a gain: writes the
// pieces, zeroes their counters, sets key[n_units + slot] to each piece's tiles and key[b] = −1 for a split sequence.
// Returns the units to rank (n_units + pieces). Every thread calls it; `kk` is scratch of kMlaScheduleUnitsMax ints
// (at least n_units and the candidates' 7 · kMlaSplitCandidates).
static __device__ __noinline__ int mla_schedule_split(const MlaScheduleArgs &a, int *key, int *kk, int n_units,
                                                       bool equal) {
    const int tid = threadIdx.x, nthreads = blockDim.x, grid = a.grid;
    int *const sc = key + kMlaScheduleUnitsMax;  // [0] the longest, [1] pieces, [2] E(whole items), [4..5] the best
    unsigned long long *const best = reinterpret_cast<unsigned long long *>(sc + 4);
    if (tid == 0) sc[0] = 0, sc[1] = 0, *best = ~0ull;
    __syncthreads();
    int mx = 0;
    for (int u = tid; u < n_units; u += nthreads) mx = max(mx, key[u]);
    mx = __reduce_max_sync(0xffffffffu, mx);
    if (tid % 32 == 0) atomicMax(&sc[0], mx);
    __syncthreads();
    const int longest = sc[0];
    // Lane c of every warp prices k_longest = c + 1 over the warp's share of the units; the warps' sums meet in kk
    // (units, pieces, cost in quarter tiles); warp 0 takes the best. (One candidate a thread over all the units, 256
    // of them, took ~15 µs on the CTA: divergent integer divisions.)
    const int warp = tid / 32, lane = tid % 32, n_warps = nthreads / 32;
    constexpr int C = kMlaSplitCandidates;
    for (int i = tid; i < 7 * C; i += nthreads) kk[i] = i < 5 * C || i >= 6 * C ? 0 : 0x7fffffff;
    __syncthreads();
    const int k_longest = lane + 1;
    const int P_lane = max(2, (((longest + k_longest - 1) / k_longest) + 1) & ~1);  // whole pairs
    const float inv_p = 1.f / (float)P_lane;
    // Besides the units, pieces and cost: the items that read the cache (`real`), those of at least P − 1 tiles
    // (`big`) and the smallest, for two more bounds on the busiest CTA (below)
    const int big_tiles = max(1, P_lane - 1);
    {
        int units = 0, pieces = 0, cost = 0, real = 0, big = 0, smallest = 0x7fffffff;
        const int per_warp = (n_units + n_warps - 1) / n_warps, u_end = min(n_units, (warp + 1) * per_warp);
        for (int u = warp * per_warp; u < u_end; ++u) {
            const int t = key[u];
            if (t <= 0) {
                units += t == 0;  // an invalid length: its item writes NaN rows (nothing to price)
                continue;
            }
            if (t > P_lane) {
                int k = __float2int_rz((float)(t - 1) * inv_p) + 1;  // ceil(t / P), corrected for the rounding
                k += k * P_lane < t ? 1 : (k - 1) * P_lane >= t ? -1 : 0;
                pieces += k, units += k, real += k;
                cost += 4 * t + k * (kMlaItemFixedQ + kMlaPieceCombineQ);
                const int last = t - (k - 1) * P_lane;
                big += k - 1 + (last >= big_tiles);
                smallest = min(smallest, mla_schedule_size(last, true));
            } else {
                units += 1, real += 1;
                cost += mla_schedule_size(t, false);
                big += t >= big_tiles;
                smallest = min(smallest, mla_schedule_size(t, false));
            }
        }
        atomicAdd(&kk[lane], units);
        atomicAdd(&kk[C + lane], pieces);
        atomicAdd(&kk[2 * C + lane], cost);
        atomicAdd(&kk[3 * C + lane], real);
        atomicAdd(&kk[4 * C + lane], big);
        atomicMin(&kk[5 * C + lane], smallest);
    }
    // Equal lengths (every unit key[0] > 0 tiles): lane c's cut gives each sequence k pieces (P tiles, the last
    // shorter; k = 1: whole), their items in index order, item i of size `last` where (i / n_groups) % k == k − 1. So CTA
    // c's load is a walk c, c + grid, ... over a period of k · n_groups items; each warp takes a slice of the CTAs and
    // the busiest meets in kk[6C + lane]
    if (equal) {
        const int t = key[0], k = t > P_lane ? (t + P_lane - 1) / P_lane : 1;
        const int size_p = t > P_lane ? mla_schedule_equal_size(P_lane, true) : mla_schedule_equal_size(t, false);
        const int size_last = t > P_lane ? mla_schedule_equal_size(t - (k - 1) * P_lane, true) : size_p;
        const long long n_items = (long long)n_units * k * a.n_groups;
        const int period = k * a.n_groups, last_from = (k - 1) * a.n_groups, step = grid % period;
        int busiest = 0;
        if (n_items <= (long long)kMlaScheduleRounds * grid)
            for (int c = warp; c < grid; c += n_warps) {
                int load = 0, m = c % period;
                for (int i = c; i < (int)n_items; i += grid) {
                    load += m >= last_from ? size_last : size_p;
                    m += step;
                    m -= m >= period ? period : 0;
                }
                busiest = max(busiest, load);
            }
        atomicMax(&kk[6 * C + lane], busiest);
    }
    __syncthreads();
    if (warp == 0) {
        const int units = kk[lane], pieces = kk[C + lane], cost = kk[2 * C + lane];
        const int real = kk[3 * C + lane], big = kk[4 * C + lane], smallest = kk[5 * C + lane];
        // the same as whole items; slots (rows of o_partial: piece_slots, else the one-split workspace's [batch]);
        // units (the key array, the list's rounds)
        const int slots = a.piece_slots > 0 ? a.piece_slots : n_units;
        bool ok = (k_longest == 1 || P_lane < longest) && pieces <= slots &&
                  n_units + pieces <= kMlaScheduleUnitsMax && units * a.n_groups <= kMlaScheduleRounds * grid;
#if defined(LATTE_DEV_EXPERIMENTS)
        if (a.force_pieces > 0) ok = ok && (k_longest == 1 || k_longest == a.force_pieces);
#endif
        const float largest = (float)mla_schedule_size(min(P_lane, longest), pieces > 0);
        // the busiest CTA, in quarter tiles: at least the largest item and the average load; and where more items
        // than CTAs (or more big ones) there are, some CTA takes two of them: at least twice the smallest (twice
        // P − 1 tiles). Without the last two, equal lengths split finer than the grid holds (32 × 8191 tokens into
        // 3 pieces each: 192 items on 132 CTAs, 60 of them taking two) for an average a little lower than 2 pieces'
        float e = fmaxf(largest, (float)cost * (float)a.n_groups / (float)grid);
        if (real * a.n_groups > grid) e = fmaxf(e, 2.f * (float)smallest);
        if (big * a.n_groups > grid) e = fmaxf(e, 2.f * (float)mla_schedule_size(big_tiles, false));
        // Equal lengths: the exact busiest CTA (above). (The general ⌈items / CTAs⌉ × smallest bound for the others
        // made batch 128 with 4 × 8191 and 124 × 511 tokens take 10 pieces of the long ones for 5, each bound alike
        // but the 10's last piece tiny: attention 95 → 137 µs, its merge of 10 partials on one CTA; so not applied)
        if (equal) e = (float)kk[6 * C + lane];
        const float e_whole = __shfl_sync(0xffffffffu, e, 0);
        unsigned long long mine = ok ? ((unsigned long long)__float_as_uint(e) << 32) | (unsigned)k_longest : ~0ull;
        for (int o = 16; o > 0; o /= 2) mine = min(mine, __shfl_xor_sync(0xffffffffu, mine, o));
        if (lane == 0) *best = mine, sc[2] = __float_as_int(e_whole);
    }
    __syncthreads();
    const int k_best = (int)(*best & 0xffffffffu);
    const float e_best = __uint_as_float((unsigned)(*best >> 32)), e_whole = __int_as_float(sc[2]);
#if defined(LATTE_DEV_EXPERIMENTS)
    if (a.clocks && tid == 0) a.clocks[2] = clock64();
#endif
    float gain = equal ? kMlaSplitGainExact : kMlaSplitGain;
#if defined(LATTE_DEV_EXPERIMENTS)
    if (a.force_pieces > 0) gain = 1e30f;
#endif
    if (*best == ~0ull || k_best == 1 || !(e_best < gain * e_whole)) return n_units;
    const int P = max(2, (((longest + k_best - 1) / k_best) + 1) & ~1);
    for (int u = tid; u < n_units; u += nthreads) kk[u] = key[u] > P ? (key[u] + P - 1) / P : 0;
    __syncthreads();
    int n_pieces = 0;  // this thread's
    for (int u = tid; u < n_units; u += nthreads) {
        const int k = kk[u];
        if (k == 0) continue;
        int slot = 0;  // the sequence's first slot: the pieces of the sequences before it (a deterministic list)
        const int4 *const kk4 = reinterpret_cast<const int4 *>(kk);
#pragma unroll 4
        for (int v4 = 0; v4 < u / 4; ++v4) {
            const int4 x = kk4[v4];
            slot += x.x + x.y + x.z + x.w;
        }
        for (int v = u & ~3; v < u; ++v) slot += kk[v];
        const int t = key[u], T = a.cache_lens[u] + 1;
        for (int i = 0; i < k; ++i) {
            MlaPiece piece;
            piece.b = u, piece.tok_begin = i * P * 64, piece.tok_end = min(T, (i + 1) * P * 64);
            piece.slots = mla_piece_slots(slot, k);
            a.pieces[slot + i] = piece;
            key[n_units + slot + i] = min(P, t - i * P);
        }
        if (a.seq_pieces) a.seq_pieces[u] = mla_piece_slots(slot, k);  // (zeroed at the writer's start, then a barrier)
        for (int g = 0; g < a.n_groups; ++g) a.counters[u * a.n_groups + g] = 0;
        key[u] = -1;
        n_pieces += k;
    }
    n_pieces = __reduce_add_sync(0xffffffffu, n_pieces);
    if (tid % 32 == 0) atomicAdd(&sc[1], n_pieces);
    __syncthreads();
    return n_units + sc[1];
}

// LPT's assignment (see mla_schedule_write) of the ranked units order[0, n_placed) to `columns` columns: col_of[u] and
// prefix_of[u] (the unit's place in its column's list). Returns the busiest column's load (quarter tiles), or INT_MAX
// where a column would take more than the list's rounds. Every thread calls it, columns <= blockDim.x; `col` holds
// kMlaLptColInts ints (16-byte aligned).
//
// LPT gives each unit in rank order to the least loaded column (ties: the lower). One unit at a time is a serial chain
// (~300 cycles a unit: 150 units ~45k cycles, longer than the query kernel whose spare CTA writes the list), but a run
// of m units of one size s has a closed form: its picks are the m smallest of the columns' sequences load_c + j·s
// (j ≥ 0, ties by column). Write load_c = q_c·s + r_c: column c's j-th value lies at level q_c + j, and within a level
// the values order by (r_c, c). With A(ℓ) = Σ_c max(0, ℓ − q_c) (the values below level ℓ), the run fills every level
// below ℓ* = the largest ℓ with A(ℓ) < m, and at ℓ* the first m − A(ℓ*) columns by (r_c, c) among those with q_c ≤ ℓ*.
// So column c takes max(0, ℓ* − q_c) units, one more if it is among those: the same loads as one unit at a time (which
// of the run's equal units lands where may differ). Runs shorter than kMlaLptRunMin go one at a time (warp 0).
static __device__ __noinline__ int mla_schedule_lpt(const int *key, const int *order, const int *run_end, int n_placed,
                                                    int columns, int *col, int *col_of, int *prefix_of) {
    const int tid = threadIdx.x, nthreads = blockDim.x, warp = tid / 32, lane = tid % 32;
    // per column: load (quarter tiles), items, and a run's q and r; per warp: its columns' picks in a run
    int *const c_load = col, *const c_items = c_load + kMlaLptColumnsMax, *const c_q = c_items + kMlaLptColumnsMax;
    int *const c_r = c_q + kMlaLptColumnsMax, *const warp_picks = c_r + kMlaLptColumnsMax;
    const int columns4 = (columns + 3) & ~3;  // c_q / c_r read as int4: the padding never eligible
    const bool has_column = tid < columns;
    if (tid < columns4) c_load[tid] = 0, c_items[tid] = 0, c_q[tid] = 0x7fffffff, c_r[tid] = 0;
    __syncthreads();
    for (int r0 = 0; r0 < n_placed;) {  // r0, its run and the runs after it: the same in every thread
        if (run_end[r0] - r0 < kMlaLptRunMin) {
            // short runs up to the next long one: warp 0, a unit at a time. The columns' (load << 10) | column in
            // registers, the argmin by one redux a unit.
            int r1 = r0;
            while (r1 < n_placed && run_end[r1] - r1 < kMlaLptRunMin) r1 = run_end[r1];
            if (warp == 0) {
                unsigned packed[kMlaLptRegs];
                int items[kMlaLptRegs];
#pragma unroll
                for (int j = 0; j < kMlaLptRegs; ++j) {  // a column past the last never wins
                    const int c = lane + 32 * j;
                    packed[j] = c < columns ? ((unsigned)c_load[c] << 10) | (unsigned)c : ~0u;
                    items[j] = c < columns ? c_items[c] : 0;
                }
                // 32 units at a time: lane i loads unit r + i and its size, broadcast by shuffles off the chain (loads
                // in the loop made it ~340 cycles a unit)
                for (int r = r0; r < r1; r += 32) {
                    const int my_u = r + lane < r1 ? order[r + lane] : 0;
                    const int my_size = r + lane < r1 ? mla_schedule_size_of_key(key[my_u]) : 0;
                    const int n = min(32, r1 - r);
                    for (int i = 0; i < n; ++i) {
                        const int u = __shfl_sync(0xffffffffu, my_u, i), size = __shfl_sync(0xffffffffu, my_size, i);
                        unsigned mine = packed[0];
#pragma unroll
                        for (int j = 1; j < kMlaLptRegs; ++j) mine = min(mine, packed[j]);
                        const unsigned c = __reduce_min_sync(0xffffffffu, mine) & 1023u;
                        // the owner lane updates its register (arithmetic on every j: a branch on j == c / 32 became
                        // an indexed access, i.e. the arrays in local memory)
#pragma unroll
                        for (int j = 0; j < kMlaLptRegs; ++j) {
                            const bool hit = c == (unsigned)(lane + 32 * j);
                            if (hit) col_of[u] = (int)c, prefix_of[u] = items[j];
                            packed[j] += hit ? (unsigned)size << 10 : 0u;
                            items[j] += hit ? 1 : 0;
                        }
                    }
                }
#pragma unroll
                for (int j = 0; j < kMlaLptRegs; ++j) {
                    const int c = lane + 32 * j;
                    if (c < columns) c_load[c] = (int)(packed[j] >> 10), c_items[c] = items[j];
                }
            }
            r0 = r1;
            __syncthreads();
            continue;
        }
        // a run of m ≥ kMlaLptRunMin units of size s at once (closed form above); thread c holds column c
        const int m = run_end[r0] - r0, s = mla_schedule_size_of_key(key[order[r0]]);  // s > 0
        int load = 0, items = 0, q = 0x7fffffff, r = 0;
        if (has_column) {
            load = c_load[tid], items = c_items[tid], q = load / s, r = load % s;
            c_q[tid] = q, c_r[tid] = r;
        }
        __syncthreads();
        int picks = 0, before = 0;  // column c's picks, and the picks of its warp's columns before it
        if (warp * 32 < columns) {  // the warps holding columns each find ℓ* and the picks at it (the same)
            int qv[kMlaLptRegs], kv[kMlaLptRegs];  // columns lane + 32 j: q, and (r << 8) | column (unique)
#pragma unroll
            for (int j = 0; j < kMlaLptRegs; ++j) {
                const int c = lane + 32 * j;
                qv[j] = c < columns ? c_q[c] : 0x7fffffff, kv[j] = c < columns ? (c_r[c] << 8) | c : 0x7fffffff;
            }
            int q_min = qv[0];
#pragma unroll
            for (int j = 1; j < kMlaLptRegs; ++j) q_min = min(q_min, qv[j]);
            q_min = __reduce_min_sync(0xffffffffu, q_min);
            const auto below = [&](int level) {  // A(level)
                int a = 0;
#pragma unroll
                for (int j = 0; j < kMlaLptRegs; ++j) a += max(0, level - qv[j]);
                return (int)__reduce_add_sync(0xffffffffu, (unsigned)a);
            };
            int lo = q_min, hi = q_min + m - 1;  // A(q_min) = 0 < m ≤ A(q_min + m)
            while (lo < hi) {
                const int mid = lo + (hi - lo + 1) / 2;
                if (below(mid) < m) lo = mid;
                else hi = mid - 1;
            }
            const int level = lo, below_level = below(level), eligible = below(level + 1) - below_level;
            const int at_level = m - below_level;  // picks at ℓ* itself (≥ 1), of `eligible` columns there
            // those picks: the columns at ℓ* whose (r << 8) | c is at most the at_level-th smallest (a search on it)
            int k_pick = 0x7fffffff;
            if (at_level < eligible) {
                int k_lo = 0, k_hi = (s << 8) - 1;
                while (k_lo < k_hi) {
                    const int mid = k_lo + (k_hi - k_lo) / 2;
                    int n = 0;
#pragma unroll
                    for (int j = 0; j < kMlaLptRegs; ++j) n += qv[j] <= level && kv[j] <= mid;
                    if ((int)__reduce_add_sync(0xffffffffu, (unsigned)n) >= at_level) k_hi = mid;
                    else k_lo = mid + 1;
                }
                k_pick = k_lo;
            }
            if (has_column && q <= level) picks = level - q + (((r << 8) | tid) <= k_pick ? 1 : 0);
            int incl = picks;  // the warp's inclusive scan
#pragma unroll
            for (int o = 1; o < 32; o *= 2) {
                const int t = __shfl_up_sync(0xffffffffu, incl, o);
                incl += lane >= o ? t : 0;
            }
            before = incl - picks;
            if (lane == 31) warp_picks[warp] = incl;
        }
        __syncthreads();
        if (has_column) {  // column c takes the run's units [first, first + picks)
            int first = before;
            for (int w = 0; w < warp; ++w) first += warp_picks[w];
            for (int j = 0; j < picks; ++j) {
                const int u = order[r0 + first + j];
                col_of[u] = tid, prefix_of[u] = items + j;
            }
            c_load[tid] = load + picks * s, c_items[tid] = items + picks;
        }
        r0 += m;
        __syncthreads();
    }
    int busiest = 0;
    bool overflow = false;
    if (has_column) busiest = c_load[tid], overflow = c_items[tid] > kMlaScheduleRounds;
    busiest = (int)__reduce_max_sync(0xffffffffu, (unsigned)busiest);
    overflow = __any_sync(0xffffffffu, overflow);
    if (lane == 0) warp_picks[warp] = overflow ? 0x7fffffff : busiest;  // blockDim ≤ 1024: 32 warps
    __syncthreads();
    int out = 0;
    for (int w = 0; w < nthreads / 32; ++w) out = max(out, warp_picks[w]);
    return out;
}

// The snake's busiest CTA (quarter tiles) up to which LPT is not tried: 1/kMlaSnakeEnoughDiv above a lower bound of
// any assignment's, max(the largest unit, the average load: `total` over the units, each on n_groups of the grid's CTAs).
// (1/16 gained as much at batch 64 and read a little worse at batch 128: bench/results/2026-11-29-h200-stream-deal)
constexpr int kMlaSnakeEnoughDiv = 32;
static __host__ __device__ __forceinline__ int mla_schedule_snake_enough(int largest, int total, int n_groups, int grid) {
    const int average = (int)(((long long)total * n_groups + grid - 1) / grid);
    const int bound = largest > average ? largest : average;
    return bound + bound / kMlaSnakeEnoughDiv;
}

// Writes the whole list. Every thread of the block calls it (it has block barriers; blockDim.x a multiple of 32);
// `smem` holds kMlaScheduleSmemInts ints.
// Two assignments of the ranked units, the one with the less loaded busiest CTA written (loads in quarter tiles,
// mla_schedule_size):
//   the snake (above): round k gives ranks [k·grid, (k+1)·grid) one each, alternating direction. Near ideal for
//     lengths spread evenly (the longest pairs with the shortest), poor where a few pieces take the first CTAs and
//     the many short ones wrap around onto them again (4 × 8K among 124 × 512, a model of both: the busiest CTA
//     53.5 tiles under the snake, 36 under LPT, the average 31);
//   LPT (longest processing time first): the units in rank order, each to the least loaded of grid / n_groups
//     columns, all its head groups to that column's CTA of each group (so they run side by side, as in the snake).
//     A run of equal-size units at once (mla_schedule_lpt), only where pieces were made (whole units: the snake, as
//     measured before the pieces), not where a column would take more than the list's rounds, and not where the
//     snake's busiest CTA is already within 1/32 of a lower bound of any assignment's (mla_schedule_snake_enough).
// The ranking is O(units²) over the block: 128 units take ~1 µs on one CTA.
static __device__ __noinline__ void mla_schedule_write(const MlaScheduleArgs &a, int *smem) {
    using attention_detail::length_is_valid;
    // sc: mla_schedule_split's [0..5], then [6] the units placed, [7] their total size, [8] / [9] the snake's / LPT's
    // busiest CTA
    int *const key = smem, *const sc = key + kMlaScheduleUnitsMax;
    int *const rank_of = sc + kMlaScheduleScratch, *const prefix_of = rank_of + kMlaScheduleUnitsMax;
    int *const col_of = prefix_of + kMlaScheduleUnitsMax, *const order = col_of + kMlaScheduleUnitsMax;
    int *const run_end = order + kMlaScheduleUnitsMax;  // per rank: the end of its run of equal sizes
    int *const load = run_end + kMlaScheduleUnitsMax;   // [grid]: the snake's
    int *const lpt_columns = load + kMlaScheduleCtasMax;
    const int tid = threadIdx.x, nthreads = blockDim.x, grid = a.grid, n_groups = a.n_groups;
    const int n_units = a.n_items / n_groups, rounds = mla_schedule_rounds(a.n_items, grid);
    const auto stamp = [&](int i) {
#if defined(LATTE_DEV_EXPERIMENTS)
        if (a.clocks && tid == 0) {
            if (i == 0)
                for (int j = 1; j < 8; ++j) a.clocks[j] = 0;  // a step not reached reads 0
            a.clocks[i] = clock64();
        }
#else
        (void)i;
#endif
    };
    stamp(0);
    // index order first, −1 in the rounds past the last
    for (int e = tid; e < grid * kMlaScheduleRounds; e += nthreads) {
        const int c = e / kMlaScheduleRounds, k = e % kMlaScheduleRounds;
        a.list[e] = k < rounds && c + k * grid < a.n_items ? c + k * grid : -1;
    }
    // every sequence whole until split (one split: the units are the sequences)
    if (a.seq_pieces)
        for (int b = tid; b < n_units; b += nthreads) a.seq_pieces[b] = 0;
    const bool may_split = a.pieces != nullptr && a.n_splits == 1;
    if ((rounds < 2 && !may_split) || n_units > kMlaScheduleUnitsMax) return;
    // key[u] = tiles of unit u (0: reads nothing; −1: a split sequence or padding to a multiple of 4, never counted)
    for (int u = tid; u < n_units; u += nthreads) {
        const int split = u % a.n_splits, len = a.cache_lens[u / a.n_splits], T = len + 1;
        const int tok_begin = split * a.split_len, tok_end = min(T, tok_begin + a.split_len);
        key[u] = length_is_valid(len, a.max_cache_len) && tok_begin < tok_end ? (tok_end - tok_begin + 63) / 64 : 0;
    }
    __syncthreads();
    bool same = true;
    for (int u = tid; u < n_units; u += nthreads) same &= key[u] == key[0];
    stamp(1);
    // equal lengths: index order, unless there are more piece slots than sequences (a static split that runs as one
    // split: pieces then do what the static splits did, cut from the lengths of this run rather than the longest)
    const bool split_equal = may_split && a.piece_slots > n_units;
    const bool all_same = __syncthreads_and(same);
    if (all_same && !split_equal) return;
    const bool equal = all_same && key[0] > 0;  // (every length valid and the same: priced exactly)
    const int n_rank = may_split ? mla_schedule_split(a, key, col_of, n_units, equal) : n_units;  // pieces included
    stamp(3);
    if (n_rank == n_units && rounds < 2) return;  // one round of whole items: index order
    // equal lengths cut into pieces: every sequence is, into as many pieces of the same sizes, so the pieces' items in
    // index order are as balanced as any ranking (and the writer, which runs beside the query kernel on its spare SM,
    // ends ~25k cycles sooner than with the ranking and LPT: the layer's query phase took +4-5 µs with them)
    if (all_same && n_rank > n_units) {
        const int first = n_units * n_groups, n_piece_items = (n_rank - n_units) * n_groups;
        for (int e = tid; e < grid * kMlaScheduleRounds; e += nthreads) {
            const int c = e / kMlaScheduleRounds, k = e % kMlaScheduleRounds, i = c + k * grid;
            a.list[e] = i < n_piece_items ? first + i : -1;
        }
        stamp(6);
        return;
    }
    const int n_pad = (n_rank + 3) & ~3;
    for (int u = tid; u < n_pad; u += nthreads)
        key[u] = u < n_rank && key[u] >= 0 ? mla_schedule_rank_key(key[u], u >= n_units, u) : -1;
    for (int c = tid; c < grid; c += nthreads) load[c] = 0;
    if (tid == 0) sc[6] = 0, sc[7] = 0, sc[8] = 0, sc[9] = 0;
    __syncthreads();
    // each unit's rank (largest key first, ties by index), the units in rank order, and the end of each rank's run of
    // equal keys, i.e. sizes (for LPT)
    const int4 *const key4 = reinterpret_cast<const int4 *>(key);
    int placed = 0;  // this thread's units ranked
    for (int u = tid; u < n_rank; u += nthreads) {
        const int ku = key[u];
        if (ku < 0) {  // a sequence split into pieces
            rank_of[u] = -1;
            continue;
        }
        const int ku_class_end = ku | 1023;  // above every key of u's class
        int r = 0, longer = 0;               // keys above u's, and above its class (the start of u's run)
#pragma unroll 4
        for (int v4 = 0; v4 < n_pad / 4; ++v4) {
            const int4 k4 = key4[v4];
            r += (k4.x > ku) + (k4.y > ku) + (k4.z > ku) + (k4.w > ku);
            longer += (k4.x > ku_class_end) + (k4.y > ku_class_end) + (k4.z > ku_class_end) + (k4.w > ku_class_end);
        }
        rank_of[u] = r, order[r] = u, prefix_of[u] = longer;  // prefix_of: LPT's, later
        ++placed;
    }
    placed = __reduce_add_sync(0xffffffffu, placed);
    if (tid % 32 == 0) atomicAdd(&sc[6], placed);
    __syncthreads();
    // the run ends (LPT reads them at each run's start): the last unit of a class writes its run's end at the run's start
    for (int r = tid; r < sc[6]; r += nthreads) {
        const int u = order[r];
        if (r + 1 == sc[6] || (key[order[r + 1]] >> 10) != (key[u] >> 10)) run_end[prefix_of[u]] = r + 1;
    }
    stamp(4);
    // the snake's loads (to compare with LPT's, where it runs), and the units' total size (LPT's loads in 22 bits)
    int total = 0;
    for (int u = tid; u < n_rank && n_rank > n_units; u += nthreads) {
        const int r = rank_of[u];
        if (r < 0) continue;
        const int size = mla_schedule_size_of_key(key[u]);
        total += size;
        for (int g = 0; g < n_groups; ++g) {
            const int rank = r * n_groups + g, k = rank / grid, i = rank % grid;
            atomicAdd(&load[(k & 1) ? grid - 1 - i : i], size);
        }
    }
    total = (int)__reduce_add_sync(0xffffffffu, (unsigned)total);
    if (tid % 32 == 0) atomicAdd(&sc[7], total);
    __syncthreads();
    // LPT, only where the list holds pieces (else the snake, as before the pieces), and not where static splits run as
    // one split with run-time pieces (piece_slots > n_units: batches of about 8-32). There the items are about one round
    // (at most ~grid pieces and short sequences), where the snake's busiest CTA is the largest item, as LPT's: equal in
    // a model of batches 8-48 at lengths uniform in [1, 8191]; and LPT's chain (~300 cycles a unit) made the writer
    // outlast the query kernel it runs beside (batch 32: the query phase +9 µs with it)
    // The snake's busiest CTA first: where it is within 1/32 of a lower bound of every assignment's (the largest unit,
    // the average load), LPT has little to win, and its chain is skipped (lengths uniform in [1, 8191] at batch 64:
    // its ~64 units one at a time made the query phase 47-49 µs instead of 33)
    int snake_max = 0;
    for (int c = tid; c < grid; c += nthreads) snake_max = max(snake_max, load[c]);
    snake_max = __reduce_max_sync(0xffffffffu, snake_max);
    if (tid % 32 == 0) atomicMax(&sc[8], snake_max);
    __syncthreads();
    const int columns = grid / n_groups, n_placed = sc[6];
    const bool lpt_ok = n_rank > n_units && a.piece_slots <= n_units && columns >= 1 &&
                        columns <= min(kMlaLptColumnsMax, nthreads) && sc[7] < (1 << 22) && n_placed > 0 &&
                        sc[8] > mla_schedule_snake_enough(mla_schedule_size_of_key(key[order[0]]), sc[7], n_groups, grid);
    if (lpt_ok) {
        const int busiest = mla_schedule_lpt(key, order, run_end, n_placed, columns, lpt_columns, col_of, prefix_of);
        if (tid == 0) sc[9] = busiest;
    }
    stamp(5);
    __syncthreads();  // LPT's busiest (thread 0's), before every thread compares it
    const bool lpt = lpt_ok && sc[9] < sc[8];
    for (int e = tid; e < grid * kMlaScheduleRounds; e += nthreads) a.list[e] = -1;  // the ranks replace index order
    __syncthreads();
    for (int u = tid; u < n_rank; u += nthreads) {
        const int r = rank_of[u];
        if (r < 0) continue;
        for (int g = 0; g < n_groups; ++g) {
            if (lpt) {
                a.list[(g * columns + col_of[u]) * kMlaScheduleRounds + prefix_of[u]] = u * n_groups + g;
            } else {
                const int rank = r * n_groups + g, k = rank / grid, i = rank % grid;
                a.list[((k & 1) ? grid - 1 - i : i) * kMlaScheduleRounds + k] = u * n_groups + g;
            }
        }
    }
    __syncthreads();
    stamp(6);
}
#endif

}  // namespace latte
