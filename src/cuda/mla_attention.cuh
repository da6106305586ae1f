// Interface between the MLA run orchestration (mla_plan.cu) and the attention over the latent cache
// (mla_attention.cu): FlashMLA-style plain parameter struct, a split-KV kernel and a combine kernel.
//
// Shapes are fixed by the spec's per-head sizes (the API layer rejects others for CUDA):
//   kv_lora_rank R = 512, rope_dim P = 64, so a cache row / a query row is 576 bf16 = [latent 512 | rope 64].
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace latte {

constexpr int kMlaLatent = 512;                  // R
constexpr int kMlaRope = 64;                     // P
constexpr int kMlaRow = kMlaLatent + kMlaRope;   // 576

struct MlaAttentionParams {
    // queries: [batch][n_heads][576] bf16 = q_lat (W_UK-absorbed q_nope, 512) | q_pe already roped (64)
    const __nv_bfloat16 *q;
    int64_t q_batch_stride;        // elements (n_heads * 576 when packed)
    int64_t q_head_stride;         // elements (576 when packed)

    // latent cache: row t of sequence b at kv_cache + b*cache_batch_stride + t*cache_row_stride (elements),
    // 16-byte aligned rows. The new token's row (t = len[b]) has already been appended when this runs.
    const __nv_bfloat16 *kv_cache;
    int64_t cache_batch_stride;
    int64_t cache_row_stride;

    // cache_lens[b] = tokens cached before this step; the step attends T = len + 1 rows (0..len).
    // A length < 0 or > max_cache_len is invalid: that sequence's output is NaN and nothing is read.
    const int32_t *cache_lens;
    int max_cache_len;

    // keys rotated at read (the reference convention): k_pe[t] = rope(cache k_pe[t], t), with the reference's
    // bf16 rounding: bf16( bf16(x*cos[t]) + bf16(rotate_half(x)*sin[t]) ). nullptr: keys are stored rotated.
    const __nv_bfloat16 *rope_cos;  // [>= max_cache_len + 1][64]
    const __nv_bfloat16 *rope_sin;

    float softmax_scale;            // s = (q_lat.c + q_pe.k_pe) * softmax_scale
    int batch;
    int n_heads;                    // multiple of 16, <= 128

    // split-KV schedule (chosen by mla_attention_schedule): split s of a sequence covers tokens
    // [s*split_len, min(T, (s+1)*split_len)); splits beyond T are empty.
    int n_splits;
    int split_len;                  // multiple of 64

    // partial results (workspace): per split, the softmax-normalized partial output and its log-sum-exp
    float *o_partial;               // [n_splits][batch][n_heads][512] fp32
    float *lse_partial;             // [n_splits][batch][n_heads] fp32 (natural log; -inf for an empty split)

    // final output: o_lat[b][h][:] = sum_t p[h][t] * c[t], bf16, rows of 512, [batch][n_heads][512] packed
    __nv_bfloat16 *o_lat;

    // 1: q is scratch that nothing reads after this launch (the layer's q_attn): the Hopper kernel drops each item's
    // queries from L2 unwritten (discard.global.L2) once they are in shared memory, so the dirty lines the query
    // kernel left cost no DRAM write. Honoured only where each query row is read once (one split) and q is packed
    // with 128-byte aligned rows; q's contents are undefined afterwards. 0: q is left as it is.
    int discard_q = 0;

    // 1: o_partial is scratch that nothing reads after this launch (the layer's workspace): the combine kernel drops
    // each partial row's lines from L2 unwritten once it has read them, so the dirty partials cost no DRAM write during
    // the kernels after the attention (a probe with the partial stores left out took batches 1-32 5-7 µs faster in the
    // layer, only 1-2 of them in the attention: the rest was their write-back). Honoured where o_partial is 128-byte
    // aligned; o_partial's contents are undefined afterwards. Not by the seesaw kernel's merge of a long sequence's
    // pieces (one split, no combine kernel): one CTA's discards there sit on the attention's critical path (+5-6 µs
    // at batch 128 with 4 × 8191 + 124 × 511 tokens, for ~5 MB of partials). 0: left as they are.
    int discard_partial = 0;

    // 1: the kernel that follows on the stream was launched with programmatic dependent launch and waits
    // (griddepcontrol.wait) before it reads anything this launch writes (the layer's sm90 W_UV GEMM): the Hopper
    // kernel lets it launch at once, so its CTAs take the SMs the attention's CTAs leave and load their first weight
    // stages during the attention's tail. 0: the next kernel launches when this grid completes. A hint: never changes
    // a result (a kernel launched without the attribute ignores it).
    int launch_dependents = 0;

    // 1: the Hopper seesaw kernel deals its items (sequence, split, 64 heads) longest first, in a snake over its CTAs
    // (round k gives the k-th group of grid items by length to CTAs 0, 1, ... on even rounds and ..., 1, 0 on odd
    // ones), so unequal lengths load every CTA about equally; 0: CTA c takes items c, c + grid, ... in index order
    // (with unequal lengths some CTAs then take two long items while others idle). A schedule: never changes a
    // result (each item is computed the same way wherever it runs).
    int balance = 1;

    // The balanced schedule's list (mla_attention_schedule.cuh): [grid][kMlaScheduleRounds] ints of workspace
    // (mla_attention_workspace_bytes counts them, at mla_attention_schedule_offset). nullptr: index order whatever
    // `balance` says. schedule_ready = 1: an earlier kernel on the stream has written the list for a grid of
    // schedule_grid CTAs (the layer's fused query kernel, on a spare SM; mla_attention_seesaw_grid says the grid), so
    // the launch only reads it; 0 (or another grid): the launch writes it first, by a one-CTA kernel.
    int *schedule = nullptr;
    int schedule_ready = 0;
    int schedule_grid = 0;
    // 1: where the launch writes the list itself (schedule_ready 0) and there is one split, it may split long
    // sequences into pieces at run time (mla_attention_schedule.cuh); 0: whole items only. A prepared list says for
    // itself (MlaScheduleArgs::pieces). A schedule: never changes a result beyond the fp32 combine's rounding.
    int split_long = 1;
    // 1: where the seesaw kernel runs with its list and split_long, a static schedule of 2..kMlaRuntimeSplitsMax splits
    // runs as one split whose sequences the list's writer splits at run time from their lengths, into pieces whose
    // partials take the n_splits · batch rows of o_partial (mla_attention_runtime_split); the combine kernel then
    // merges each sequence's pieces. Why: the static splits are cut from max_cache_len, so a batch of mixed lengths
    // (e.g. 32 sequences of 1..8191 tokens: two splits of 4,096) is bounded by its longest split, twice the balanced
    // share. 0: the static splits. Either way the combine kernel follows. A schedule: never changes a result beyond
    // the fp32 combine's rounding.
    int runtime_split = 1;
    // Set by the launcher where the static splits run as one split with run-time pieces: [batch] ints written by the
    // list's writer each run, (first slot << 10) | pieces for a sequence cut into pieces, 0 for one run whole (the
    // attention wrote its o_lat, NaN rows for an invalid length). The combine kernel then merges each sequence's
    // pieces (rows first slot.. of o_partial) instead of its static splits, and the seesaw kernel's last piece does
    // not. nullptr: the static splits.
    const int *seq_pieces = nullptr;
};

// The list's bounds: at most this many rounds (more: index order, no list), units ranked (more: index order in the
// list) and CTAs (a larger grid, dev builds only: index order)
constexpr int kMlaScheduleRounds = 14, kMlaScheduleUnitsMax = 1024, kMlaScheduleCtasMax = 1024;
// The most static splits that run as one split with run-time pieces (MlaAttentionParams::runtime_split): batches of
// about 8-32 at long caches (from 33 sequences on, two head groups fill the grid unsplit), where it was measured
// (bench/results/2026-11-28-h200-runtime-split). More (batch 1-4: 16-65 splits a sequence) keep the static splits:
// the writer cuts a sequence into at most kMlaSplitCandidates (32) pieces, and there the static splits fill the grid.
constexpr int kMlaRuntimeSplitsMax = 8;
// split_len of one split over every length up to max_cache_len (a multiple of 64)
inline int one_split_len(int max_cache_len) { return (max_cache_len + 1 + 63) / 64 * 64; }

// Choose n_splits / split_len for (batch, n_heads, max_cache_len) on a device with sm_count SMs from a cost model
// (waves of one block per SM × tiles per split, plus the combine's fp32 round trip when split); large batches get
// one split per sequence. Deterministic: a function of the arguments only.
void mla_attention_schedule(int batch, int n_heads, int max_cache_len, int sm_count, int *n_splits, int *split_len);

// Workspace the attention needs (o_partial, lse_partial, then the schedule's list at mla_attention_schedule_offset,
// and the run-time pieces after it), bytes, for the given split schedule.
size_t mla_attention_workspace_bytes(int batch, int n_heads, int n_splits);
size_t mla_attention_schedule_offset(int batch, int n_heads, int n_splits);

// The seesaw kernel's grid for these parameters on `device` (0: it would not run), the grid a prepared list must be
// written for (MlaAttentionParams::schedule_grid).
int mla_attention_seesaw_grid(const MlaAttentionParams &p, int device);
// Whether the seesaw kernel runs these parameters (static n_splits > 1) as one split with pieces made at run time
// (MlaAttentionParams::runtime_split): returns the piece slots (n_splits · batch, the rows of o_partial), else 0 (the
// static splits). Either way the combine kernel follows. A prepared list must then be written for one split,
// split_len ≥ max_cache_len + 1, with these slots (MlaScheduleArgs::piece_slots) and the table of each sequence's
// pieces (MlaScheduleArgs::seq_pieces at mla_schedule_seq_pieces). `grid`: mla_attention_seesaw_grid's.
int mla_attention_runtime_split(const MlaAttentionParams &p, int grid);

// The merge a launch left to its caller (mla_attention_launch's `deferred`): needed = 1 where the splits still have
// to be merged into o_lat, from the static splits (seq_pieces nullptr) or from the run-time pieces (their table, as
// MlaAttentionParams::seq_pieces); 0 where the attention wrote o_lat itself.
struct MlaCombineDeferred {
    int needed = 0;
    const int *seq_pieces = nullptr;
};

// Enqueue the split kernel and the combine kernel on `stream`. No allocation, no synchronization.
// With n_splits == 1 the fast kernels write o_lat (and NaN rows for invalid lengths) themselves and no combine is
// launched: o_partial / lse_partial are then untouched (still required: the simple kernel uses them).
// deferred (optional): no combine kernel is launched; *deferred says what the caller must merge (the layer's W_UV
// with the combine folded in, mla_uv_combine.cuh).
// rope_cos / rope_sin must be 16-byte aligned (cudaErrorMisalignedAddress otherwise; the API layer checks it).
cudaError_t mla_attention_launch(const MlaAttentionParams &p, cudaStream_t stream, MlaCombineDeferred *deferred = nullptr);

// The Hopper kernel (mla_attention_sm90.cu): whether it can run on `device` (compute capability 9.0, this build has
// sm_90a code, enough opt-in smem), and its launch (same parameters, partial format and combine as above; the caller
// launches the combine when n_splits > 1).
bool mla_attention_wgmma_available(int device);
cudaError_t mla_attention_wgmma_launch(const MlaAttentionParams &p, int device, cudaStream_t stream);
// v3 (mla_attention_sm90_seesaw.cu): the seesaw warpgroups fed by TMA. Runs where the v2.1 kernel runs (same
// availability); cudaErrorNotSupported (nothing launched) where the driver cannot describe the cache as a TMA tensor
// map (no encoder, or a stride / base address the unit cannot take): the caller then launches v2.1.
// *piece_slots (if given): mla_attention_runtime_split's slots where it launched the static splits as one split with
// run-time pieces (the combine must then merge them: MlaAttentionParams::seq_pieces), else 0.
cudaError_t mla_attention_seesaw_launch(const MlaAttentionParams &p, int device, cudaStream_t stream,
                                        int *piece_slots = nullptr);
#if defined(LATTE_DEV_EXPERIMENTS)
// Builds with -DLATTE_DEV_EXPERIMENTS: the timeline of LATTE_MLA_WGMMA_EXPERIMENT bit 8 ([2 warpgroups][8 pairs][32]
// clock64 values: steps 0-15 as numbered in the kernel, 16-24 the S chunk waits)
cudaError_t mla_attention_seesaw_trace(unsigned long long *host);
// which pairs the timeline records: pairs first_pair.. of block 0's item `item` (its items in order; default 0, 8)
cudaError_t mla_attention_seesaw_trace_select(int item, int first_pair);
// and the CTAs' item timeline: [512 CTAs][11] globaltimer ns (entry; Q ready, pairs done, output written of items
// 0-2; exit), then [512][2][6] the end of each CTA's items 0 and 1 in steps (pairs done, tail tile landed, tail
// scores exchanged, tail folded in, row sums exchanged, output written), then [512][4] the start (the items that read
// nothing cleared, the list read, the first item known, the mbarriers set up and its copies issued),
// 0 where a CTA had no such event since the last clear
cudaError_t mla_attention_seesaw_item_trace(unsigned long long *host);
cudaError_t mla_attention_seesaw_item_trace_clear();
// the one-CTA list writer's clock64 at its steps (mla_attention_schedule.cuh), its last launch: [8]
cudaError_t mla_attention_schedule_clocks(long long *host);
#endif

}  // namespace latte
