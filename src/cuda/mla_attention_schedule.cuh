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
// items c, c + grid, ...), which is as balanced where lengths are equal.
#pragma once

#include "cuda/mla_attention.cuh"
#include "cuda/mla_attention_common.cuh"

namespace latte {

constexpr int kMlaScheduleGroupHeads = 64;  // heads per item (the seesaw kernel's wgmma M)

struct MlaScheduleArgs {
    const int32_t *cache_lens;
    int max_cache_len;
    int n_splits, split_len;  // the attention's split-KV schedule
    int n_groups;             // head groups of 64 heads
    int n_items;              // n_groups · n_splits · batch
    int grid;                 // the attention's CTAs (<= kMlaScheduleCtasMax)
    int *list;                // out: [grid][kMlaScheduleRounds] items, −1 where a CTA has none in the last round
};

// Rounds of the list (at most kMlaScheduleRounds, else the kernel takes index order without a list).
static __host__ __device__ __forceinline__ int mla_schedule_rounds(int n_items, int grid) {
    return (n_items + grid - 1) / grid;
}

#if defined(__CUDACC__)
// Writes the whole list. Every thread of the block calls it (it has block barriers); `key` is shared memory of
// kMlaScheduleUnitsMax ints. The ranking is O(units²) over the block: 128 units take ~1 µs on one CTA.
static __device__ __noinline__ void mla_schedule_write(const MlaScheduleArgs &a, int *key) {
    using attention_detail::length_is_valid;
    const int tid = threadIdx.x, nthreads = blockDim.x, grid = a.grid;
    const int n_units = a.n_items / a.n_groups, rounds = mla_schedule_rounds(a.n_items, grid);
    for (int e = tid; e < grid * rounds; e += nthreads) {  // index order first
        const int c = e / rounds, k = e % rounds;
        a.list[c * kMlaScheduleRounds + k] = c + k * grid < a.n_items ? c + k * grid : -1;
    }
    if (rounds < 2 || n_units > kMlaScheduleUnitsMax) return;
    // key[u] = tiles of unit u (0: reads nothing; −1: padding to a multiple of 4, never counted)
    const int n_pad = (n_units + 3) & ~3;
    for (int u = tid; u < n_pad; u += nthreads) {
        int n_tiles = -1;
        if (u < n_units) {
            const int split = u % a.n_splits, len = a.cache_lens[u / a.n_splits], T = len + 1;
            const int tok_begin = split * a.split_len, tok_end = min(T, tok_begin + a.split_len);
            n_tiles = length_is_valid(len, a.max_cache_len) && tok_begin < tok_end ? (tok_end - tok_begin + 63) / 64 : 0;
        }
        key[u] = n_tiles;
    }
    __syncthreads();  // also orders the index-order writes before the ranked ones that replace them
    bool same = true;
    for (int u = tid; u < n_units; u += nthreads) same &= key[u] == key[0];
    if (__syncthreads_and(same)) return;
    const int last = rounds - 1;
    for (int c = tid; c < grid; c += nthreads)  // the last round's CTAs that get no rank
        if (((last & 1) ? grid - 1 - c : c) >= a.n_items - last * grid) a.list[c * kMlaScheduleRounds + last] = -1;
    const int4 *const key4 = reinterpret_cast<const int4 *>(key);
    for (int u = tid; u < n_units; u += nthreads) {
        const int ku = key[u];
        int r = 0;  // units ranked before u
#pragma unroll 4
        for (int v4 = 0; v4 < n_pad / 4; ++v4) {
            const int4 k4 = key4[v4];
            const int v = 4 * v4;
            r += (k4.x > ku || (k4.x == ku && v < u)) + (k4.y > ku || (k4.y == ku && v + 1 < u)) +
                 (k4.z > ku || (k4.z == ku && v + 2 < u)) + (k4.w > ku || (k4.w == ku && v + 3 < u));
        }
        for (int g = 0; g < a.n_groups; ++g) {
            const int rank = r * a.n_groups + g, k = rank / grid, i = rank % grid;
            a.list[((k & 1) ? grid - 1 - i : i) * kMlaScheduleRounds + k] = u * a.n_groups + g;
        }
    }
}
#endif

}  // namespace latte
