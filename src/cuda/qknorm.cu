// QK RMSNorm across heads, CUDA backend.
//
// What: for every token, q[n, :] *= rsqrt(mean(q[n, :]^2) + eps) * w_q and the same for k, all heads of
// the row together (spec/qknorm.md). Memory-bound: each element is read once and written once, so the
// goal is copy bandwidth for large N and one short launch for small N.
//
// Reference: src/cpu/qknorm_cpu.c. Both backends compute
//   s = sum x^2,  r = s / D + eps (double),  inv = r == 0 ? 0 : (float)(1 / sqrt(r)),  y = (x * inv) * w (fp32)
// and round once at the store; only the summation order of s differs, so they agree to 1 ulp.
//
// Work split (variant 0, below): one block per row. Blocks [0, N) take the q rows, [N, 2N) the k rows (one launch for both;
// q and k may have different widths, the block size is chosen for the wider one and the narrower rows
// leave some threads idle). A grid-stride loop over rows covers any N.
//
// Sum of squares: for bf16/f16 the square of a value is exact in fp32, so the fast path sums in fp32;
// when the row sum leaves [2^-100, 2^100] (a zero row, 1e30 or 1e-30 values, where fp32 would overflow
// or lose the small squares to underflow) the block sums the row again in double. fp32 activations are
// summed in double from the start (their squares are exact only in double).
//
// Kernel versions:
//   qknorm_rows_in_registers  16-byte vector loads, the row held in registers between the reduction and
//                             the scaling (VPT vectors per thread, compile time): one read of the row.
//                             Needs 16-byte aligned pointers, strides and widths multiple of the vector.
//   qknorm_rows_two_pass      loops over the row twice (sum, then scale), vectors of VEC elements: VEC =
//                             the 16-byte vector for very wide aligned rows, VEC = 1 (scalar) for
//                             misaligned pointers, odd strides or odd widths. Any width is correct.
//   qknorm_row_groups         the register path generalized: a block takes several rows of one tensor
//                             (a group of threads per row, a warp or more), each tensor with its own group
//                             size, so the narrow k rows of a GQA layer fill the block; optionally
//                             persistent (about one wave of blocks) and pipelined: the next rows' loads
//                             are issued before the current rows' reduction and stores.
//
// Variants (benchmark knob LATTE_QKNORM_VARIANT, read once per process; the vector register path only,
// rows too wide for registers and the scalar path are the same in all):
//   0 (default)  qknorm_rows_in_registers, one row per block, up to 512 threads
//   1            row groups, at most 128 threads per row (twice the vectors per thread of 0 for wide
//                rows: more rows resident per SM, shorter reductions)
//   2            row groups, one warp per row (shuffles only, no barrier) when a row is at most 512
//                vectors (16 per lane), otherwise as 1
//   3            row groups with the block shape of 0, persistent and pipelined
//   4            as 1, persistent and pipelined
//   5            as 2, persistent and pipelined
//   6            as 0 (same kernel, TUNED), but the weights' miss hidden: each thread's weight lines are
//                prefetched (L2 evict_last + L1) with its row loads and loaded L1 evict_last, and q and k
//                rows alternate in block order (no all-SM stall on the k weights in mid-kernel)
//   7            6 + programmatic dependent launch: griddepcontrol.launch_dependents / wait at block start,
//                launched with the programmatic-serialization attribute (the next call's launch and block
//                dispatch overlap this call's tail)
//   8            7 + each block's first row bulk-prefetched into L2 before the wait (coherent: L2 is the
//                point of coherence; nothing is loaded into registers or L1 before the wait)
//   6-8 run on sm_90 only (elsewhere: 0). They are probes of the fixed ~5 us (docs/NOTES.md "QK RMSNorm v2
//   probe", latte-bench --qknorm-probe), not yet a default.
// Pipelining holds two rows in registers; where that would be 2 x 16 vectors per thread it is left
// out (the same shape, not persistent). Resource use (sm_90a, bf16, registers per thread): D = 8192 is
// 0: 256 threads x 4 vectors, 54 regs; 1: 128 x 8, 64 regs (8 blocks/SM); 3: 256 x 4, 82 regs;
// 4: 128 x 8, 118 regs; D = 4096 under 2 and 5: a warp x 16 vectors, 102 regs; 6-8: as 0 (54 regs at
// D = 8192, 38 at D = 4096; 82 at VPT 8, where the non-coherent weight loads are batched). No spills. All variants compute the same formula with the same roundings;
// only the order of the fp32 (or double) partial sums differs, as between any block shapes.
#include "internal.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdlib.h>

#include <atomic>
#include <type_traits>

namespace {

// ---- element conversions ----------------------------------------------------------------------
template <class T> struct Elem;
template <> struct Elem<__nv_bfloat16> {
    static __device__ __forceinline__ float to_f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
    static __device__ __forceinline__ uint16_t from_f(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
};
template <> struct Elem<__half> {
    static __device__ __forceinline__ float to_f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
    static __device__ __forceinline__ uint16_t from_f(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
template <> struct Elem<float> {
    static __device__ __forceinline__ float to_f(uint32_t u) { return __uint_as_float(u); }
    static __device__ __forceinline__ uint32_t from_f(float f) { return __float_as_uint(f); }
};
template <class T> using Bits = typename std::conditional<sizeof(T) == 2, uint16_t, uint32_t>::type;

// N consecutive elements of type T starting at p, as fp32. 16-byte loads when N * sizeof(T) is a multiple
// of 16 (the caller guarantees the alignment), scalar loads otherwise. `ro`: read-only data (weights),
// loaded through the non-coherent cache.
template <class T, int N, bool ro>
__device__ __forceinline__ void load_f32(const T *p, float (&f)[N]) {
    if constexpr ((N * sizeof(T)) % 16 == 0) {
        constexpr int n16 = N * (int)sizeof(T) / 16, per = 16 / (int)sizeof(T);
#pragma unroll
        for (int v = 0; v < n16; v++) {
            const uint4 *q = reinterpret_cast<const uint4 *>(p) + v;
            uint4 u = ro ? __ldg(q) : *q;
            uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
            for (int j = 0; j < per; j++) {
                if constexpr (sizeof(T) == 2)
                    f[v * per + j] = Elem<T>::to_f((uint16_t)(w[j / 2] >> (16 * (j % 2))));
                else
                    f[v * per + j] = Elem<T>::to_f(w[j]);
            }
        }
    } else {
        const Bits<T> *b = reinterpret_cast<const Bits<T> *>(p);
#pragma unroll
        for (int j = 0; j < N; j++) f[j] = Elem<T>::to_f(ro ? __ldg(b + j) : b[j]);
    }
}

// The raw 16 bytes of one activation vector (kept in registers by the fast path).
template <class T>
__device__ __forceinline__ void unpack16(const uint4 &u, float (&f)[16 / sizeof(T)]) {
    uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int j = 0; j < (int)(16 / sizeof(T)); j++) {
        if constexpr (sizeof(T) == 2)
            f[j] = Elem<T>::to_f((uint16_t)(w[j / 2] >> (16 * (j % 2))));
        else
            f[j] = Elem<T>::to_f(w[j]);
    }
}

template <class T, int N>
__device__ __forceinline__ void store_f32(T *p, const float (&f)[N]) {
    if constexpr ((N * sizeof(T)) % 16 == 0) {
        constexpr int n16 = N * (int)sizeof(T) / 16, per = 16 / (int)sizeof(T);
#pragma unroll
        for (int v = 0; v < n16; v++) {
            uint32_t w[4];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                if constexpr (sizeof(T) == 2)
                    w[k] = (uint32_t)Elem<T>::from_f(f[v * per + 2 * k]) |
                           ((uint32_t)Elem<T>::from_f(f[v * per + 2 * k + 1]) << 16);
                else
                    w[k] = Elem<T>::from_f(f[v * per + k]);
            }
            reinterpret_cast<uint4 *>(p)[v] = make_uint4(w[0], w[1], w[2], w[3]);
        }
    } else {
        Bits<T> *b = reinterpret_cast<Bits<T> *>(p);
#pragma unroll
        for (int j = 0; j < N; j++) b[j] = Elem<T>::from_f(f[j]);
    }
}

// ---- reductions -----------------------------------------------------------------------------------
template <class A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block (blockDim.x a multiple of 32). Every warp reduces the per-warp partials itself, in
// the same order, so every thread gets the same bits and no broadcast step is needed. `red` holds 32
// entries; the trailing barrier lets the caller reuse it.
template <class A>
__device__ __forceinline__ A block_sum(A v, A *red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0) red[warp] = v;
    __syncthreads();
    A t = lane < n_warps ? red[lane] : A(0);
    t = warp_sum(t);
    __syncthreads();
    return t;
}

// The formula shared with the CPU backend (src/cpu/qknorm_cpu.c: inv_rms).
__device__ __forceinline__ float inv_rms(double sum_squares, int width, float eps) {
    double r = sum_squares / (double)width + (double)eps;
    return r == 0.0 ? 0.0f : (float)(1.0 / sqrt(r));
}

// fp32 row sums outside this range are redone in double (overflow, or squares lost to underflow).
__device__ __forceinline__ bool fp32_sum_unsafe(float s) { return s < 0x1p-100f || s > 0x1p100f; }

// x * inv * w with the rounding of every step explicit, so no contraction can differ from the CPU.
__device__ __forceinline__ float scale(float x, float inv, float w, bool plus_one) {
    return __fmul_rn(__fmul_rn(x, inv), plus_one ? __fadd_rn(1.0f, w) : w);
}

// ---- the tuned register path (variants 6-8): features, each a runtime flag of one kernel ----------
// Why each exists (docs/NOTES.md, "QK RMSNorm v2 probe"): the register path carries a fixed ~5 us over a
// copy of the same bytes; these remove the suspected pieces one at a time so that one benchmark run can
// tell which matters.
enum : unsigned {
    // q and k rows alternate in block order: both weight vectors are needed (and missed in L1) in the first
    // wave, instead of every SM stalling on the k weights at the q -> k switch in mid-kernel
    kFeatInterleave = 1u,
    // the thread's weight lines are prefetched (L2 evict_last, and L1) as soon as its row loads are
    // issued, and loaded L1 evict_last: their miss (L1 is cold at every kernel start, and the lines are
    // likely gone from L2 after a call's 100+ MB of streaming) overlaps the row loads instead of following
    // the reduction, and the streamed rows do not push them out of L1
    kFeatWeightsEarly = 2u,
    // programmatic dependent launch (sm_90): the next kernel in the stream may be launched once every
    // block of this one has started, and this one waits (griddepcontrol.wait) for the previous kernel's
    // completion and memory flush before its first global access: launch and block dispatch overlap the
    // previous kernel's tail
    kFeatPdl = 4u,
    // with kFeatPdl: the block's first row (and, in the first block of each tensor, its weights) is
    // prefetched into L2 before the wait. L2 is the point of coherence, so a line prefetched before the
    // previous kernel wrote it still reads back the written bytes after the wait; nothing enters L1.
    kFeatPrefetchRow = 8u,
};

// 16 bytes of weights (read-only: the non-coherent path, as __ldg), kept in L1 ahead of the rows. Not
// volatile: a pure load that the compiler may schedule like __ldg.
__device__ __forceinline__ uint4 ld_weights_kept(const void *p) {
    uint4 u;
    asm("ld.global.nc.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];\n"
        : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
        : "l"(p));
    return u;
}
// Hints: bring the 128-byte line holding p into L1 / into L2 (never fault).
__device__ __forceinline__ void prefetch_line_l1(const void *p) { asm volatile("prefetch.global.L1 [%0];\n" ::"l"(p)); }
__device__ __forceinline__ void prefetch_line_l2_keep(const void *p) {
    asm volatile("prefetch.global.L2::evict_last [%0];\n" ::"l"(p));
}

// The weights of one activation vector (V elements of TW, 16 or 32 bytes) through ld_weights_kept.
template <class TW, int V>
__device__ __forceinline__ void load_weights_kept(const TW *p, float (&f)[V]) {
    constexpr int n16 = V * (int)sizeof(TW) / 16, per = 16 / (int)sizeof(TW);
    static_assert(n16 * 16 == V * (int)sizeof(TW), "a weight vector is whole 16-byte units");
#pragma unroll
    for (int v = 0; v < n16; v++) {
        const uint4 u = ld_weights_kept(reinterpret_cast<const uint4 *>(p) + v);
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int j = 0; j < per; j++) {
            if constexpr (sizeof(TW) == 2)
                f[v * per + j] = Elem<TW>::to_f((uint16_t)(w[j / 2] >> (16 * (j % 2))));
            else
                f[v * per + j] = Elem<TW>::to_f(w[j]);
        }
    }
}

struct QkArgs {
    const void *q, *k;         // inputs
    void *q_out, *k_out;       // outputs (== inputs in place)
    const void *q_w, *k_w;     // weights
    int64_t q_stride, k_stride, q_out_stride, k_out_stride;  // elements
    int q_width, k_width;
    int64_t n;                 // tokens
    int64_t rows;              // n (q alone) or 2n
    float eps;
    bool plus_one;
    unsigned features;         // kFeat* bits: variants 6-8 (the tuned register path); 0 elsewhere
};

// The row this block works on: q rows first, then k rows.
template <class TA, class TW>
struct Row {
    const TA *x;
    TA *y;
    const TW *w;
    int width;
    // interleave: q row r is row 2r, k row r is row 2r + 1 (only when both tensors are present: rows = 2n)
    __device__ __forceinline__ Row(const QkArgs &a, int64_t row, bool interleave = false) {
        const bool is_k = interleave ? (row & 1) != 0 : row >= a.n;
        const int64_t r = interleave ? row >> 1 : is_k ? row - a.n : row;
        x = static_cast<const TA *>(is_k ? a.k : a.q) + r * (is_k ? a.k_stride : a.q_stride);
        y = static_cast<TA *>(is_k ? a.k_out : a.q_out) + r * (is_k ? a.k_out_stride : a.q_out_stride);
        w = static_cast<const TW *>(is_k ? a.k_w : a.q_w);
        width = is_k ? a.k_width : a.q_width;
    }
};

// Accumulator of the first pass: fp32 for 16-bit activations (squares exact), double for fp32.
template <class TA> using Acc = typename std::conditional<sizeof(TA) == 2, float, double>::type;

// Keep the packed values, not their fp32 unpacking, alive across a reduction (half the registers for
// 16-bit data): the empty asm hides that the values are unchanged, so they are unpacked again after it.
template <int N>
__device__ __forceinline__ void opaque(uint4 (&v)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+r"(v[i].x), "+r"(v[i].y), "+r"(v[i].z), "+r"(v[i].w));
}

// ---- fast path: the row in registers ------------------------------------------------------------
constexpr int kMaxThreadsInRegisters = 512;  // 128 registers per thread: room for 16 vectors

// Thread t holds vectors t, t + T, ..., t + (VPT-1) T of the row (T = blockDim.x), 16 bytes each:
// coalesced loads, all VPT loads in flight before the first use, one read of the row from memory.
// TUNED (variants 6-8): the kFeat* bits of a.features (runtime, block-uniform) are honoured. They change
// the weight loads, the row order and the launch, not the arithmetic; a.features = 0 is the plain kernel.
template <class TA, class TW, int VPT, bool TUNED>
__global__ void __launch_bounds__(kMaxThreadsInRegisters) qknorm_rows_in_registers(const QkArgs a) {
    constexpr int V = 16 / sizeof(TA);  // elements per vector
    using A = Acc<TA>;
    __shared__ A red[32];
    __shared__ double red_d[32];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    if constexpr (TUNED) return;  // the launcher runs the tuned variants on sm_90 only (build time)
#endif
    const unsigned feat = TUNED ? a.features : 0u;
    const bool interleave = TUNED && (feat & kFeatInterleave) != 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (TUNED && (feat & kFeatPdl)) {
        if ((feat & kFeatPrefetchRow) && threadIdx.x == 0 && blockIdx.x < a.rows) {
            // one bulk prefetch per row (16-byte multiple: the vector path's widths and alignment); the
            // weights once per tensor (the first block of each)
            const Row<TA, TW> r0(a, blockIdx.x, interleave);
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(r0.x), "r"(r0.width * (int)sizeof(TA))
                         : "memory");
            if (interleave ? blockIdx.x < 2 : (blockIdx.x == 0 || blockIdx.x == a.n))
                asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(r0.w),
                             "r"(r0.width * (int)sizeof(TW))
                             : "memory");
        }
        // the dependents may launch once every block has got here; their own wait still covers all of this
        // grid's writes
        asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
        asm volatile("griddepcontrol.wait;\n" ::: "memory");
    }
#endif
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const Row<TA, TW> r(a, row, interleave);
        const int n_vec = r.width / V;
        uint4 v[VPT];
#pragma unroll
        for (int i = 0; i < VPT; i++) {
            const int c = i * (int)blockDim.x + (int)threadIdx.x;
            v[i] = c < n_vec ? reinterpret_cast<const uint4 *>(r.x)[c] : make_uint4(0, 0, 0, 0);
        }
        if (TUNED && (feat & kFeatWeightsEarly)) {
#pragma unroll
            for (int i = 0; i < VPT; i++) {
                const int c = i * (int)blockDim.x + (int)threadIdx.x;
                if (c < n_vec) {
                    prefetch_line_l2_keep(r.w + (int64_t)c * V);
                    prefetch_line_l1(r.w + (int64_t)c * V);
                }
            }
        }
        A s = 0;
#pragma unroll
        for (int i = 0; i < VPT; i++) {
            float f[V];
            unpack16<TA>(v[i], f);
#pragma unroll
            for (int j = 0; j < V; j++) s += (A)f[j] * (A)f[j];
        }
        opaque(v);
        double sd = (double)block_sum(s, red);
        if constexpr (sizeof(A) == 4) {
            if (fp32_sum_unsafe((float)sd)) {  // block-uniform: every thread holds the same sum
                // a rare path: re-read the row (from L2) rather than convert the registers, which would
                // make ptxas hold the whole row in double
                double t = 0;
                for (int c = threadIdx.x; c < n_vec; c += blockDim.x) {
                    float f[V];
                    load_f32<TA, V, false>(r.x + (int64_t)c * V, f);
#pragma unroll
                    for (int j = 0; j < V; j++) t += (double)f[j] * (double)f[j];
                }
                sd = block_sum(t, red_d);
            }
        }
        const float inv = inv_rms(sd, r.width, a.eps);
        opaque(v);
        // Wide rows: keep the weight loads after the reduction (ptxas would hoist them above it, and the
        // row plus its weights would not fit in registers). Narrow rows: let them overlap the reduction.
        const TW *w = r.w;
        if constexpr (VPT >= 8) asm volatile("" : "+l"(w));
#pragma unroll
        for (int i = 0; i < VPT; i++) {
            const int c = i * (int)blockDim.x + (int)threadIdx.x;
            if (c < n_vec) {
                float f[V], wf[V];
                unpack16<TA>(v[i], f);
                if constexpr (TUNED)
                    load_weights_kept<TW, V>(w + (int64_t)c * V, wf);
                else
                    load_f32<TW, V, true>(w + (int64_t)c * V, wf);
#pragma unroll
                for (int j = 0; j < V; j++) f[j] = scale(f[j], inv, wf[j], a.plus_one);
                store_f32<TA, V>(r.y + (int64_t)c * V, f);
            }
        }
    }
}

// ---- general path: two passes over the row ------------------------------------------------------
// VEC elements per access (16 bytes when aligned, 1 otherwise). The second pass re-reads the row (from
// L2 for all but enormous rows).
template <class TA, class TW, int VEC>
__global__ void __launch_bounds__(1024) qknorm_rows_two_pass(const QkArgs a) {
    using A = Acc<TA>;
    __shared__ A red[32];
    __shared__ double red_d[32];
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const Row<TA, TW> r(a, row);
        const int n_vec = r.width / VEC;  // VEC divides the width (the launcher guarantees it)
        A s = 0;
        for (int c = threadIdx.x; c < n_vec; c += blockDim.x) {
            float f[VEC];
            load_f32<TA, VEC, false>(r.x + (int64_t)c * VEC, f);
#pragma unroll
            for (int j = 0; j < VEC; j++) s += (A)f[j] * (A)f[j];
        }
        double sd = (double)block_sum(s, red);
        if constexpr (sizeof(A) == 4) {
            if (fp32_sum_unsafe((float)sd)) {
                double t = 0;
                for (int c = threadIdx.x; c < n_vec; c += blockDim.x) {
                    float f[VEC];
                    load_f32<TA, VEC, false>(r.x + (int64_t)c * VEC, f);
#pragma unroll
                    for (int j = 0; j < VEC; j++) t += (double)f[j] * (double)f[j];
                }
                sd = block_sum(t, red_d);
            }
        }
        const float inv = inv_rms(sd, r.width, a.eps);
        for (int c = threadIdx.x; c < n_vec; c += blockDim.x) {
            float f[VEC], w[VEC];
            load_f32<TA, VEC, false>(r.x + (int64_t)c * VEC, f);
            load_f32<TW, VEC, true>(r.w + (int64_t)c * VEC, w);
#pragma unroll
            for (int j = 0; j < VEC; j++) f[j] = scale(f[j], inv, w[j], a.plus_one);
            store_f32<TA, VEC>(r.y + (int64_t)c * VEC, f);
        }
    }
}

// ---- row groups: several rows per block, optionally persistent and pipelined ---------------------
// A work item is one block's worth of rows of one tensor: rows_per_block rows, `group` threads each
// (a multiple of 32). The q items come first, then the k items; each tensor has its own group size, the
// vectors per thread (VPT) are shared. Threads past rows_per_block * group idle through the barriers.
struct Shape {
    int group;           // threads per row, a multiple of 32
    int rows_per_block;  // blockDim.x / group
    int64_t items;       // ceil(n / rows_per_block)
};
struct GroupArgs {
    QkArgs a;
    Shape q, k;  // named, not an array: a dynamic index into a kernel parameter would go to local memory
    int64_t items;
};

// One thread's part of one work item.
template <class TA, class TW>
struct Slot {
    const TA *x;
    TA *y;
    const TW *w;
    int width, n_vec, group, lane;  // lane: the thread's index within its row's group
    bool active;                    // the thread's row exists
    __device__ __forceinline__ Slot(const GroupArgs &g, int64_t item) {
        constexpr int V = 16 / sizeof(TA);
        const bool is_k = item >= g.q.items;
        const int rpb = is_k ? g.k.rows_per_block : g.q.rows_per_block;
        group = is_k ? g.k.group : g.q.group;
        const int sub = (int)threadIdx.x / group;
        lane = (int)threadIdx.x - sub * group;
        const int64_t r = (is_k ? item - g.q.items : item) * rpb + sub;
        active = sub < rpb && r < g.a.n;
        const int64_t rr = active ? r : 0;
        x = static_cast<const TA *>(is_k ? g.a.k : g.a.q) + rr * (is_k ? g.a.k_stride : g.a.q_stride);
        y = static_cast<TA *>(is_k ? g.a.k_out : g.a.q_out) + rr * (is_k ? g.a.k_out_stride : g.a.q_out_stride);
        w = static_cast<const TW *>(is_k ? g.a.k_w : g.a.q_w);
        width = is_k ? g.a.k_width : g.a.q_width;
        n_vec = width / V;
    }
};

// Sum over the `group` threads of a row (group block-uniform). A warp per row: shuffles alone. Wider
// groups: per-warp partials in `red`, each warp sums its group's partials in the same order (the same
// bits in every thread of the group); the trailing barrier lets the caller reuse `red`.
template <class A>
__device__ __forceinline__ A group_sum(A v, A *red, int group) {
    v = warp_sum(v);
    if (group == 32) return v;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5, wpg = group >> 5;
    const int first = warp - warp % wpg;
    if (lane == 0) red[warp] = v;
    __syncthreads();
    A t = lane < wpg && first + lane < n_warps ? red[first + lane] : A(0);
    t = warp_sum(t);
    __syncthreads();
    return t;
}

// Thread's vectors lane, lane + group, ... of its row (zeros past the row or for an idle thread).
template <class TA, class TW, int VPT>
__device__ __forceinline__ void load_slot(const Slot<TA, TW> &r, uint4 (&v)[VPT]) {
#pragma unroll
    for (int i = 0; i < VPT; i++) {
        const int c = i * r.group + r.lane;
        v[i] = r.active && c < r.n_vec ? reinterpret_cast<const uint4 *>(r.x)[c] : make_uint4(0, 0, 0, 0);
    }
}

// Sum of squares, inverse RMS, scale and store of the rows in v (as qknorm_rows_in_registers).
template <class TA, class TW, int VPT>
__device__ __forceinline__ void normalize_slot(const Slot<TA, TW> &r, uint4 (&v)[VPT], const QkArgs &a, Acc<TA> *red,
                                               double *red_d) {
    constexpr int V = 16 / sizeof(TA);
    using A = Acc<TA>;
    A s = 0;
#pragma unroll
    for (int i = 0; i < VPT; i++) {
        float f[V];
        unpack16<TA>(v[i], f);
#pragma unroll
        for (int j = 0; j < V; j++) s += (A)f[j] * (A)f[j];
    }
    opaque(v);
    double sd = (double)group_sum(s, red, r.group);
    if constexpr (sizeof(A) == 4) {
        // the rare double path for this row; the decision must be block-uniform where the group sum
        // uses barriers (other rows of the block may not need it), warp-uniform for a warp per row
        const bool unsafe = r.active && fp32_sum_unsafe((float)sd);
        const bool any = r.group == 32 ? __any_sync(0xffffffffu, unsafe) : __syncthreads_or(unsafe) != 0;
        if (any) {
            double t = 0;
            if (unsafe)
                for (int c = r.lane; c < r.n_vec; c += r.group) {
                    float f[V];
                    load_f32<TA, V, false>(r.x + (int64_t)c * V, f);
#pragma unroll
                    for (int j = 0; j < V; j++) t += (double)f[j] * (double)f[j];
                }
            t = group_sum(t, red_d, r.group);
            if (unsafe) sd = t;
        }
    }
    const float inv = inv_rms(sd, r.width, a.eps);
    opaque(v);
    const TW *w = r.w;
    if constexpr (VPT >= 8) asm volatile("" : "+l"(w));  // weights after the reduction (registers)
#pragma unroll
    for (int i = 0; i < VPT; i++) {
        const int c = i * r.group + r.lane;
        if (r.active && c < r.n_vec) {
            float f[V], wf[V];
            unpack16<TA>(v[i], f);
            load_f32<TW, V, true>(w + (int64_t)c * V, wf);
#pragma unroll
            for (int j = 0; j < V; j++) f[j] = scale(f[j], inv, wf[j], a.plus_one);
            store_f32<TA, V>(r.y + (int64_t)c * V, f);
        }
    }
}

// Block b takes items b, b + gridDim.x, ... PIPELINE: the next item's loads are issued before this
// item's reduction, so they are in flight during the barriers and the stores (two items in registers).
// Different items are different rows, so in place the early loads never read what this item writes.
template <class TA, class TW, int VPT, bool PIPELINE>
__global__ void __launch_bounds__(kMaxThreadsInRegisters) qknorm_row_groups(const GroupArgs g) {
    using A = Acc<TA>;
    __shared__ A red[32];
    __shared__ double red_d[32];
    int64_t item = blockIdx.x;
    if (item >= g.items) return;  // block-uniform
    Slot<TA, TW> r(g, item);
    uint4 v[VPT];
    load_slot(r, v);
    for (;;) {
        const int64_t next = item + gridDim.x;
        const bool more = next < g.items;
        if constexpr (PIPELINE) {
            Slot<TA, TW> rn = r;
            uint4 vn[VPT];
#pragma unroll
            for (int i = 0; i < VPT; i++) vn[i] = make_uint4(0, 0, 0, 0);
            if (more) {
                rn = Slot<TA, TW>(g, next);
                load_slot(rn, vn);
            }
            normalize_slot(r, v, g.a, red, red_d);
            if (!more) break;
            r = rn;
#pragma unroll
            for (int i = 0; i < VPT; i++) v[i] = vn[i];
        } else {
            normalize_slot(r, v, g.a, red, red_d);
            if (!more) break;
            r = Slot<TA, TW>(g, next);
            load_slot(r, v);
        }
        item = next;
    }
}

// ---- launch -------------------------------------------------------------------------------------
constexpr int kMaxVecPerThread = 16;                     // fast path: rows up to 16 * 512 vectors
constexpr int64_t kMaxGrid = (int64_t)1 << 30;           // grid-stride loop beyond

inline int round_up32(int64_t x) { return (int)((x + 31) / 32 * 32); }

// The variant (see the top of the file), read once: a benchmark knob, not part of the API.
int qknorm_variant() {
    static const int v = [] {
        const char *e = getenv("LATTE_QKNORM_VARIANT");
        if (!e || !*e) return -1;  // unset: chosen per call from the shapes (launch below)
        char *end = nullptr;
        const long x = strtol(e, &end, 10);
        return *end == '\0' && x >= 0 && x <= 8 ? (int)x : -1;
    }();
    return v;
}

// Vectors per thread of variant 0 for rows of n_vec vectors: 1 up to 128 vectors (<= 128 threads), 2 up
// to 512 (<= 256 threads), 4 up to 2048 (<= 512 threads), then 8 and 16 (<= 512 threads). Small rows get
// small blocks (latency), wide rows several 16-byte loads in flight per thread (bandwidth).
int tier_vpt(int64_t n_vec) {
    return n_vec <= 128 ? 1 : n_vec <= 512 ? 2 : n_vec <= 2048 ? 4 : n_vec <= 4096 ? 8 : 16;
}

// The fewest vectors per thread (a power of two <= 16) that cover n_vec with at most max_threads; 0: none.
int capped_vpt(int64_t n_vec, int max_threads) {
    for (int v = 1; v <= kMaxVecPerThread; v *= 2)
        if ((n_vec + v - 1) / v <= max_threads) return v;
    return 0;
}

// Blocks of `kernel` resident on the current device at `threads` per block, times the SM count; cached
// per kernel instantiation (the caller's static `cache`), device and block size. 0 when unknown.
constexpr int kCachedDevices = 16;
int resident_blocks(const void *kernel, int threads, std::atomic<int> (&cache)[kCachedDevices][17]) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const int slot = threads / 32;  // threads: a multiple of 32, <= 512
    if (dev < kCachedDevices && slot <= 16) {
        const int c = cache[dev][slot].load(std::memory_order_relaxed);
        if (c > 0) return c;
    }
    int per_sm = 0, sms = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const int total = per_sm * sms;
    if (total > 0 && dev < kCachedDevices && slot <= 16) cache[dev][slot].store(total, std::memory_order_relaxed);
    return total;
}

// qknorm_row_groups with VPT vectors per thread: each tensor's group is the threads its rows need at VPT,
// the wider tensor's group sets the block (rows of 32 or 64 threads: 128-thread blocks of 4 or 2 rows),
// the narrower tensor packs as many of its rows into that block as fit. PIPELINE: persistent grid.
template <class TA, class TW, int VPT, bool PIPELINE>
cudaError_t launch_groups(const QkArgs &a, int64_t nvec_q, int64_t nvec_k, cudaStream_t stream) {
    static std::atomic<int> cache[kCachedDevices][17];
    auto group_for = [](int64_t n_vec) { return n_vec > 0 ? round_up32((n_vec + VPT - 1) / VPT) : 32; };
    GroupArgs g;
    g.a = a;
    g.q.group = group_for(nvec_q);
    g.k.group = group_for(nvec_k);
    const int wide = g.q.group > g.k.group ? g.q.group : g.k.group;
    const int threads = wide >= 128 ? wide : wide * (128 / wide);
    g.q.rows_per_block = threads / g.q.group;
    g.k.rows_per_block = threads / g.k.group;
    g.q.items = (a.n + g.q.rows_per_block - 1) / g.q.rows_per_block;
    g.k.items = a.k_width > 0 ? (a.n + g.k.rows_per_block - 1) / g.k.rows_per_block : 0;
    g.items = g.q.items + g.k.items;
    int64_t grid = g.items < kMaxGrid ? g.items : kMaxGrid;
    const void *kernel = reinterpret_cast<const void *>(&qknorm_row_groups<TA, TW, VPT, PIPELINE>);
    if (PIPELINE) {
        // about one wave, balanced: every block gets ceil(items / wave) items or one fewer
        const int64_t wave = resident_blocks(kernel, threads, cache);
        if (wave > 0 && wave < g.items) {
            const int64_t per_block = (g.items + wave - 1) / wave;
            grid = (g.items + per_block - 1) / per_block;
        }
    }
    qknorm_row_groups<TA, TW, VPT, PIPELINE><<<(unsigned)grid, threads, 0, stream>>>(g);
    return cudaGetLastError();
}

template <class TA, class TW, bool PIPELINE>
cudaError_t launch_groups_vpt(int vpt, const QkArgs &a, int64_t nvec_q, int64_t nvec_k, cudaStream_t stream) {
    switch (vpt) {
    case 1: return launch_groups<TA, TW, 1, PIPELINE>(a, nvec_q, nvec_k, stream);
    case 2: return launch_groups<TA, TW, 2, PIPELINE>(a, nvec_q, nvec_k, stream);
    case 4: return launch_groups<TA, TW, 4, PIPELINE>(a, nvec_q, nvec_k, stream);
    case 8: return launch_groups<TA, TW, 8, PIPELINE>(a, nvec_q, nvec_k, stream);
    default: return launch_groups<TA, TW, 16, false>(a, nvec_q, nvec_k, stream);  // two rows would not fit
    }
}

// Compute capability major of the current device, cached per device; 0 when unknown.
int device_cc_major() {
    static std::atomic<int> cache[kCachedDevices];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (dev < kCachedDevices) {
        const int c = cache[dev].load(std::memory_order_relaxed);
        if (c > 0) return c;
    }
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (dev < kCachedDevices) cache[dev].store(major, std::memory_order_relaxed);
    return major;
}

// The features of the tuned variants (top of the file): 6 the weights' latency hidden, then one more
// piece each. q/k interleaving needs both tensors.
unsigned tuned_features(int variant, const QkArgs &a) {
    unsigned f = kFeatInterleave | kFeatWeightsEarly;
    if (variant >= 7) f |= kFeatPdl;
    if (variant >= 8) f |= kFeatPrefetchRow;
    if (a.k_width == 0 || a.rows != 2 * a.n) f &= ~kFeatInterleave;
    return f;
}

// qknorm_rows_in_registers at VPT vectors per thread, blockDim = the row's vectors / VPT (rounded to 32).
// A launch with kFeatPdl carries the programmatic-serialization attribute (captured into graphs as a
// programmatic edge).
template <class TA, class TW, int VPT, bool TUNED>
cudaError_t launch_registers_vpt(const QkArgs &a, int64_t n_vec, unsigned grid, cudaStream_t stream) {
    const int threads = round_up32((n_vec + VPT - 1) / VPT);
    if (TUNED && (a.features & kFeatPdl)) {
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(grid);
        cfg.blockDim = dim3((unsigned)threads);
        cfg.dynamicSmemBytes = 0;
        cfg.stream = stream;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        return cudaLaunchKernelEx(&cfg, qknorm_rows_in_registers<TA, TW, VPT, TUNED>, a);
    }
    qknorm_rows_in_registers<TA, TW, VPT, TUNED><<<grid, threads, 0, stream>>>(a);
    return cudaGetLastError();
}

template <class TA, class TW, bool TUNED>
cudaError_t launch_registers(const QkArgs &a, int64_t n_vec, unsigned grid, cudaStream_t stream) {
    switch (tier_vpt(n_vec)) {
    case 1: return launch_registers_vpt<TA, TW, 1, TUNED>(a, n_vec, grid, stream);
    case 2: return launch_registers_vpt<TA, TW, 2, TUNED>(a, n_vec, grid, stream);
    case 4: return launch_registers_vpt<TA, TW, 4, TUNED>(a, n_vec, grid, stream);
    case 8: return launch_registers_vpt<TA, TW, 8, TUNED>(a, n_vec, grid, stream);
    default: return launch_registers_vpt<TA, TW, 16, TUNED>(a, n_vec, grid, stream);
    }
}

template <class TA, class TW>
cudaError_t launch(const QkArgs &a, bool vector_ok, cudaStream_t stream) {
    constexpr int V = 16 / sizeof(TA);
    const int64_t width = a.q_width > a.k_width ? a.q_width : a.k_width;
    const unsigned grid = (unsigned)(a.rows < kMaxGrid ? a.rows : kMaxGrid);
    const int64_t n_vec = width / V;
    // Default (measured on an H200, docs/NOTES.md): variant 0 for q and k of one width (0 and 1 tie within 1-2%;
    // 0 is ahead at (8192, 8192): 96% vs 93% of copy); variant 1 when the widths differ, where packing the
    // narrow k rows several to a block gave 91% of copy against 80% (GQA 8192 x (6144 + 1024)).
    int variant = qknorm_variant();
    if (variant < 0) variant = (a.k_width > 0 && a.k_width != a.q_width) ? 1 : 0;
    // the tuned variants: sm_90 only (griddepcontrol, bulk prefetch; their kernels are empty elsewhere)
    if (variant >= 6 && device_cc_major() < 9) variant = 0;
    if (vector_ok && n_vec <= (int64_t)kMaxVecPerThread * kMaxThreadsInRegisters && variant >= 6) {
        QkArgs t = a;
        t.features = tuned_features(variant, a);
        return launch_registers<TA, TW, true>(t, n_vec, grid, stream);
    }
    if (vector_ok && n_vec <= (int64_t)kMaxVecPerThread * kMaxThreadsInRegisters && variant > 0) {
        int vpt = variant == 3 ? tier_vpt(n_vec) : 0;
        if ((variant == 2 || variant == 5) && n_vec <= 32 * kMaxVecPerThread) vpt = capped_vpt(n_vec, 32);
        if (vpt == 0) vpt = capped_vpt(n_vec, 128);
        if (vpt == 0) vpt = tier_vpt(n_vec);  // wider than 128 x 16 vectors: up to 512 threads
        const int64_t nvec_q = a.q_width / V, nvec_k = a.k_width / V;
        return variant >= 3 ? launch_groups_vpt<TA, TW, true>(vpt, a, nvec_q, nvec_k, stream)
                            : launch_groups_vpt<TA, TW, false>(vpt, a, nvec_q, nvec_k, stream);
    }
    if (vector_ok && n_vec <= (int64_t)kMaxVecPerThread * kMaxThreadsInRegisters) {
        return launch_registers<TA, TW, false>(a, n_vec, grid, stream);
    } else if (vector_ok) {
        qknorm_rows_two_pass<TA, TW, V><<<grid, 1024, 0, stream>>>(a);
    } else {
        const int threads = width >= 512 ? 512 : round_up32(width);
        qknorm_rows_two_pass<TA, TW, 1><<<grid, threads, 0, stream>>>(a);
    }
    return cudaGetLastError();
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

}  // namespace

// Called by src/api/qknorm.c with validated, resolved parameters (q_out non-NULL; k NULL iff k_width 0;
// device pointers; N > 0). Enqueues one kernel on `stream`; no allocation, no synchronization.
extern "C" latte_status latte_cuda_qknorm(const latte_qknorm_params *p, latte_stream_t stream) {
    const bool has_k = p->k_width > 0;
    QkArgs a;
    a.q = p->q;
    a.k = has_k ? p->k : nullptr;
    a.q_out = p->q_out;
    a.k_out = has_k ? p->k_out : nullptr;
    a.q_w = p->q_weight;
    a.k_w = has_k ? p->k_weight : nullptr;
    a.q_stride = p->q_row_stride;
    a.k_stride = has_k ? p->k_row_stride : 0;
    a.q_out_stride = p->q_out_row_stride;
    a.k_out_stride = has_k ? p->k_out_row_stride : 0;
    a.q_width = (int)p->q_width;
    a.k_width = (int)p->k_width;
    a.n = p->n_tokens;
    a.rows = p->n_tokens * (has_k ? 2 : 1);
    a.eps = p->eps;
    a.plus_one = (p->flags & LATTE_QKNORM_WEIGHT_PLUS_ONE) != 0;
    a.features = 0;

    // 16-byte vectors everywhere, or the scalar path for the whole launch
    const int64_t V = 16 / (int64_t)latte_dtype_size(p->dtype);
    bool vector_ok = aligned16(a.q) && aligned16(a.q_out) && aligned16(a.q_w) && a.q_width % V == 0 &&
                     a.q_stride % V == 0 && a.q_out_stride % V == 0;
    if (has_k)
        vector_ok = vector_ok && aligned16(a.k) && aligned16(a.k_out) && aligned16(a.k_w) && a.k_width % V == 0 &&
                    a.k_stride % V == 0 && a.k_out_stride % V == 0;

    cudaStream_t s = stream;
    const bool wf32 = p->weight_dtype == LATTE_DTYPE_F32;
    cudaError_t e = cudaSuccess;
    switch (p->dtype) {
    case LATTE_DTYPE_BF16:
        e = wf32 ? launch<__nv_bfloat16, float>(a, vector_ok, s) : launch<__nv_bfloat16, __nv_bfloat16>(a, vector_ok, s);
        break;
    case LATTE_DTYPE_F16:
        e = wf32 ? launch<__half, float>(a, vector_ok, s) : launch<__half, __half>(a, vector_ok, s);
        break;
    case LATTE_DTYPE_F32: e = launch<float, float>(a, vector_ok, s); break;
    default: return latte_set_error(LATTE_STATUS_INTERNAL_ERROR, "qknorm: dtype %d reached the CUDA backend", (int)p->dtype);
    }
    if (e != cudaSuccess)
        return latte_set_error(LATTE_STATUS_CUDA_ERROR, "qknorm: kernel launch failed: %s (%s)", cudaGetErrorName(e),
                               cudaGetErrorString(e));
    return LATTE_STATUS_SUCCESS;
}
