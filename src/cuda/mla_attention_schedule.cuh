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
// longest first (ties: the lower item first); round k holds ranks [k·grid, (k+1)·grid) and gives rank k·grid + i to CTA
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
// lengths (its longest item is about the balanced share).
#pragma once

#include "cuda/mla_attention.cuh"
#include "cuda/mla_attention_common.cuh"

namespace latte {

constexpr int kMlaScheduleGroupHeads = 64;  // heads per item (the seesaw kernel's wgmma M)

// The splitting's cost model (tiles of 64 tokens; a pair of tiles is ~5 µs on an H200): an item's fixed cost (its Q,
// the tail, the row sums and the output: ~8 µs at 512), a piece's share of the combine (its 128 KB of fp32 partial read
// back from L2), the gain a split must promise over whole items, and the piece counts tried for the longest sequence.
constexpr float kMlaItemFixedTiles = 3.0f, kMlaPieceCombineTiles = 0.5f, kMlaSplitGain = 0.85f;
constexpr int kMlaSplitCandidates = 32;  // a warp's lanes
// A piece: the sequence b, its tokens [tok_begin, tok_end), and (slot0 << 10) | k: the first slot of the sequence's k
// pieces (consecutive slots) and k (<= kMlaSplitCandidates < 1024)
struct MlaPiece {
    int b, tok_begin, tok_end, slots;
};
static_assert(kMlaSplitCandidates < 1024, "a piece count fits 10 bits");
// The pieces ([batch] MlaPiece) and their counters ([batch][n_groups] int) follow the list in the attention's
// workspace (mla_attention_workspace_bytes counts them)
static __host__ __device__ __forceinline__ MlaPiece *mla_schedule_pieces(int *list) {
    return reinterpret_cast<MlaPiece *>(list + (size_t)kMlaScheduleCtasMax * kMlaScheduleRounds);
}
static __host__ __device__ __forceinline__ int *mla_schedule_counters(int *list, int batch) {
    return reinterpret_cast<int *>(mla_schedule_pieces(list) + batch);
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
    // dev builds: clock64 at the writer's steps (start, keys, split decided, pieces written, ranked, LPT, end)
    long long *clocks = nullptr;
};

// Rounds of the list (at most kMlaScheduleRounds, else the kernel takes index order without a list).
static __host__ __device__ __forceinline__ int mla_schedule_rounds(int n_items, int grid) {
    return (n_items + grid - 1) / grid;
}

#if defined(__CUDACC__)
// The writer's shared memory (ints): the units' keys (tiles) and scratch, then per unit its rank, its round and column
// under LPT (see mla_schedule_write), the units in rank order, then per CTA the snake's load. 24.6 KB.
constexpr int kMlaScheduleScratch = 12;
constexpr int kMlaScheduleSmemInts = 5 * kMlaScheduleUnitsMax + kMlaScheduleScratch + kMlaScheduleCtasMax;
// LPT's bounds: columns in registers (kMlaLptRegs a lane of warp 0), units (one redux each, ~100 cycles: 512 ~25 µs)
constexpr int kMlaLptRegs = 5, kMlaLptUnitsMax = 512;

// A unit's cost for the assignments, in quarter tiles: its tiles, the item's fixed cost, a piece's combine share
// (0: reads nothing)
constexpr int kMlaItemFixedQ = (int)(4.f * kMlaItemFixedTiles), kMlaPieceCombineQ = (int)(4.f * kMlaPieceCombineTiles);
static __device__ __forceinline__ int mla_schedule_size(int tiles, bool piece) {
    return tiles > 0 ? 4 * tiles + kMlaItemFixedQ + (piece ? kMlaPieceCombineQ : 0) : 0;
}

// Splits the sequences longer than the best piece length into pieces (see above), if that promises a gain: writes the
// pieces, zeroes their counters, sets key[n_units + slot] to each piece's tiles and key[b] = −1 for a split sequence.
// Returns the units to rank (n_units + pieces). Every thread calls it; `kk` is scratch of n_units ints.
static __device__ __noinline__ int mla_schedule_split(const MlaScheduleArgs &a, int *key, int *kk, int n_units) {
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
    for (int i = tid; i < 3 * kMlaSplitCandidates; i += nthreads) kk[i] = 0;
    __syncthreads();
    const int k_longest = lane + 1;
    const int P_lane = max(2, (((longest + k_longest - 1) / k_longest) + 1) & ~1);  // whole pairs
    const float inv_p = 1.f / (float)P_lane;
    {
        int units = 0, pieces = 0, cost = 0;
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
                pieces += k, units += k;
                cost += 4 * t + k * (kMlaItemFixedQ + kMlaPieceCombineQ);
            } else {
                units += 1;
                cost += mla_schedule_size(t, false);
            }
        }
        atomicAdd(&kk[lane], units);
        atomicAdd(&kk[kMlaSplitCandidates + lane], pieces);
        atomicAdd(&kk[2 * kMlaSplitCandidates + lane], cost);
    }
    __syncthreads();
    if (warp == 0) {
        const int units = kk[lane], pieces = kk[kMlaSplitCandidates + lane], cost = kk[2 * kMlaSplitCandidates + lane];
        // the same as whole items; slots (o_partial has [batch] of them); units (the key array, the list's rounds)
        const bool ok = (k_longest == 1 || P_lane < longest) && pieces <= n_units &&
                        n_units + pieces <= kMlaScheduleUnitsMax && units * a.n_groups <= kMlaScheduleRounds * grid;
        const float largest = (float)mla_schedule_size(min(P_lane, longest), pieces > 0);
        const float e = fmaxf(largest, (float)cost * (float)a.n_groups / (float)grid);  // quarter tiles
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
    if (*best == ~0ull || k_best == 1 || !(e_best < kMlaSplitGain * e_whole)) return n_units;
    const int P = max(2, (((longest + k_best - 1) / k_best) + 1) & ~1);
    for (int u = tid; u < n_units; u += nthreads) kk[u] = key[u] > P ? (key[u] + P - 1) / P : 0;
    __syncthreads();
    int n_pieces = 0;  // this thread's
    for (int u = tid; u < n_units; u += nthreads) {
        const int k = kk[u];
        if (k == 0) continue;
        int slot = 0;  // the sequence's first slot: the pieces of the sequences before it (a deterministic list)
        for (int v = 0; v < u; ++v) slot += kk[v];
        const int t = key[u], T = a.cache_lens[u] + 1;
        for (int i = 0; i < k; ++i) {
            MlaPiece piece;
            piece.b = u, piece.tok_begin = i * P * 64, piece.tok_end = min(T, (i + 1) * P * 64);
            piece.slots = (slot << 10) | k;
            a.pieces[slot + i] = piece;
            key[n_units + slot + i] = min(P, t - i * P);
        }
        for (int g = 0; g < a.n_groups; ++g) a.counters[u * a.n_groups + g] = 0;
        key[u] = -1;
        n_pieces += k;
    }
    n_pieces = __reduce_add_sync(0xffffffffu, n_pieces);
    if (tid % 32 == 0) atomicAdd(&sc[1], n_pieces);
    __syncthreads();
    return n_units + sc[1];
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
//     Sequential (one warp, a unit at a time), so only where pieces were made (whole units: the snake, as measured
//     before the pieces; LPT also cost ~13 µs there for nothing at uniform lengths), up to kMlaLptUnitsMax units, and
//     not where a column would take more than the list's rounds.
// The ranking is O(units²) over the block: 128 units take ~1 µs on one CTA.
static __device__ __noinline__ void mla_schedule_write(const MlaScheduleArgs &a, int *smem) {
    using attention_detail::length_is_valid;
    // sc: mla_schedule_split's [0..5], then [6] the units placed, [8] / [9] the snake's / LPT's busiest CTA
    int *const key = smem, *const sc = key + kMlaScheduleUnitsMax;
    int *const rank_of = sc + kMlaScheduleScratch, *const prefix_of = rank_of + kMlaScheduleUnitsMax;
    int *const col_of = prefix_of + kMlaScheduleUnitsMax, *const order = col_of + kMlaScheduleUnitsMax;
    int *const load = order + kMlaScheduleUnitsMax;  // [grid]: the snake's
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
    if (__syncthreads_and(same)) return;
    const int n_rank = may_split ? mla_schedule_split(a, key, col_of, n_units) : n_units;  // pieces included
    stamp(3);
    if (n_rank == n_units && rounds < 2) return;  // one round of whole items: index order
    const int n_pad = (n_rank + 3) & ~3;
    for (int u = n_rank + tid; u < n_pad; u += nthreads) key[u] = -1;
    for (int c = tid; c < grid; c += nthreads) load[c] = 0;
    if (tid == 0) sc[6] = 0, sc[8] = 0, sc[9] = 0;
    __syncthreads();
    // each unit's rank (longest first, ties by index), and the units in rank order
    const int4 *const key4 = reinterpret_cast<const int4 *>(key);
    int placed = 0;  // this thread's units ranked
    for (int u = tid; u < n_rank; u += nthreads) {
        const int ku = key[u];
        if (ku < 0) {  // a sequence split into pieces
            rank_of[u] = -1;
            continue;
        }
        int r = 0;  // units ranked before u
#pragma unroll 4
        for (int v4 = 0; v4 < n_pad / 4; ++v4) {
            const int4 k4 = key4[v4];
            const int v = 4 * v4;
            r += (k4.x > ku || (k4.x == ku && v < u)) + (k4.y > ku || (k4.y == ku && v + 1 < u)) +
                 (k4.z > ku || (k4.z == ku && v + 2 < u)) + (k4.w > ku || (k4.w == ku && v + 3 < u));
        }
        rank_of[u] = r, order[r] = u;
        ++placed;
    }
    placed = __reduce_add_sync(0xffffffffu, placed);
    if (tid % 32 == 0) atomicAdd(&sc[6], placed);
    stamp(4);
    // the snake's loads (to compare with LPT's, where it runs)
    for (int u = tid; u < n_rank && n_rank > n_units; u += nthreads) {
        const int r = rank_of[u];
        if (r < 0) continue;
        const int size = mla_schedule_size(key[u], u >= n_units);
        for (int g = 0; g < n_groups; ++g) {
            const int rank = r * n_groups + g, k = rank / grid, i = rank % grid;
            atomicAdd(&load[(k & 1) ? grid - 1 - i : i], size);
        }
    }
    __syncthreads();
    // LPT (warp 0), only where the list holds pieces (else the snake, as before the pieces): each unit in rank order
    // to the least loaded column (ties: the lower), its head groups to that column's CTA of each group. The columns'
    // (load << 10) | column in registers, the argmin by one redux a unit.
    const int columns = grid / n_groups, n_placed = sc[6];
    const bool lpt_ok = n_rank > n_units && columns >= 1 && columns <= 32 * kMlaLptRegs && n_placed <= kMlaLptUnitsMax;
    if (lpt_ok && tid < 32) {
        unsigned packed[kMlaLptRegs];
        int col_items[kMlaLptRegs];
#pragma unroll
        for (int j = 0; j < kMlaLptRegs; ++j)  // a column past the last never wins
            packed[j] = tid + 32 * j < columns ? (unsigned)(tid + 32 * j) : ~0u, col_items[j] = 0;
        unsigned busiest = 0;
        bool overflow = false;
        // 32 units at a time: lane i loads unit r0 + i and its size, broadcast by shuffles off the chain (loads in the
        // loop made it ~340 cycles a unit, clock64 in dev builds)
        for (int r0 = 0; r0 < n_placed; r0 += 32) {
            const int my_u = r0 + tid < n_placed ? order[r0 + tid] : 0;
            const int my_size = r0 + tid < n_placed ? mla_schedule_size(key[my_u], my_u >= n_units) : 0;
            const int n = min(32, n_placed - r0);
            for (int i = 0; i < n; ++i) {
                const int u = __shfl_sync(0xffffffffu, my_u, i), size = __shfl_sync(0xffffffffu, my_size, i);
                unsigned mine = packed[0];
#pragma unroll
                for (int j = 1; j < kMlaLptRegs; ++j) mine = min(mine, packed[j]);
                const unsigned col = __reduce_min_sync(0xffffffffu, mine) & 1023u;
                // the owner lane updates its register (arithmetic on every j: a branch on j == col / 32 became an
                // indexed access, i.e. the arrays in local memory)
#pragma unroll
                for (int j = 0; j < kMlaLptRegs; ++j) {
                    const bool hit = col == (unsigned)(tid + 32 * j);
                    if (hit) col_of[u] = (int)col, prefix_of[u] = col_items[j];
                    overflow |= hit && col_items[j] >= kMlaScheduleRounds;
                    packed[j] += hit ? (unsigned)size << 10 : 0u;
                    col_items[j] += hit ? 1 : 0;
                    busiest = max(busiest, hit ? packed[j] >> 10 : 0u);
                }
            }
        }
        busiest = __reduce_max_sync(0xffffffffu, busiest);
        if (__any_sync(0xffffffffu, overflow)) busiest = ~0u;
        if (tid == 0) sc[9] = (int)min(busiest, 0x7fffffffu);
    }
    stamp(5);
    int snake_max = 0;
    for (int c = tid; c < grid; c += nthreads) snake_max = max(snake_max, load[c]);
    snake_max = __reduce_max_sync(0xffffffffu, snake_max);
    if (tid % 32 == 0) atomicMax(&sc[8], snake_max);
    __syncthreads();
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
