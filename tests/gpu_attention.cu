// The attention over the latent cache alone (src/cuda/mla_attention*.cu, through mla_attention_launch: the kernel the
// layer runs on this GPU, its split schedule and combine), against a float64 reference, element by element.
//
//   o_lat[b][h] = Σ_t softmax_t(s[h][t]) · c[t],  s = bf16(bf16(q_lat·c[t] + q_pe·rope(k_pe[t], t)) · scale)
//   with the reference's bf16 rounding of the key rope (mla_attention_common.cuh), keys rotated at read or stored.
// Cases: unequal lengths (0, 1, 63, 64, 65, a tile pair boundary, max), invalid lengths (NaN rows), batch 1 (split
// over many blocks + combine), more (sequence, split, head group) items than SMs (the persistent seesaw kernel's CTAs
// take several each: random lengths with 1, 2, odd and even tile counts, invalid lengths and empty splits among them;
// dev builds can cap the CTAs with LATTE_MLA_SEESAW_CTAS to put every case through that), 16 / 64 / 128 heads,
// padded strides, skewed lengths (a few long sequences among many short ones), each kernel schedule (the seesaw
// kernel's balanced one, longest first, and index order: MlaAttentionParams::balance); cache rows past each sequence's end and the
// padding of q are NaN (a kernel that reads them fails), o_lat's rows are NaN before the call.
// Tolerance: |o − ref| ≤ 4e-3 · max|ref| + 1e-2 · |ref| + 3e-3 · Σ_t p_t |c_t| (P is rounded to bf16 before P·V, as the
// reference's bmm does: within 2^-9 Σ p |c|; the sum order differs) + o's change if a score took its other bf16 rounding
// wherever the exact dot lies within 2^-21 Σ|q·k| of a rounding step (an fp32 sum in any order may land on either side:
// found with the tensor-core tail, 1 element of 5.2 M at 1.5× the other terms, len 2, the CUDA-core tail on the same
// side as the reference there; the test prints how many elements needed it).
// LATTE_ATTN_TIMING=1: then the timing table (=2: the table alone, e.g. for a build with timing experiments) at the reference shapes (batch 128, 128 heads, every sequence at the
// length; and lengths uniform in [1, 6144], fixed seed, under both schedules): median of 15 launches, each after a
// read-only L2 flush: µs, TFLOP/s (2·B·H·T·(576 + 512)), cache TB/s.
// LATTE_ATTN_CAPACITY=C (timing and profile): each sequence's cache takes C rows (the batch stride, as a cache
// allocated for C tokens, e.g. latte-bench's 8192) instead of exactly L + 1.
// LATTE_ATTN_SCALES="q,c" (timing and profile): the standard deviations of q and of the cache (default 0.577 both;
// the layer's own data are ~1 both: latte-bench fills x, the cache and the weights as the reference does).
// LATTE_ATTN_FLUSH=read|write|none|burst (timing): what runs before each timed launch: the read-only L2 flush
// (default), a write of the same buffer (leaves L2 full of dirty lines, as the layer's query kernel leaves q_attn),
// nothing (the L2 holding the previous launch's lines; the host waits for each launch, so the start event is recorded
// on an idle GPU and the time includes the launch latency: ~7 µs more at every length on an H100), or burst: 20
// launches queued back to back between two events (no host wait, no idle GPU), per launch, median of 3.
// LATTE_TEST_SEED=S: other random data and lengths (default: a fixed seed); LATTE_TEST_FILTER=substring: only the cases
// whose name holds it.
// LATTE_ATTN_PROFILE=L: one warm-up and one launch at length L (batch 128, 128 heads) and nothing else (for ncu).
// Dev builds (-DLATTE_DEV_EXPERIMENTS), with LATTE_MLA_WGMMA_EXPERIMENT=8: LATTE_ATTN_TRACE=L the item and pair timelines
// of one launch alone (after the flush of LATTE_ATTN_FLUSH); LATTE_ATTN_TRACE_LAYER=L the same inside the whole layer
// (public API, batch 128, graph replays; NOTES "The attention's code, cold in the layer").
// Exit 77 (ctest: skipped) without a GPU.
#include "cuda/mla_attention.cuh"
#include "cuda/mla_attention_schedule.cuh"
#include "latte.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "cuda_test_util.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace latte;
typedef __nv_bfloat16 bf16;

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static uint64_t rng() {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static float uniform() { return (float)((rng() >> 11) * (1.0 / 9007199254740992.0)) * 2.f - 1.f; }

// host bf16 by bit patterns (round to nearest even; the inputs are finite)
static uint16_t bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float val(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static float bf(float x) { return val(bits(x)); }
static const uint16_t kNaN = 0x7fc1;

struct Case {
    const char *name;
    int batch, n_heads, max_cache_len;
    std::vector<int> lens;  // batch entries
    bool rotate;            // keys rotated at read (reference convention)
    int q_pad, cache_pad;   // extra elements per q head row / per cache row
    float q_scale, c_scale;
    bool discard_q = false;  // MlaAttentionParams::discard_q (see run_case)
    int balance = 1;         // MlaAttentionParams::balance: 1 longest first in a snake over the CTAs, 0 index order
    // long sequences split into pieces at run time (mla_attention_schedule.cuh): 1 the schedule must have made some,
    // 0 none (checked where the seesaw kernel runs with its list: a Hopper GPU, no kernel or CTA count forced), −1 either.
    // 0 or 1 also run one split per sequence (as the layer's batch of 128 does at every length), whatever the static
    // schedule would choose for this (batch, max length): pieces are made only then
    int expect_pieces = -1;
    // MlaAttentionParams::runtime_split: 1 a static schedule of 2..kMlaRuntimeSplitsMax splits runs as one split with
    // pieces cut at run time (where the seesaw kernel runs), 0 the static splits and the combine kernel
    int runtime_split = 1;
    // where the static splits run as one with run-time pieces: 1 the schedule must have made pieces, 0 none, −1 either
    int expect_runtime_pieces = -1;
    // MlaAttentionParams::discard_partial: the merge drops the partials it read from L2 unwritten. The workspace then
    // starts as NaN in DRAM (pushed out of L2), so a line dropped before its last read, or one outside the partial rows
    // (the LSE, the list), reads NaN back and fails the comparison
    bool discard_partial = false;
};

// Whether this process runs the seesaw kernel with its own list at the natural grid (the pieces' expectation holds)
static bool seesaw_as_released() {
    int dev = 0, major = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    const char *kernel = getenv("LATTE_MLA_ATTENTION"), *ctas = getenv("LATTE_MLA_SEESAW_CTAS");
    return major == 9 && mla_attention_wgmma_available(dev) && (!kernel || !*kernel || !strcmp(kernel, "wgmma3")) &&
           !(ctas && *ctas);
}

static void run_case(const Case &k, int sms) {
    const int B = k.batch, H = k.n_heads, L = k.max_cache_len;
    const int64_t q_head = 576 + k.q_pad, q_batch = (int64_t)H * q_head;
    const int64_t row = 576 + k.cache_pad, cap = L + 3, c_batch = cap * row;
    std::vector<uint16_t> q((size_t)B * q_batch, kNaN), cache((size_t)B * c_batch, kNaN);
    std::vector<uint16_t> cos_t((size_t)(L + 1) * 64), sin_t((size_t)(L + 1) * 64);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int d = 0; d < 576; d++) q[b * q_batch + h * q_head + d] = bits(uniform() * k.q_scale);
    for (int b = 0; b < B; b++) {
        const int T = k.lens[b] >= 0 && k.lens[b] <= L ? k.lens[b] + 1 : 0;
        for (int t = 0; t < T; t++)
            for (int d = 0; d < 576; d++) cache[b * c_batch + t * row + d] = bits(uniform() * k.c_scale);
    }
    for (size_t i = 0; i < cos_t.size(); i++) cos_t[i] = bits(uniform()), sin_t[i] = bits(uniform());

    int n_splits = 0, split_len = 0;
    mla_attention_schedule(B, H, L, sms, &n_splits, &split_len);
    if (k.expect_pieces >= 0) n_splits = 1, split_len = one_split_len(L);
    bf16 *d_q, *d_cache, *d_cos, *d_sin, *d_o;
    int *d_lens;
    float *d_ws;
    const size_t o_elems = (size_t)B * H * 512;
    // discard_q: q sits between two guard lines, and is written the way the layer's query kernel leaves it: stale
    // values (NaN, guards 0x1111) in DRAM, the real ones (guards 0x2222) dirty in L2 (a kernel's stores after an L2
    // flush). A discard the launcher should have refused (splits re-read q; padded rows) then feeds stale NaN to a
    // later read, and a line dropped outside q shows in a guard.
    constexpr size_t kGuard = 64;  // elements: one 128-byte line
    bf16 *d_q_alloc = nullptr;
    CK(cudaMalloc(&d_q_alloc, (q.size() + 2 * kGuard) * 2));
    d_q = d_q_alloc + kGuard;
    if (k.discard_q) {
        std::vector<uint16_t> stale(q.size() + 2 * kGuard, kNaN), fresh(q.size() + 2 * kGuard, 0x2222);
        for (size_t i = 0; i < kGuard; i++) stale[i] = stale[stale.size() - 1 - i] = 0x1111;
        std::copy(q.begin(), q.end(), fresh.begin() + kGuard);
        write_dirty_over_stale(d_q_alloc, fresh.data(), stale.data(), fresh.size());
    } else {
        CK(cudaMemcpy(d_q, q.data(), q.size() * 2, cudaMemcpyHostToDevice));
    }
    CK(cudaMalloc(&d_cache, cache.size() * 2));
    CK(cudaMalloc(&d_cos, cos_t.size() * 2));
    CK(cudaMalloc(&d_sin, sin_t.size() * 2));
    CK(cudaMalloc(&d_o, o_elems * 2));
    CK(cudaMalloc(&d_lens, B * sizeof(int)));
    const size_t ws_bytes = mla_attention_workspace_bytes(B, H, n_splits);
    CK(cudaMalloc(&d_ws, ws_bytes));
    if (k.discard_partial) {
        const std::vector<uint16_t> nan_ws(ws_bytes / 2, 0xffff);  // fp32 NaN in pairs
        write_dirty_over_stale(d_ws, nan_ws.data(), nan_ws.data(), nan_ws.size());
    }
    CK(cudaMemcpy(d_cache, cache.data(), cache.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_cos, cos_t.data(), cos_t.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_sin, sin_t.data(), sin_t.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_lens, k.lens.data(), B * sizeof(int), cudaMemcpyHostToDevice));
    std::vector<uint16_t> o_init(o_elems, kNaN);
    CK(cudaMemcpy(d_o, o_init.data(), o_elems * 2, cudaMemcpyHostToDevice));

    MlaAttentionParams p{};
    p.q = d_q, p.q_batch_stride = q_batch, p.q_head_stride = q_head;
    p.kv_cache = d_cache, p.cache_batch_stride = c_batch, p.cache_row_stride = row;
    p.cache_lens = d_lens, p.max_cache_len = L;
    p.rope_cos = k.rotate ? d_cos : nullptr, p.rope_sin = k.rotate ? d_sin : nullptr;
    p.softmax_scale = 1.f / sqrtf(192.f);
    p.batch = B, p.n_heads = H, p.n_splits = n_splits, p.split_len = split_len;
    p.o_partial = d_ws, p.lse_partial = d_ws + (size_t)n_splits * B * H * 512;
    p.schedule = reinterpret_cast<int *>(reinterpret_cast<char *>(d_ws) + mla_attention_schedule_offset(B, H, n_splits));
    p.o_lat = d_o;
    p.discard_q = k.discard_q ? 1 : 0;
    p.discard_partial = k.discard_partial ? 1 : 0;
    p.balance = k.balance;
    // the list and the pieces start as −1 (a list no launch wrote shows no pieces); two launches, o poisoned again
    // between them: the second must not lean on anything the first left (the pieces' counters are the writer's to
    // zero). With discard_q one: the first drops q's lines.
    p.runtime_split = k.runtime_split;
    // the static splits as the seesaw kernel runs them: one split with up to `slots` run-time pieces, or as they are
    // (slots: where there are no run-time pieces, the one-split workspace's [batch] rows)
    int grid = 0, runtime_slots = 0;
    bool seesaw_runs = false;
    {
        int dev = 0;
        CK(cudaGetDevice(&dev));
        const char *kernel = getenv("LATTE_MLA_ATTENTION");
        seesaw_runs = mla_attention_wgmma_available(dev) && (!kernel || !*kernel || !strcmp(kernel, "wgmma3"));
        grid = mla_attention_seesaw_grid(p, dev);
        runtime_slots = seesaw_runs ? mla_attention_runtime_split(p, grid) : 0;
    }
    const int run_splits = runtime_slots > 0 ? 1 : n_splits;
    const int run_split_len = runtime_slots > 0 ? one_split_len(L) : split_len;
    const int slots = runtime_slots > 0 ? runtime_slots : B;
    const size_t list_ints = (size_t)kMlaScheduleCtasMax * kMlaScheduleRounds;
    // the list, the pieces, their counters and each sequence's pieces: all poisoned (the writer's to write each run)
    int *const seq_pieces = mla_schedule_seq_pieces(p.schedule, B, (H + 63) / 64);
    CK(cudaMemset(p.schedule, 0xff, (size_t)((char *)(seq_pieces + B) - (char *)p.schedule)));
    for (int launch = 0; launch < (k.discard_q ? 1 : 2); launch++) {
        CK(cudaMemcpy(d_o, o_init.data(), o_elems * 2, cudaMemcpyHostToDevice));
        CK(mla_attention_launch(p, 0));
        CK(cudaDeviceSynchronize());
    }
    // the pieces the list deals (units past batch · n_splits), and the list itself where one was written: every item
    // exactly once, a split sequence's whole items never, each of its pieces in every head group
    int n_piece_items = 0, list_bad = 0;
    {
        std::vector<int> list(list_ints);
        std::vector<MlaPiece> pieces(slots);
        CK(cudaMemcpy(list.data(), p.schedule, list_ints * sizeof(int), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(pieces.data(), mla_schedule_pieces(p.schedule), slots * sizeof(MlaPiece), cudaMemcpyDeviceToHost));
        const int n_groups = (H + 63) / 64, n_units = B * run_splits;
        std::vector<int> seen((size_t)(n_units + slots) * n_groups, 0);
        std::vector<char> split(B, 0);
        bool written = false;
        for (int v : list) {
            if (v < 0) continue;
            written = true;
            if (v >= (int)seen.size()) {
                list_bad++;
                continue;
            }
            seen[v]++;
            if (v / n_groups >= n_units) {
                n_piece_items++;
                const MlaPiece &pc = pieces[v / n_groups - n_units];
                if (pc.b < 0 || pc.b >= B) list_bad++;
                else split[pc.b] = 1;
            }
        }
        for (size_t v = 0; written && v < seen.size(); v++) {
            const int unit = (int)(v / n_groups);
            const bool want = unit < n_units ? !split[unit / run_splits]
                                             : seen[(size_t)unit * n_groups] > 0 || seen[(size_t)unit * n_groups + n_groups - 1] > 0;
            list_bad += seen[v] != (want ? 1 : 0);
        }
        const std::vector<int> &lens = k.lens;
        for (int slot = 0; written && slot < slots && n_piece_items; slot++) {  // a split sequence's pieces: all dealt
            if (!seen[(size_t)(n_units + slot) * n_groups]) continue;
            const MlaPiece &pc = pieces[slot];
            const int slot0 = mla_piece_slot0(pc.slots), k = mla_piece_count(pc.slots);
            for (int j = 0; j < k; j++)
                list_bad += slot0 + j >= slots || !seen[(size_t)(n_units + slot0 + j) * n_groups] || pieces[slot0 + j].b != pc.b;
            // the pieces cover the sequence's tokens: in order, contiguous, from 0 to T
            list_bad += pc.b < 0 || pc.b >= B || pieces[slot0].tok_begin != 0 ||
                        pieces[slot0 + k - 1].tok_end != (pc.b >= 0 && pc.b < B ? lens[pc.b] + 1 : -1);
            for (int j = 1; j < k; j++) list_bad += pieces[slot0 + j].tok_begin != pieces[slot0 + j - 1].tok_end;
        }
        // with run-time pieces, the combine's table: each split sequence's first slot and count, 0 for the others
        if (runtime_slots > 0) {
            std::vector<int> sp(B);
            CK(cudaMemcpy(sp.data(), seq_pieces, B * sizeof(int), cudaMemcpyDeviceToHost));
            std::vector<int> want(B, 0);
            for (int slot = 0; slot < slots && n_piece_items; slot++)
                if (seen[(size_t)(n_units + slot) * n_groups] && pieces[slot].b >= 0 && pieces[slot].b < B)
                    want[pieces[slot].b] = pieces[slot].slots;
            for (int b = 0; b < B; b++) list_bad += sp[b] != want[b];
        }
        if (list_bad) printf("  %s: the list is not every item once (%d wrong)\n", k.name, list_bad);
        // Where it holds pieces, the list's busiest CTA (in the writer's cost: quarter tiles an item) is the better of
        // the snake and LPT (one unit at a time, host) over the same units: the writer's LPT places runs of equal
        // units at once and must land on the same loads
        const bool lens_equal = std::all_of(k.lens.begin(), k.lens.end(), [&](int v) { return v == k.lens[0]; });
        if (written && n_piece_items > 0 && lens_equal) {  // equal lengths in pieces: the pieces' items in index order
            int wrong = 0;
            for (int c = 0; c < grid; c++)
                for (int r = 0; r < kMlaScheduleRounds; r++) {
                    const int i = c + r * grid, v = list[(size_t)c * kMlaScheduleRounds + r];
                    wrong += v != (i < n_piece_items ? n_units * n_groups + i : -1);
                }
            if (wrong) printf("  %s: equal lengths in pieces, but the list is not their index order (%d wrong)\n", k.name, wrong);
            list_bad += wrong;
            // and never worse than whole items: the list's busiest CTA in the writer's cost for equal lengths (quarter
            // tiles, an item's fixed part kMlaEqualItemFixedQ) against whole items' (index order: ⌈items / CTAs⌉ of them
            // on some CTA). The writer's estimate once left out that some CTAs take three or four pieces, and cut batch
            // 48 at 4096 into 3 pieces a sequence: 306 against 272 (a fixed part of 12)
            if (seesaw_as_released() && L >= 0 && k.lens[0] >= 0 && k.lens[0] <= L) {
                const int t = (k.lens[0] + 1 + 63) / 64;
                long long busiest = 0;
                for (int c = 0; c < grid; c++) {
                    long long sum = 0;
                    for (int r = 0; r < kMlaScheduleRounds; r++) {
                        const int v = list[(size_t)c * kMlaScheduleRounds + r];
                        if (v < 0) continue;
                        const MlaPiece &pc = pieces[v / n_groups - n_units];
                        sum += mla_schedule_equal_size((pc.tok_end - pc.tok_begin + 63) / 64, true);
                    }
                    busiest = std::max(busiest, sum);
                }
                const long long whole = (long long)((B * n_groups + grid - 1) / grid) * mla_schedule_equal_size(t, false);
                if (busiest > whole) {
                    printf("  %s: equal lengths cut into pieces whose busiest CTA has %lld quarter tiles, whole items' %lld\n",
                           k.name, busiest, whole);
                    list_bad++;
                }
            }
        } else if (written && n_piece_items > 0 && seesaw_as_released()) {
            int dev = 0;
            CK(cudaGetDevice(&dev));
            const int columns = grid / n_groups;
            std::vector<int> tiles(n_units + slots, -1), units;
            for (int v : list) {
                const int u = v < 0 ? -1 : v / n_groups;
                if (u < 0 || u >= n_units + slots || tiles[u] >= 0) continue;
                if (u < n_units) {
                    const int len = k.lens[u / run_splits], T = len + 1, tb = (u % run_splits) * run_split_len;
                    const int te = std::min(T, tb + run_split_len);
                    tiles[u] = len >= 0 && len <= L && tb < te ? (te - tb + 63) / 64 : 0;
                } else {
                    tiles[u] = (pieces[u - n_units].tok_end - pieces[u - n_units].tok_begin + 63) / 64;
                }
                units.push_back(u);
            }
            // the writer's cost (an item with no tiles: its fixed part) and ranking (tiles, a piece first, the lower)
            const auto size = [&](int u) {
                return kMlaItemFixedQ + (tiles[u] > 0 ? 4 * tiles[u] + (u >= n_units ? kMlaPieceCombineQ : 0) : 0);
            };
            const auto rank_key = [&](int u) { return 2 * tiles[u] + (u >= n_units ? 1 : 0); };
            std::sort(units.begin(), units.end(), [&](int x, int y) { return rank_key(x) != rank_key(y) ? rank_key(x) > rank_key(y) : x < y; });
            long long listed = 0, snake = 0, lpt = 0, total = 0;
            for (int c = 0; c < grid; c++) {
                long long sum = 0;
                for (int r = 0; r < kMlaScheduleRounds; r++)
                    if (list[(size_t)c * kMlaScheduleRounds + r] >= 0) sum += size(list[(size_t)c * kMlaScheduleRounds + r] / n_groups);
                listed = std::max(listed, sum);
            }
            std::vector<long long> snake_load(grid, 0), col_load(std::max(columns, 1), 0);
            std::vector<int> col_items(std::max(columns, 1), 0);
            bool overflow = false;
            for (size_t r = 0; r < units.size(); r++) {
                const int u = units[r];
                total += size(u);
                for (int g = 0; g < n_groups; g++) {
                    const int rank = (int)r * n_groups + g, kk = rank / grid, i = rank % grid;
                    snake_load[(kk & 1) ? grid - 1 - i : i] += size(u);
                }
                const int c = (int)(std::min_element(col_load.begin(), col_load.end()) - col_load.begin());
                col_load[c] += size(u);
                overflow |= ++col_items[c] > kMlaScheduleRounds;
            }
            snake = *std::max_element(snake_load.begin(), snake_load.end());
            lpt = *std::max_element(col_load.begin(), col_load.end());
            // (static splits run as one split with run-time pieces: the snake only)
            // (and LPT only where the snake's busiest CTA is not already near the lower bound: mla_schedule_snake_enough)
            const bool lpt_ok = runtime_slots == 0 && columns >= 1 && columns <= kMlaLptColumnsMax && total < (1 << 22) &&
                                !overflow && !units.empty() &&
                                snake > mla_schedule_snake_enough((int)size(units[0]), (int)total, n_groups, grid);
            const long long want = lpt_ok && lpt < snake ? lpt : snake;
            if (listed != want) {
                printf("  %s: the list's busiest CTA has %lld quarter tiles, the better of the snake (%lld) and LPT (%lld%s)"
                       " %lld\n", k.name, listed, snake, lpt, lpt_ok ? "" : ", not eligible", want);
                list_bad++;
            }
        }
    }
    std::vector<uint16_t> o(o_elems);
    CK(cudaMemcpy(o.data(), d_o, o_elems * 2, cudaMemcpyDeviceToHost));
    int guard_bad = 0;
    size_t q_stale = 0;
    if (k.discard_q) {  // the guards hold the fresh values; how many of q's values now read stale (dropped lines)
        std::vector<uint16_t> back(q.size() + 2 * kGuard);
        CK(cudaMemcpy(back.data(), d_q_alloc, back.size() * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < kGuard; i++) guard_bad += (back[i] != 0x2222) + (back[back.size() - 1 - i] != 0x2222);
        for (size_t i = 0; i < q.size(); i++) q_stale += back[kGuard + i] != q[i];
    }

    // reference, float64 (scores rounded as the reference does), one sequence at a time on every host thread: the
    // references of the big cases are tens of GFLOP in float64, and one thread made this test's run time the host's
    // (a slower host took it past a 150 s limit); each sequence's figures are its own, summed in order afterwards.
    // Whole short sequences on the seesaw kernel (one split; 2..kWholeExactMax tokens, every score away from a rounding
    // step): its tail rounds P as the reference rounds it, p = bf16(e / Σe) (src/cuda/mla_attention_sm90_seesaw.cu,
    // kTailWholeMax), so o must be bf16(Σ_t p_t c_t) bit for bit but for the fp32 sum's order and the exp's last bits.
    // A flash kernel's rounding, bf16(e) and the division at the end, would match far fewer: counted beside, to show
    // that the check can tell them apart.
    constexpr int kWholeExactMax = 8;
    const bool exact_whole = seesaw_runs && run_splits == 1;
    struct SeqCheck {
        int bad = 0, n_flip_explained = 0;
        double worst = 0.0;
        size_t n_exact = 0, n_exact_same = 0, n_flash_same = 0;
        std::vector<std::string> misses;  // the first few, printed in sequence order
    };
    std::vector<SeqCheck> seq_checks(B);
    const auto check_sequence = [&](int b, SeqCheck &out) {
        std::vector<double> s, s_alt, ref(512), ref_abs(512);  // ref_abs[d] = Σ_t p_t |c_t[d]|
        std::vector<double> flip(512);  // Σ_t p_t |s_alt_t − s_t| (|c_t[d]| + |ref[d]|): o's give under a score's other rounding
        std::vector<float> kpe(64);
        std::vector<double> p_ref, p_flash;
        const int len = k.lens[b];
        const bool valid = len >= 0 && len <= L;
        for (int h = 0; h < H; h++) {
            const uint16_t *orow = &o[((size_t)b * H + h) * 512];
            if (!valid) {
                for (int d = 0; d < 512; d++) out.bad += !std::isnan(val(orow[d]));
                continue;
            }
            const int T = len + 1;
            const uint16_t *qr = &q[b * q_batch + h * q_head];
            s.assign(T, 0.0);
            s_alt.assign(T, 0.0);
            double mx = -INFINITY;
            for (int t = 0; t < T; t++) {
                const uint16_t *cr = &cache[b * c_batch + t * row];
                for (int d = 0; d < 64; d++) {
                    const float x = val(cr[512 + d]);
                    if (!k.rotate) {
                        kpe[d] = x;
                        continue;
                    }
                    const float rot = d < 32 ? -val(cr[512 + d + 32]) : val(cr[512 + d - 32]);
                    kpe[d] = bf(bf(x * val(cos_t[t * 64 + d])) + bf(rot * val(sin_t[t * 64 + d])));
                }
                double dot = 0.0, dot_abs = 0.0;
                for (int d = 0; d < 512; d++) {
                    const double x = (double)val(qr[d]) * val(cr[d]);
                    dot += x, dot_abs += fabs(x);
                }
                for (int d = 0; d < 64; d++) {
                    const double x = (double)val(qr[512 + d]) * kpe[d];
                    dot += x, dot_abs += fabs(x);
                }
                s[t] = bf(bf((float)dot) * p.softmax_scale);
                // The score's first rounding (the dot to bf16) is a step: an fp32 sum of the 576 products (the
                // kernel's, or the reference's own) may land on the other side of it from the exact dot, and then the
                // score moves by a bf16 ulp. Within 2^-21 Σ|q·k| of a step (fp32 accumulation), the other rounding is
                // as right as this one: s_alt is it (else s_alt = s), and the tolerance takes o's change under it.
                const double eps = dot_abs * 0x1p-21;
                const double lo = bf(bf((float)(dot - eps)) * p.softmax_scale), hi = bf(bf((float)(dot + eps)) * p.softmax_scale);
                s_alt[t] = lo != s[t] ? lo : hi;
                mx = std::max(mx, s[t]);
            }
            double l = 0.0;
            std::fill(ref.begin(), ref.end(), 0.0);
            std::fill(ref_abs.begin(), ref_abs.end(), 0.0);
            for (int t = 0; t < T; t++) {
                const double e = exp(s[t] - mx);
                l += e;
                const uint16_t *cr = &cache[b * c_batch + t * row];
                for (int d = 0; d < 512; d++) ref[d] += e * val(cr[d]), ref_abs[d] += e * fabs(val(cr[d]));
            }
            double rmax = 0.0;
            for (int d = 0; d < 512; d++) ref[d] /= l, ref_abs[d] /= l, rmax = std::max(rmax, fabs(ref[d]));
            std::fill(flip.begin(), flip.end(), 0.0);
            int n_alt = 0;
            for (int t = 0; t < T; t++) {
                if (s_alt[t] == s[t]) continue;
                n_alt++;
                const double w = exp(s[t] - mx) / l * fabs(s_alt[t] - s[t]) * 1.1;  // ∂o/∂s_t = p_t (c_t − o), + 10%
                const uint16_t *cr = &cache[b * c_batch + t * row];
                for (int d = 0; d < 512; d++) flip[d] += w * (fabs(val(cr[d])) + fabs(ref[d]));
            }
            if (exact_whole && T >= 2 && T <= kWholeExactMax && n_alt == 0) {
                p_ref.assign(T, 0.0), p_flash.assign(T, 0.0);
                for (int t = 0; t < T; t++) {
                    const double e = exp(s[t] - mx);
                    p_ref[t] = bf((float)(e / l)), p_flash[t] = bf((float)e);
                }
                for (int d = 0; d < 512; d++) {
                    double r = 0.0, fl = 0.0;
                    for (int t = 0; t < T; t++) {
                        const double c = val(cache[b * c_batch + t * row + d]);
                        r += p_ref[t] * c, fl += p_flash[t] * c;
                    }
                    const float want = bf((float)r);
                    out.n_exact++;
                    out.n_exact_same += val(orow[d]) == want;
                    out.n_flash_same += bf((float)(fl / l)) == want;
                }
            }
            for (int d = 0; d < 512; d++) {
                const double got = val(orow[d]), err = fabs(got - ref[d]);
                // + the bf16 rounding of P (each p within 2^-9 p of the exact one, as the reference's bmm rounds it):
                // |Σ (p̃ − p) c| ≤ 2^-9 Σ p |c|, which max|ref| does not bound where the average cancels (found
                // once: 1 element of 13.8 M at 1.26× the first two terms)
                const double tol = 4e-3 * rmax + 1e-2 * fabs(ref[d]) + 3e-3 * ref_abs[d] + flip[d];
                if (!(err <= tol)) {
                    if (out.bad < 5) {
                        char line[256];
                        snprintf(line, sizeof line, "  %s: b %d h %d d %d: got %g, ref %g (len %d; %d of its scores near a "
                                 "rounding step)\n", k.name, b, h, d, got, ref[d], len, n_alt);
                        out.misses.push_back(line);
                    }
                    out.bad++;
                }
                if (flip[d] > 0 && err > tol - flip[d]) out.n_flip_explained++;
                if (rmax > 0) out.worst = std::max(out.worst, err / rmax);
            }
        }
    };
    for_each_host_thread(B, [&](int b) { check_sequence(b, seq_checks[b]); });
    int bad = 0, n_flip_explained = 0, n_printed = 0;
    double worst = 0.0;
    size_t n_exact = 0, n_exact_same = 0, n_flash_same = 0;
    for (const SeqCheck &c : seq_checks) {
        for (const std::string &m : c.misses)
            if (n_printed++ < 5) fputs(m.c_str(), stdout);
        bad += c.bad, n_flip_explained += c.n_flip_explained, worst = std::max(worst, c.worst);
        n_exact += c.n_exact, n_exact_same += c.n_exact_same, n_flash_same += c.n_flash_same;
    }
    if (n_flip_explained)
        printf("  %s: %d element(s) within tolerance only with a score's other rounding (a dot near a bf16 step)\n",
               k.name, n_flip_explained);
    if (n_exact > 0) {
        // required over at least 256 rows (a row's p lands within the exp's error of a bf16 step about once in
        // ~500 rows, and then many of its 512 elements move: a handful of rows alone could miss 99%)
        const bool exact_ok = n_exact < 256 * 512 || n_exact_same >= 0.99 * n_exact;
        printf("  %s: whole sequences of 2-%d tokens: %zu of %zu elements bit-identical to P rounded as the reference rounds"
               " it (%.2f%%; a flash rounding of P: %.2f%%)%s\n", k.name, kWholeExactMax, n_exact_same, n_exact,
               100.0 * n_exact_same / n_exact, 100.0 * n_flash_same / n_exact, exact_ok ? "" : ": fewer than 99%");
        bad += !exact_ok;
    }
    if (guard_bad) printf("  %s: %d guard values around q changed (a line outside q was discarded)\n", k.name, guard_bad);
    bad += guard_bad;
    const bool pieces_wrong = k.expect_pieces >= 0 && seesaw_as_released() && (n_piece_items > 0) != (k.expect_pieces > 0);
    if (pieces_wrong)
        printf("  %s: the schedule dealt %d piece item(s), expected %s\n", k.name, n_piece_items,
               k.expect_pieces ? "some" : "none");
    const bool runtime_wrong = k.expect_runtime_pieces >= 0 && seesaw_as_released() &&
                               ((runtime_slots > 0) != (k.runtime_split != 0) ||
                                (n_piece_items > 0) != (k.expect_runtime_pieces > 0));
    if (runtime_wrong)
        printf("  %s: static splits %d, run %s, %d piece item(s); expected %s with %s\n", k.name, n_splits,
               runtime_slots > 0 ? "as one split (run-time pieces)" : "as they are", n_piece_items,
               k.runtime_split ? "one split" : "the static splits", k.expect_runtime_pieces ? "pieces" : "none");
    bad += pieces_wrong + runtime_wrong + list_bad;
    g_checks++;
    if (bad) g_fail++;
    printf("%s %s: batch %d, %d heads, max len %d, %d split(s) of %d%s, %s, %d piece item(s): max err %.2e of max|ref|, "
           "%d bad\n", bad ? "FAIL" : "ok  ", k.name, B, H, L, n_splits, split_len,
           runtime_slots > 0 ? " run as one (run-time pieces)" : "", k.balance ? "balanced" : "index order",
           n_piece_items, worst, bad);
#if defined(LATTE_DEV_EXPERIMENTS)
    {  // the list writer's steps (cycles from its start), where the launch wrote the list
        long long c[8] = {};
        CK(mla_attention_schedule_clocks(c));
        if (c[6] > c[0] && c[0] != 0)  // the writer ran to its end (ranked): else it stopped early (index order)
            printf("      list writer: keys %lld, split decided %lld, pieces %lld, ranked %lld, LPT %lld, end %lld cycles\n",
               c[1] - c[0], c[2] - c[0], c[3] - c[0], c[4] - c[0], c[5] - c[0], c[6] - c[0]);
    }
#endif
    if (k.discard_q)
        printf("      (q values reading stale afterwards, i.e. dropped unwritten: %zu of %zu)\n", q_stale, q.size());
    if (k.discard_partial) {  // the partial rows as they read afterwards: NaN where dropped unwritten
        std::vector<float> part((size_t)n_splits * B * H * 512);
        CK(cudaMemcpy(part.data(), d_ws, part.size() * sizeof(float), cudaMemcpyDeviceToHost));
        size_t stale = 0;
        for (float v : part) stale += v != v;
        printf("      (partial values reading stale afterwards, i.e. dropped unwritten or never written: %zu of %zu)\n",
               stale, part.size());
    }
    cudaFree(d_q_alloc), cudaFree(d_cache), cudaFree(d_cos), cudaFree(d_sin), cudaFree(d_o), cudaFree(d_lens), cudaFree(d_ws);
}

#if defined(LATTE_DEV_EXPERIMENTS)
// The CTAs' item timeline of the last launch (experiment bit 8): per event, min / median / max over the CTAs, in µs
static void print_item_trace() {
    constexpr int kCtas = 512, kSlots = 11, kItems = 3;
    std::vector<unsigned long long> t(kCtas * kSlots + kCtas * 2 * 6 + kCtas * 4);
    CK(mla_attention_seesaw_item_trace(t.data()));
    unsigned long long t0 = ~0ull, t_end = 0;
    int ctas = 0;
    for (int c = 0; c < kCtas; c++)
        if (t[c * kSlots]) t0 = std::min(t0, t[c * kSlots]), t_end = std::max(t_end, t[c * kSlots + kSlots - 1]), ctas++;
    if (!ctas) return;
    const auto row = [&](const char *what, const std::vector<double> &v) {
        if (v.empty()) return;
        std::vector<double> w = v;
        std::sort(w.begin(), w.end());
        printf("  %-34s %4zu CTAs  min %7.2f  median %7.2f  max %7.2f us\n", what, w.size(), w.front(), w[w.size() / 2],
               w.back());
    };
    printf("item timeline (globaltimer, %d CTAs, kernel span %.2f us from the first entry):\n", ctas, (t_end - t0) * 1e-3);
    std::vector<double> entry, ex;
    for (int c = 0; c < kCtas; c++)
        if (t[c * kSlots]) entry.push_back((t[c * kSlots] - t0) * 1e-3), ex.push_back((t[c * kSlots + kSlots - 1] - t0) * 1e-3);
    row("entry (from the first entry)", entry);
    // the start, step by step (from the CTA's entry): the items that read nothing cleared, the list read, the first
    // item known, the mbarriers set up and its copies issued (then Q ready, below)
    static const char *const kStart[4] = {"start: unread items cleared", "start: list read",
                                          "start: first item known", "start: first copies issued"};
    for (int e = 0; e < 4; e++) {
        std::vector<double> d;
        for (int c = 0; c < kCtas; c++) {
            const unsigned long long *r = &t[kCtas * kSlots + kCtas * 2 * 6 + c * 4];
            if (r[e] && t[c * kSlots]) d.push_back(((double)r[e] - (double)t[c * kSlots]) * 1e-3);
        }
        char a[80];
        snprintf(a, sizeof a, "%s (from entry)", kStart[e]);
        row(a, d);
    }
    for (int k = 0; k < kItems; k++) {
        std::vector<double> wait, pairs, rest;
        for (int c = 0; c < kCtas; c++) {
            const unsigned long long *r = &t[c * kSlots];
            if (!r[0] || !r[1 + 3 * k] || !r[2 + 3 * k] || !r[3 + 3 * k]) continue;
            const unsigned long long before = k == 0 ? r[0] : r[3 * k];
            wait.push_back(((double)r[1 + 3 * k] - (double)before) * 1e-3);
            pairs.push_back(((double)r[2 + 3 * k] - (double)r[1 + 3 * k]) * 1e-3);
            rest.push_back(((double)r[3 + 3 * k] - (double)r[2 + 3 * k]) * 1e-3);
        }
        char a[64], b[64], d[64];
        snprintf(a, sizeof a, "item %d: Q ready (from %s)", k, k == 0 ? "entry" : "previous end");
        snprintf(b, sizeof b, "item %d: pairs (WG0)", k);
        snprintf(d, sizeof d, "item %d: tail + output", k);
        row(a, wait);
        row(b, pairs);
        row(d, rest);
    }
    row("exit (from the first entry)", ex);
    static const char *const kEnd[6] = {"pairs done", "tail tile landed", "tail scores exchanged", "tail folded in",
                                        "row sums exchanged", "output written"};
    for (int item = 0; item < 2; item++)
        for (int e = 1; e < 6; e++) {
            std::vector<double> d;
            for (int c = 0; c < kCtas; c++) {
                const unsigned long long *r = &t[kCtas * kSlots + (c * 2 + item) * 6];
                if (r[e] && r[e - 1]) d.push_back(((double)r[e] - (double)r[e - 1]) * 1e-3);
            }
            char a[80];
            snprintf(a, sizeof a, "item %d: %s (from the step before)", item, kEnd[e]);
            row(a, d);
        }
}

// Block 0's pair timeline (experiment bit 8): clock64 at each step of 8 pairs from `first_pair`, both warpgroups
static void print_pair_trace(int L, int first_pair) {
    std::vector<unsigned long long> t(2 * 8 * 32);
    CK(mla_attention_seesaw_trace(t.data()));
    printf("trace at length %d, block 0, clocks from WG0's step 0 of each pair (steps: see the kernel; c0..c8 the S "
           "chunk waits)\n", L);
    for (int pr = 0; pr < 8; pr++) {
        const unsigned long long t0 = t[(0 * 8 + pr) * 32 + 0];
        const unsigned long long next = pr + 1 < 8 ? t[(0 * 8 + pr + 1) * 32 + 0] : 0;
        printf("pair %d (next pair at %lld)\n", first_pair + pr, next ? (long long)(next - t0) : -1LL);
        for (int w = 0; w < 2; w++) {
            printf("  WG%d steps:", w);
            for (int e = 0; e < 12; e++) {
                const unsigned long long v = t[(w * 8 + pr) * 32 + e];
                printf(" %2d:%6lld", e, v ? (long long)(v - t0) : 0LL);
            }
            printf("\n  WG%d chunks:", w);
            for (int e = 16; e < 25; e++) {
                const unsigned long long v = t[(w * 8 + pr) * 32 + e];
                printf(" c%d:%6lld", e - 16, v ? (long long)(v - t0) : 0LL);
            }
            printf("\n");
        }
    }
}

// The same item timeline inside the whole layer (LATTE_ATTN_TRACE_LAYER=L, dev builds with experiment bit 8): the
// public API's layer at batch 128, every sequence at length L, cache capacity 8192, random weights and data of the
// reference's magnitudes, tuned, captured in a graph and replayed as latte-bench does; the timeline is the last
// replay's attention. Why: the attention takes a few µs longer in the layer than alone after an L2 flush, and the
// alone timeline cannot say where.
static void fill_dev(bf16 **p, size_t n, uint64_t seed, float scale) {
    CK(cudaMalloc(p, n * 2));
    fill_bf16_kernel<<<2048, 256>>>(*p, n, seed, 0, scale);
}
static int layer_trace(int L) {
    const int B = 128;
    const int64_t cap = 8192;
    if (L < 1 || L >= cap) return printf("layer trace: length %d out of [1, %lld)\n", L, (long long)cap), 1;
    latte_mla_config c = latte_mla_config_deepseek_r1();
    const size_t rows[5] = {(size_t)c.q_lora_rank, (size_t)(c.kv_lora_rank + c.rope_dim),
                            (size_t)(c.n_heads * (c.nope_dim + c.rope_dim)), (size_t)(c.n_heads * (c.nope_dim + c.v_dim)),
                            (size_t)c.dim};
    const size_t cols[5] = {(size_t)c.dim, (size_t)c.dim, (size_t)c.q_lora_rank, (size_t)c.kv_lora_rank,
                            (size_t)(c.n_heads * c.v_dim)};
    bf16 *w[5];
    for (int i = 0; i < 5; i++) fill_dev(&w[i], rows[i] * cols[i], 11 + i, 1.f / sqrtf((float)cols[i]));
    const latte_mla_weights lw = {w[0], w[1], w[2], w[3], w[4]};
    latte_mla_plan plan = nullptr;
    if (latte_mla_plan_create(&plan, &c, &lw, LATTE_BACKEND_CUDA, 0) != LATTE_STATUS_SUCCESS)
        return printf("layer trace: plan: %s\n", latte_last_error()), 1;
    for (bf16 *m : w) cudaFree(m);
    const size_t row = (size_t)(c.kv_lora_rank + c.rope_dim);
    bf16 *x, *cache, *y, *cos_t, *sin_t;
    fill_dev(&x, (size_t)B * c.dim, 21, 1.f);
    fill_dev(&cache, (size_t)B * cap * row, 22, 1.f);
    CK(cudaMalloc(&y, (size_t)B * c.dim * 2));
    CK(cudaMalloc(&cos_t, (size_t)cap * c.rope_dim * 2));
    CK(cudaMalloc(&sin_t, (size_t)cap * c.rope_dim * 2));
    if (latte_rope_tables(LATTE_ROPE_BF16_REFERENCE, cap, c.rope_dim, 10000.f, cos_t, sin_t, LATTE_BACKEND_CUDA, 0))
        return printf("layer trace: rope tables: %s\n", latte_last_error()), 1;
    int32_t *lens;
    const std::vector<int32_t> lens_h(B, L);
    CK(cudaMalloc(&lens, B * sizeof(int32_t)));
    CK(cudaMemcpy(lens, lens_h.data(), B * sizeof(int32_t), cudaMemcpyHostToDevice));
    size_t ws_bytes = 0;
    void *ws = nullptr;
    if (latte_mla_workspace_size(plan, B, L, &ws_bytes)) return printf("layer trace: %s\n", latte_last_error()), 1;
    CK(cudaMalloc(&ws, ws_bytes));
    if (latte_mla_plan_tune(plan, B, L, ws, ws_bytes, 0)) return printf("layer trace: tune: %s\n", latte_last_error()), 1;
    latte_mla_run_args a{};
    a.batch = B, a.x = x, a.kv_cache = {cache, cap * (int64_t)row, (int64_t)row, cap}, a.cache_lens = lens;
    a.max_cache_len = L, a.rope_cos = cos_t, a.rope_sin = sin_t, a.rope_max_pos = cap, a.y = y;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    if (latte_mla_run(plan, &a, ws, ws_bytes, st)) return printf("layer trace: run: %s\n", latte_last_error()), 1;
    CK(cudaStreamEndCapture(st, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int r = 0; r < 5; r++) CK(cudaGraphLaunch(exec, st));  // warm, back to back
    CK(cudaEventRecord(e0, st));
    for (int r = 0; r < 10; r++) CK(cudaGraphLaunch(exec, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaStreamSynchronize(st));
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(mla_attention_seesaw_item_trace_clear());
    int tr_item = 0, tr_pair = 0;  // LATTE_ATTN_TRACE_AT="item,pair" as for LATTE_ATTN_TRACE (default: item 0 from its start)
    if (const char *at = getenv("LATTE_ATTN_TRACE_AT")) sscanf(at, "%d,%d", &tr_item, &tr_pair);
    CK(mla_attention_seesaw_trace_select(tr_item, tr_pair));
    // the traced replay follows another one, as in a stream of decode steps
    CK(cudaGraphLaunch(exec, st));
    CK(cudaGraphLaunch(exec, st));
    CK(cudaStreamSynchronize(st));
    printf("layer at length %d: %.1f us a replay (10 back to back, this build, trace stamps included)\n", L, ms * 100.f);
    print_item_trace();
    print_pair_trace(L, tr_pair);
    cudaGraphExecDestroy(exec), cudaGraphDestroy(graph), cudaStreamDestroy(st);
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    cudaFree(x), cudaFree(cache), cudaFree(y), cudaFree(cos_t), cudaFree(sin_t), cudaFree(lens), cudaFree(ws);
    latte_mla_plan_destroy(plan);
    return 0;
}
#endif

// ---- timing at the reference shapes ----
struct Big {
    bf16 *q = nullptr, *cache = nullptr, *cos_t = nullptr, *sin_t = nullptr, *o = nullptr, *flush = nullptr;
    int *lens = nullptr;
    float *ws = nullptr;
    size_t flush_bytes = 0;
    int capacity = 0;  // LATTE_ATTN_CAPACITY: rows per sequence (0: L + 1, packed)
    int flush_mode = 0;  // LATTE_ATTN_FLUSH: 0 read, 1 write, 2 none, 3 burst
    float q_scale = 0.f, c_scale = 0.f;
};

// The timing shapes: every sequence at length L, or (mixed) lengths uniform in [1, L] from a fixed seed
static std::vector<int> mixed_lens(int B, int L) {
    std::vector<int> v(B);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < B; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v[i] = 1 + (int)(x % (uint64_t)L);
    }
    return v;
}

static MlaAttentionParams big_params(Big &m, int L, bool rotate, int sms, std::vector<int> *lens_host, bool mixed = false) {
    const int B = 128, H = 128;
    int n_splits = 0, split_len = 0;
    mla_attention_schedule(B, H, L, sms, &n_splits, &split_len);
    std::vector<int> lens = mixed ? mixed_lens(B, L) : std::vector<int>(B, L);
    if (lens_host) *lens_host = lens;
    CK(cudaMemcpy(m.lens, lens.data(), B * sizeof(int), cudaMemcpyHostToDevice));
    MlaAttentionParams p{};
    p.q = m.q, p.q_batch_stride = (int64_t)H * 576, p.q_head_stride = 576;
    p.kv_cache = m.cache, p.cache_batch_stride = (int64_t)(m.capacity > L ? m.capacity : L + 1) * 576;
    p.cache_row_stride = 576;
    p.cache_lens = m.lens, p.max_cache_len = L;
    p.rope_cos = rotate ? m.cos_t : nullptr, p.rope_sin = rotate ? m.sin_t : nullptr;
    p.softmax_scale = 1.f / sqrtf(192.f);
    p.batch = B, p.n_heads = H, p.n_splits = n_splits, p.split_len = split_len;
    p.o_partial = m.ws, p.lse_partial = m.ws + (size_t)n_splits * B * H * 512;
    p.schedule = reinterpret_cast<int *>(reinterpret_cast<char *>(m.ws) + mla_attention_schedule_offset(B, H, n_splits));
    p.o_lat = m.o;
    return p;
}

static void big_alloc(Big &m, int max_len, int sms) {
    const int B = 128, H = 128;
    if (const char *c = getenv("LATTE_ATTN_CAPACITY")) m.capacity = atoi(c);
    const size_t cache_elems = (size_t)B * std::max(max_len + 1, m.capacity) * 576;
    CK(cudaMalloc(&m.q, (size_t)B * H * 576 * 2));
    CK(cudaMalloc(&m.cache, cache_elems * 2));
    CK(cudaMalloc(&m.cos_t, (size_t)(max_len + 1) * 64 * 2));
    CK(cudaMalloc(&m.sin_t, (size_t)(max_len + 1) * 64 * 2));
    CK(cudaMalloc(&m.o, (size_t)B * H * 512 * 2));
    CK(cudaMalloc(&m.lens, B * sizeof(int)));
    size_t ws = 0;
    for (int L = 64; L <= max_len; L += 64) {
        int n = 0, sl = 0;
        mla_attention_schedule(B, H, L, sms, &n, &sl);
        ws = std::max(ws, mla_attention_workspace_bytes(B, H, n));
    }
    CK(cudaMalloc(&m.ws, ws));
    float q_scale = 0.577f, c_scale = 0.577f;
    if (const char *sc = getenv("LATTE_ATTN_SCALES")) sscanf(sc, "%f,%f", &q_scale, &c_scale);
    m.q_scale = q_scale, m.c_scale = c_scale;
    if (const char *f = getenv("LATTE_ATTN_FLUSH"))
        m.flush_mode = !strcmp(f, "write") ? 1 : !strcmp(f, "none") ? 2 : !strcmp(f, "burst") ? 3 : 0;
    fill_bf16_kernel<<<1024, 256>>>(m.q, (size_t)B * H * 576, 1, 0, q_scale);
    fill_bf16_kernel<<<4096, 256>>>(m.cache, cache_elems, 2, 0, c_scale);
    fill_bf16_kernel<<<256, 256>>>(m.cos_t, (size_t)(max_len + 1) * 64, 3, 0, 0.577f);
    fill_bf16_kernel<<<256, 256>>>(m.sin_t, (size_t)(max_len + 1) * 64, 4, 0, 0.577f);
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    m.flush_bytes = (size_t)l2 * 3;
    CK(cudaMalloc(&m.flush, m.flush_bytes));
    CK(cudaMemset(m.flush, 0x5a, m.flush_bytes));
    CK(cudaDeviceSynchronize());
}

static void big_free(Big &m) {
    cudaFree(m.q), cudaFree(m.cache), cudaFree(m.cos_t), cudaFree(m.sin_t), cudaFree(m.o), cudaFree(m.lens);
    cudaFree(m.ws), cudaFree(m.flush);
}

static void flush_l2(const Big &m) {
    if (m.flush_mode == 0) l2_flush(m.flush, m.flush_bytes);
    else if (m.flush_mode == 1) CK(cudaMemsetAsync(m.flush, 0x5a, m.flush_bytes));
}

static double time_attention(Big &m, const MlaAttentionParams &p, int reps) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> t;
    if (m.flush_mode == 3) {  // burst: 20 launches between two events, per launch; median of 3 (after a warm-up)
        CK(mla_attention_launch(p, 0));
        for (int r = 0; r < 3; r++) {
            CK(cudaEventRecord(e0));
            for (int i = 0; i < 20; i++) CK(mla_attention_launch(p, 0));
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms = 0.f;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            t.push_back(ms * 1e3f / 20);
        }
        reps = 0;
    }
    for (int r = 0; r < reps + 1 && m.flush_mode != 3; r++) {
        flush_l2(m);
        CK(cudaEventRecord(e0));
        CK(mla_attention_launch(p, 0));
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0.f;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0) t.push_back(ms * 1e3f);  // the first launch sets the kernel's attributes
    }
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main() {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("gpu_attention: no GPU, skipped\n");
        return 77;
    }
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const char *seed = getenv("LATTE_TEST_SEED");
    if (seed) g_rng = strtoull(seed, nullptr, 0) | 1;
    setvbuf(stdout, nullptr, _IOLBF, 0);  // a line at a time: a run stopped by a time limit keeps what it printed
    printf("gpu_attention: %s, %d SMs, seed 0x%llx\n", prop.name, sms, (unsigned long long)g_rng);

    if (const char *prof = getenv("LATTE_ATTN_PROFILE")) {
        const int L = std::max(1, atoi(prof));
        Big m;
        big_alloc(m, L, sms);
        const MlaAttentionParams p = big_params(m, L, true, sms, nullptr);
        for (int r = 0; r < 2; r++) {
            flush_l2(m);
            CK(mla_attention_launch(p, 0));
        }
        CK(cudaDeviceSynchronize());
        big_free(m);
        printf("gpu_attention: profile launches at length %d done\n", L);
        return 0;
    }

#if defined(LATTE_DEV_EXPERIMENTS)
    if (const char *tl = getenv("LATTE_ATTN_TRACE_LAYER")) return layer_trace(atoi(tl));
    if (const char *tr = getenv("LATTE_ATTN_TRACE")) {  // with LATTE_MLA_WGMMA_EXPERIMENT having bit 8
        const int L = std::max(1, atoi(tr));
        // LATTE_ATTN_TRACE_AT="item,pair": the timeline of pairs pair.. of block 0's item (default 0,8)
        int tr_item = 0, tr_pair = 8;
        if (const char *at = getenv("LATTE_ATTN_TRACE_AT")) sscanf(at, "%d,%d", &tr_item, &tr_pair);
        CK(mla_attention_seesaw_trace_select(tr_item, tr_pair));
        Big m;
        big_alloc(m, L, sms);
        MlaAttentionParams p = big_params(m, L, true, sms, nullptr);
        if (const char *bal = getenv("LATTE_ATTN_TRACE_BALANCE")) p.balance = atoi(bal);  // 0: index order
        for (int r = 0; r < 3; r++) {
            flush_l2(m);
            if (r == 2) {
                CK(cudaDeviceSynchronize());
                CK(mla_attention_seesaw_item_trace_clear());
            }
            CK(mla_attention_launch(p, 0));
        }
        CK(cudaDeviceSynchronize());
        print_item_trace();
        print_pair_trace(L, tr_pair);
        big_free(m);
        return 0;
    }
#endif
    // many sequences: more items (sequence, split, 64 heads) than CTAs, so each CTA of the persistent seesaw kernel
    // takes several in a row, of 1, 2 or more tiles, odd and even counts, invalid lengths and empty splits between;
    // T = 64k + 0..4 attended rows: every tail size the tensor-core tail takes (1..kTailMax = 4 tokens)
    const auto random_lens = [](int n, int max_len) {
        std::vector<int> v(n);
        for (int i = 0; i < n; i++) {
            const uint64_t r = rng() % 16;
            v[i] = r == 0 ? -1 : r == 1 ? max_len + 1 : r == 2 ? (int)(rng() % 3) : r == 3 ? 64 * (int)(rng() % 4) - 1 + (int)(rng() % 5) : (int)(rng() % (max_len + 1));
        }
        return v;
    };
    // skewed: a few long sequences among many short ones (the snake puts each long one first on its own CTA)
    const auto skewed_lens = [](int n, int max_len) {
        std::vector<int> v(n);
        for (int i = 0; i < n; i++) v[i] = rng() % 8 == 0 ? max_len - (int)(rng() % 64) : (int)(rng() % (max_len / 8));
        return v;
    };
    // a few long sequences (at `long_len`, T = 64k + 1 where long_len is 64k: the last piece's one-token tail) among
    // many short ones, some invalid: the schedule splits the long ones into pieces, the last piece combines
    const auto few_long = [](int n, int n_long, int long_len, int short_max, int max_len) {
        std::vector<int> v(n);
        for (int i = 0; i < n; i++) {
            const uint64_t r = rng() % 32;
            v[i] = r == 0 ? -1 : r == 1 ? max_len + 1 : (int)(rng() % (short_max + 1));
        }
        for (int i = 0; i < n_long; i++) v[(size_t)i * (n - 1) / std::max(1, n_long - 1)] = long_len - (i % 2) * (int)(rng() % 100);
        return v;
    };
    // lengths 0..max_len in turn (T = 1..max_len + 1), an invalid one now and then
    const auto short_lens = [](int n, int max_len) {
        std::vector<int> v(n);
        for (int i = 0; i < n; i++) v[i] = rng() % 16 == 0 ? -1 : i % (max_len + 1);
        return v;
    };
    std::vector<int> discard_lens = random_lens(160, 130);
    discard_lens[0] = 130, discard_lens[1] = -1, discard_lens[2] = 0;  // the longest, an invalid one, one token
    const Case cases[] = {
        {"many sequences (several items per CTA)", 420, 64, 190, random_lens(420, 190), true, 0, 0, 1.f, 1.f},
        {"many sequences, index order", 420, 64, 190, random_lens(420, 190), true, 0, 0, 1.f, 1.f, false, 0},
        {"skewed lengths, 128 heads", 150, 128, 700, skewed_lens(150, 700), true, 0, 0, 1.f, 1.f},
        {"skewed lengths, stored keys", 300, 64, 400, skewed_lens(300, 400), false, 0, 0, 1.f, 1.f},
        {"a few long among short: pieces, 128 heads", 130, 128, 1600, few_long(130, 4, 1536, 60, 1600), true, 0, 0, 1.f, 1.f, false, 1, 1},
        {"a few long among short, index order", 130, 128, 1600, few_long(130, 4, 1536, 60, 1600), true, 0, 0, 1.f, 1.f, false, 0, 0},
        {"one very long among short: many pieces", 140, 64, 4000, few_long(140, 1, 3968, 40, 4000), true, 0, 0, 1.f, 1.f, false, 1, 1},
        {"a few long among short: pieces, 48 heads, stored keys", 200, 48, 1300, few_long(200, 3, 1280, 50, 1300), false, 0, 0, 2.f, 0.5f, false, 1, 1},
        {"a few long among many lengths: pieces, runs short and long", 150, 64, 4000, few_long(150, 2, 3968, 1500, 4000), true, 0, 0, 1.f, 1.f, false, 1, 1},
        {"equal lengths: no pieces", 140, 128, 700, std::vector<int>(140, 700), true, 0, 0, 1.f, 1.f, false, 1, 0},
        {"discarded q, a long sequence in pieces", 150, 64, 2000, few_long(150, 1, 1984, 60, 2000), true, 0, 0, 1.f, 1.f, true, 1, 1},
        {"many sequences split in two, index order", 150, 64, 700, random_lens(150, 700), true, 0, 0, 1.f, 1.f, false, 0},
        {"many sequences, split in two", 150, 64, 700, random_lens(150, 700), true, 0, 0, 1.f, 1.f},
        {"many short sequences, 16 heads", 300, 16, 40, random_lens(300, 40), true, 0, 0, 1.f, 1.f},
        {"unequal lengths", 7, 128, 300, {0, 1, 63, 64, 65, 128, 300}, true, 0, 0, 1.f, 1.f},
        // whole sequences of 1-14 tokens in one split: the tail (1-4), the tail of a whole sequence with P rounded as the
        // reference rounds it (5-8), the pair (9-14); checked bit for bit where P is the reference's (the exact check)
        {"whole short sequences: P rounded as the reference", 98, 128, 20, short_lens(98, 13), true, 0, 0, 1.f, 1.f, false, 1, 0},
        {"whole short sequences, stored keys, 48 heads", 70, 48, 20, short_lens(70, 13), false, 0, 0, 3.f, 0.5f, false, 1, 0},
        {"pair boundaries", 5, 128, 257, {127, 128, 129, 191, 257}, true, 0, 0, 1.f, 1.f},
        {"stored keys", 4, 128, 200, {200, 3, 130, 77}, false, 0, 0, 1.f, 1.f},
        {"invalid lengths", 4, 64, 100, {-1, 50, 101, 100}, true, 0, 0, 1.f, 1.f},
        {"batch 1 long (split)", 1, 128, 3000, {3000}, true, 0, 0, 1.f, 1.f},
        // the combine's three shapes (4, 2 or 1 warps a head, by how many warps the GPU holds at once): the whole
        // capacity at batch 1 (the most splits a sequence gets: 8 at a time), batch 16 (2 warps a head) and batch 24
        // (one), with invalid lengths among them
        {"batch 1 at 8191 tokens (split)", 1, 128, 8191, {8191}, true, 0, 0, 1.f, 1.f},
        {"batch 16 split, unequal (combine: 2 warps a head)", 16, 128, 1500, random_lens(16, 1500), true, 0, 0, 1.f, 1.f, false, 1, -1, 0, 0},
        {"batch 24 split, unequal (combine: a warp a head)", 24, 128, 1000, random_lens(24, 1000), true, 0, 0, 1.f, 1.f, false, 1, -1, 0, 0},
        {"batch 2 split unequal", 2, 128, 2000, {1999, 700}, true, 0, 0, 1.f, 1.f},
        // the static splits of a batch of 8-64 (2..8 a sequence) run as one split whose pieces the list's writer cuts
        // from this run's lengths (MlaAttentionParams::runtime_split): mixed and equal lengths, invalid ones, 64 heads
        // with stored keys, q discarded (whole items only: a piece's q is read by several CTAs); and the static path
        // beside them
        {"batch 32 mixed lengths: run-time pieces", 32, 128, 3000, mixed_lens(32, 3000), true, 0, 0, 1.f, 1.f, false, 1, -1, 1, 1},
        {"batch 32 mixed lengths, static splits", 32, 128, 3000, mixed_lens(32, 3000), true, 0, 0, 1.f, 1.f, false, 1, -1, 0, 0},
        {"batch 16 equal lengths: run-time pieces", 16, 128, 1500, std::vector<int>(16, 1500), true, 0, 0, 1.f, 1.f, false, 1, -1, 1, 1},
        // equal lengths whose static splits run as one, where 2 pieces a sequence (134 × 2 items) would leave some CTAs
        // three items, worse than whole (the writer prices equal lengths' cuts exactly): whole items or a better cut
        {"batch 67 equal lengths: run-time pieces never worse than whole", 67, 128, 576, std::vector<int>(67, 576), true, 0, 0, 1.f, 1.f, false, 1, -1, 1, -1},
        {"batch 12, invalid lengths, 64 heads, stored keys: run-time pieces", 12, 64, 900, random_lens(12, 900), false, 0, 0, 2.f, 0.5f, false, 1, -1, 1, -1},
        {"discarded q, run-time pieces", 24, 128, 1000, few_long(24, 3, 960, 200, 1000), true, 0, 0, 1.f, 1.f, true, 1, -1, 1, 1},
        {"unequal lengths, static splits", 7, 128, 300, {0, 1, 63, 64, 65, 128, 300}, true, 0, 0, 1.f, 1.f, false, 1, -1, 0, 0},
        {"16 heads, padded strides", 3, 16, 150, {150, 20, 99}, true, 24, 8, 1.f, 1.f},
        {"80 heads, other magnitudes", 3, 80, 180, {180, 64, 0}, true, 0, 0, 3.f, 0.25f},
        {"small magnitudes", 2, 128, 129, {129, 100}, true, 0, 0, 0.05f, 0.1f},
        // q as the layer leaves it (dirty in L2, stale in DRAM), discard_q asked: honoured with one split ...
        {"discarded q, one split", 160, 64, 130, discard_lens, true, 0, 0, 1.f, 1.f, true},
        // ... and refused where q is read more than once (splits) or its rows are padded
        {"discarded q asked, split (refused)", 1, 128, 3000, {3000}, true, 0, 0, 1.f, 1.f, true},
        {"discarded q asked, padded q (refused)", 3, 16, 150, {150, 20, 99}, true, 24, 8, 1.f, 1.f, true},
        // the partials dropped by the combine after static splits (4, 2 and 1 warps a head) and after run-time pieces;
        // asked where the seesaw kernel's last piece merges a long sequence's pieces (not honoured there: the merge
        // is correct either way)
        {"discarded partials, batch 1 split", 1, 128, 3000, {3000}, true, 0, 0, 1.f, 1.f, false, 1, -1, 1, -1, true},
        {"discarded partials, batch 16 static splits", 16, 128, 1500, random_lens(16, 1500), true, 0, 0, 1.f, 1.f, false, 1, -1, 0, 0, true},
        {"discarded partials, batch 24 static splits, 64 heads", 24, 64, 1000, random_lens(24, 1000), true, 0, 0, 1.f, 1.f, false, 1, -1, 0, 0, true},
        {"discarded partials, batch 32 run-time pieces", 32, 128, 3000, mixed_lens(32, 3000), true, 0, 0, 1.f, 1.f, false, 1, -1, 1, 1, true},
        {"discarded partials asked, pieces merged in the kernel", 130, 128, 1600, few_long(130, 4, 1536, 60, 1600), true, 0, 0, 1.f, 1.f, false, 1, 1, 1, -1, true},
    };
    const char *timing = getenv("LATTE_ATTN_TIMING");
    if (!timing || atoi(timing) != 2) {
        const char *filter = getenv("LATTE_TEST_FILTER");  // only the cases whose name holds it
        for (const Case &c : cases)
            if (!filter || !*filter || strstr(c.name, filter)) run_case(c, sms);
    }
    if (timing && atoi(timing) != 0) {
        const int lens[] = {512, 1024, 2048, 4096, 6144};
        Big m;
        big_alloc(m, 6144, sms);
        static const char *const flush_names[] = {"read-only L2 flush", "write (L2 left dirty)", "nothing (back to back)",
                                                  "nothing, 20 queued between two events (burst)"};
        printf("timing (batch 128, 128 heads, data std q %.3g cache %.3g; median of 15 launches, each after a %zu MB %s):\n",
               m.q_scale, m.c_scale, m.flush_bytes >> 20, flush_names[m.flush_mode]);
        for (int rot = 1; rot >= 0; rot--)
            for (int L : lens) {
                if (!rot && L != 4096) continue;
                const MlaAttentionParams p = big_params(m, L, rot != 0, sms, nullptr);
                const double us = time_attention(m, p, 15);
                const double T = L + 1, flop = 2.0 * 128 * 128 * T * (576 + 512), bytes = 128.0 * T * 576 * 2;
                printf("  time attention len %5d%s: %8.1f us  %6.1f TFLOP/s  %5.2f TB/s of cache  (%d split(s))\n", L,
                       rot ? "" : " stored", us, flop / us * 1e-6, bytes / us * 1e-6, p.n_splits);
            }
        // equal lengths with the balanced schedule switched off: what its start (the lengths' check) costs
        for (int L : {512, 2048}) {
            MlaAttentionParams p = big_params(m, L, true, sms, nullptr);
            p.balance = 0;
            const double us = time_attention(m, p, 15);
            const double T = L + 1, flop = 2.0 * 128 * 128 * T * (576 + 512), bytes = 128.0 * T * 576 * 2;
            printf("  time attention len %5d, index order: %8.1f us  %6.1f TFLOP/s  %5.2f TB/s of cache  (%d split(s))\n",
                   L, us, flop / us * 1e-6, bytes / us * 1e-6, p.n_splits);
        }
        // unequal lengths (uniform in [1, 6144], fixed seed): the balanced schedule, then index order
        for (int bal = 1; bal >= 0; bal--) {
            std::vector<int> lh;
            MlaAttentionParams p = big_params(m, 6144, true, sms, &lh, true);
            p.balance = bal;
            const double us = time_attention(m, p, 15);
            double T = 0;
            for (int l : lh) T += l + 1;
            const double flop = 2.0 * 128 * T * (576 + 512), bytes = T * 576 * 2;
            printf("  time attention mixed 1..6144 (mean %.0f), %s: %8.1f us  %6.1f TFLOP/s  %5.2f TB/s of cache  "
                   "(%d split(s))\n", T / 128 - 1, bal ? "balanced" : "index order", us, flop / us * 1e-6,
                   bytes / us * 1e-6, p.n_splits);
        }
        big_free(m);
    }
    printf("gpu_attention: %d checks, %d failed\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
