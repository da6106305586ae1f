// The inline-PTX instructions latte's kernels use, in one place, each with a line on what it does.
// The first group exists from sm_80 on (Ampere and Hopper); the Hopper-only group (wgmma and its fences) is
// compiled only for sm_90a (LATTE_PTX_SM90A) and is empty elsewhere.
#pragma once

#include <stdint.h>

namespace latte {
namespace ptx {

// The 32-bit shared-memory address of a generic pointer into shared memory (what the instructions below take).
__device__ __forceinline__ uint32_t smem_u32(const void *ptr) { return (uint32_t)__cvta_generic_to_shared(ptr); }

// cp.async: copy 16 bytes global -> shared without passing through registers (L2 only, .cg); valid = false
// zero-fills the 16 destination bytes and reads nothing from global memory (tile rows past the end).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void *src, bool valid) {
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
// The same with an L2 cache policy (`policy` from stream_policy(): evict-first, for weights read once).
__device__ __forceinline__ void cp_async_16_hint(uint32_t dst, const void *src, bool valid, uint64_t policy) {
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes), "l"(policy)
                 : "memory");
}
// Closes the group of cp.async issued by this thread since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed cp.async groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// discard.global.L2: drop the 128-byte line at ptr (128-byte aligned) from L2 without writing it back; its contents
// become undefined. For scratch a kernel has read for the last time: a dirty line then costs no DRAM write.
__device__ __forceinline__ void discard_l2(const void *ptr) {
    asm volatile("discard.global.L2 [%0], 128;\n" ::"l"(ptr) : "memory");
}
// Hint: bring the 128-byte line holding ptr into L1 (never faults).
__device__ __forceinline__ void prefetch_l1(const void *ptr) { asm volatile("prefetch.global.L1 [%0];\n" ::"l"(ptr)); }
// 16 bytes of read-only global memory, loaded where this statement stands: a volatile asm stays in order with the
// other volatile asm (wgmma, mbarrier waits), so the compiler cannot sink the load to its first use as it may an __ldg.
__device__ __forceinline__ uint4 ld_nc_early(const void *ptr) {
    uint4 v;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(ptr));
    return v;
}

// An L2 policy for data read once (createpolicy evict_first, sm_80+), the operand of cp_async_16_hint.
__device__ __forceinline__ uint64_t stream_policy() {
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
    return pol;
}

// ldmatrix x4: four 8x8 b16 matrices from shared memory into the mma fragment layout; lanes 8i..8i+7 give the
// row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// The same, each 8x8 matrix transposed on the way (a row-major V tile as the column-major B operand).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// mma.sync m16n8k16: D (16x8 fp32) += A (16x16 bf16, row-major) · B (16x8 bf16, column-major), one warp.
// Fragments (g = lane/4, t = lane%4): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..);
// b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g); d0 d1 (g, 2t..2t+1), d2 d3 (g+8, 2t..2t+1).
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}


// Named barrier b (1..15; 0 is __syncthreads) for `count` threads (a multiple of 32): bar.sync waits until `count`
// threads have arrived (counting itself); bar.arrive counts this thread without waiting. A producer warpgroup's
// arrive and a consumer's sync order the producer's earlier memory accesses before the consumer's later ones.
__device__ __forceinline__ void named_bar_sync(int b, int count) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(b), "r"(count) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int b, int count) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(b), "r"(count) : "memory");
}
// bar.sync of named barrier b that also ORs a predicate over the `count` threads and hands every one the result
// (bar.red.or.pred): a one-bit broadcast with no shared-memory exchange
__device__ __forceinline__ bool named_bar_sync_or(int b, int count, bool pred) {
    uint32_t r;
    asm volatile(
        "{\n .reg .pred p, q;\n setp.ne.u32 q, %1, 0;\n bar.red.or.pred p, %2, %3, q;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(r)
        : "r"((uint32_t)pred), "r"(b), "r"(count)
        : "memory");
    return r != 0;
}

// ---- Hopper (sm_90a) only: warpgroup MMA. On other targets these compile to nothing and are never reached (the
//      launchers select the wgmma kernel only on a compute capability 9.0 device running sm_90a code). ----
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LATTE_PTX_SM90A 1
#else
#define LATTE_PTX_SM90A 0
#endif

// Shared-memory matrix descriptor of a wgmma operand in the 128-byte-swizzle layout: rows of 128 bytes whose
// 16-byte units are XORed with (row % 8), groups of 8 rows 1024 bytes apart (SBO), the 14-bit fields in units of
// 16 bytes, swizzle mode 1 = 128 B (bits 62-63). The start must sit in a 1024-byte aligned atom (base offset 0).
// K-major operands (rows = M or N, 64 K-elements per row): lbo unused; a k-step of 16 bf16 adds 32 bytes to start.
// MN-major operands (rows = K, 64 M/N-elements per row): lbo = the distance between blocks of 64 M/N elements.
__device__ __forceinline__ uint64_t wgmma_desc_sw128(uint32_t smem_start, uint32_t lbo_bytes, uint32_t sbo_bytes) {
    return (uint64_t)((smem_start & 0x3FFFFu) >> 4) | ((uint64_t)((lbo_bytes >> 4) & 0x3FFFu) << 16) |
           ((uint64_t)((sbo_bytes >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}

// Orders this warpgroup's earlier register accesses before the wgmma that follow (required before the first
// wgmma.mma_async of a batch that reads or writes accumulator registers touched by ordinary instructions).
__device__ __forceinline__ void wgmma_fence() {
#if LATTE_PTX_SM90A
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
// Closes the batch of wgmma.mma_async issued by this warpgroup since the last commit into one group.
__device__ __forceinline__ void wgmma_commit() {
#if LATTE_PTX_SM90A
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most N of this warpgroup's committed wgmma groups are pending (their accumulators are then
// readable and their shared-memory operands may be overwritten).
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if LATTE_PTX_SM90A
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Makes this thread's ordinary shared-memory writes (st.shared, cp.async) visible to the async proxy, which is
// how wgmma reads its shared-memory operands; put it before the barrier that hands the data to the wgmma.
__device__ __forceinline__ void fence_proxy_async_smem() {
#if LATTE_PTX_SM90A
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// D (64x32 fp32, 16 per thread) += A (64x16 bf16, K-major, smem desc) · B (16x32 bf16, K-major i.e. stored
// [n][k], smem desc). D fragment (warp w of the warpgroup, g = lane/4, t = lane%4): d[4j..4j+1] = row 16w+g,
// columns 8j+2t..+1; d[4j+2..4j+3] = row 16w+g+8, same columns.
__device__ __forceinline__ void wgmma_m64n32k16_ss(float (&d)[16], uint64_t a_desc, uint64_t b_desc) {
#if LATTE_PTX_SM90A
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
        "%16, %17, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                   "+f"(d[15])
                 : "l"(a_desc), "l"(b_desc), "r"(1));  // scale-d = 1: D += A·B
#else
    (void)d, (void)a_desc, (void)b_desc;
#endif
}

// D (64x256 fp32, 128 per thread) += A (64x16 bf16, K-major, smem desc) · B (16x256 bf16, MN-major i.e. stored
// [k][n] with n contiguous, smem desc, transposed on the way: imm-trans-b = 1). Fragment as for m64n32k16.
__device__ __forceinline__ void wgmma_m64n256k16_ss_tb(float (&d)[128], uint64_t a_desc, uint64_t b_desc) {
#if LATTE_PTX_SM90A
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "
        "%23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, "
        "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, "
        "%65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, "
        "%86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, "
        "%106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
        "%123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                   "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
                   "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
                   "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
                   "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
                   "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
                   "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]),
                   "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
                   "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]),
                   "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]),
                   "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]),
                   "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]),
                   "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]),
                   "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
                   "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]),
                   "+f"(d[127])
                 : "l"(a_desc), "l"(b_desc), "r"(1));  // scale-d = 1: D += A·B
#else
    (void)d, (void)a_desc, (void)b_desc;
#endif
}

// ---- mbarrier + TMA (sm_90a): a tensor-map copy lands in shared memory and completes a transaction count on an
//      mbarrier; waiting threads observe the barrier's phase flip. ----
// Initialize the mbarrier at `bar` (8 bytes of smem) to expect `count` arrivals per phase.
__device__ __forceinline__ void mbarrier_init(uint32_t bar, uint32_t count) {
#if LATTE_PTX_SM90A
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}
// Make this thread's mbarrier.init visible to the async proxy (the TMA unit) before any copy signals it.
__device__ __forceinline__ void fence_mbarrier_init() {
#if LATTE_PTX_SM90A
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// Arrive on `bar` (one of its arrivals) and raise the bytes the current phase waits for by `bytes`.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#if LATTE_PTX_SM90A
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
// Arrive on `bar` (one of its arrivals; release: this thread's earlier shared-memory accesses are ordered before
// whatever a thread that then sees the phase complete does next).
__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) {
#if LATTE_PTX_SM90A
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
// Wait until the phase of `bar` with parity `parity` has completed (spins on try_wait, which suspends a while).
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
#if LATTE_PTX_SM90A
    uint32_t done = 0;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
#endif
}
// TMA: copy the box at coordinates (c0, c1, c2) of the 3-D tensor map `tmap` (a __grid_constant__ kernel parameter)
// into shared memory at `dst`, in the map's swizzle; the bytes complete on mbarrier `bar`. Out-of-range parts of the
// box are zero-filled.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const void *tmap, int c0, int c1, int c2, uint32_t bar) {
#if LATTE_PTX_SM90A
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
        ::"r"(dst), "l"(reinterpret_cast<uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
#endif
}

// TMA store: copy shared memory at `src` (in the map's swizzle) to the box at coordinates (c0, c1, c2) of the 3-D
// tensor map `tmap`; out-of-range parts of the box are not written. Asynchronous: part of this thread's current bulk
// group (bulk_commit / bulk_wait_read / bulk_wait). Make the generic writes of `src` visible to the async proxy first
// (fence_proxy_async_smem, then a barrier to this thread).
__device__ __forceinline__ void tma_store_3d(const void *tmap, int c0, int c1, int c2, uint32_t src) {
#if LATTE_PTX_SM90A
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n"
                 ::"l"(reinterpret_cast<uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(c2), "r"(src)
                 : "memory");
#endif
}
// Closes this thread's current bulk group (of TMA stores).
__device__ __forceinline__ void bulk_commit() {
#if LATTE_PTX_SM90A
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
// Waits until this thread's bulk groups have read their shared-memory sources (which may then be overwritten).
__device__ __forceinline__ void bulk_wait_read() {
#if LATTE_PTX_SM90A
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
#endif
}
// Waits until this thread's bulk groups have completed (their global writes performed).
__device__ __forceinline__ void bulk_wait() {
#if LATTE_PTX_SM90A
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

// D (64x8 fp32, 4 per thread) += A (64x16 bf16, K-major, smem desc) · B (16x8 bf16, K-major, smem desc): the
// attention's few-token tail. Fragment: d[0], d[1] = row 16·warp + lane/4, columns 2·(lane%4), +1; d[2], d[3] = row + 8.
__device__ __forceinline__ void wgmma_m64n8k16_ss(float (&d)[4], uint64_t a_desc, uint64_t b_desc) {
#if LATTE_PTX_SM90A
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(a_desc), "l"(b_desc), "r"(1));  // scale-d = 1: D += A·B
#else
    (void)d, (void)a_desc, (void)b_desc;
#endif
}

// D (64x64 fp32, 32 per thread) = A (64x16 bf16, K-major, smem desc) · B (16x64 bf16, K-major, smem desc), + D where
// `accumulate` (scale-d) is nonzero. Fragment as for m64n32k16 (j = 0..7). accumulate = 0: a new S needs no zeroing
// moves into its accumulators (such moves while another wgmma group of the warpgroup was pending made ptxas serialize
// every wgmma, C7515: bench/probes/pair_order.cu)
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], uint64_t a_desc, uint64_t b_desc, int accumulate) {
#if LATTE_PTX_SM90A
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                   "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
                   "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
                   "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(a_desc), "l"(b_desc), "r"(accumulate));
#else
    (void)d, (void)a_desc, (void)b_desc, (void)accumulate;
#endif
}

// D (64x64 fp32, 32 per thread) += A (64x16 bf16, K-major, smem desc) · B (16x64 bf16, K-major, smem desc).
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], uint64_t a_desc, uint64_t b_desc) {
    wgmma_m64n64k16_ss(d, a_desc, b_desc, 1);
}

// The K-major wgmma shapes of the projection GEMM (gemm_sm90.cu): both operands stored [rows][k] in the 128-byte
// swizzle, B's rows being N (the weight rows of a tile).
// D (64x128 fp32, 64 per thread) = A (64x16 bf16, K-major, smem desc) · B (16x128 bf16, K-major i.e. stored
// [n][k], smem desc), + D where `accumulate` (scale-d) is nonzero. Fragment as for m64n32k16 (j = 0..15).
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t a_desc, uint64_t b_desc, int accumulate) {
#if LATTE_PTX_SM90A
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
        "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "
        "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
        "%62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                   "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
                   "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
                   "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
                   "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
                   "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
                   "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(a_desc), "l"(b_desc), "r"(accumulate));
#else
    (void)d, (void)a_desc, (void)b_desc, (void)accumulate;
#endif
}
// D (64x128 fp32) += A · B, as above.
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t a_desc, uint64_t b_desc) {
    wgmma_m64n128k16_ss(d, a_desc, b_desc, 1);
}

// D (64x128 fp32, 64 per thread) += A (64x16 bf16 from registers) · B (16x128 bf16, K-major i.e. stored [n][k], smem
// desc). A's fragment is mma.sync's m16n8k16 one per warp of the warpgroup (a0 (g, 2t..2t+1), a1 (g+8, 2t..),
// a2 (g, 2t+8..), a3 (g+8, 2t+8..), rows 16w + ...), which is what an accumulator of this fragment layout becomes
// when two neighbouring 8-column groups are packed to bf16x2: an fp32 result feeds the next product without smem.
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t b_desc) {
#if LATTE_PTX_SM90A
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
        "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "
        "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "
        "%60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                   "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                   "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
                   "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
                   "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
                   "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
                   "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
                   "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));  // scale-d = 1: D += A·B
#else
    (void)d, (void)a, (void)b_desc;
#endif
}

// D (64x192 fp32, 96 per thread) += A (64x16 bf16, K-major, smem desc) · B (16x192 bf16, K-major i.e. stored
// [n][k], smem desc). Fragment as for m64n32k16 (j = 0..23).
__device__ __forceinline__ void wgmma_m64n192k16_ss(float (&d)[96], uint64_t a_desc, uint64_t b_desc) {
#if LATTE_PTX_SM90A
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
        "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "
        "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
        "%62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, "
        "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, "
        "%96, %97, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                   "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
                   "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
                   "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
                   "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
                   "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
                   "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]),
                   "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
                   "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]),
                   "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]),
                   "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                 : "l"(a_desc), "l"(b_desc), "r"(1));  // scale-d = 1: D += A·B
#else
    (void)d, (void)a_desc, (void)b_desc;
#endif
}

// D (64x256 fp32, 128 per thread) += A (64x16 bf16, K-major, smem desc) · B (16x256 bf16, K-major i.e. stored
// [n][k], smem desc). Fragment as for m64n32k16 (j = 0..31).
__device__ __forceinline__ void wgmma_m64n256k16_ss(float (&d)[128], uint64_t a_desc, uint64_t b_desc) {
#if LATTE_PTX_SM90A
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
        "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "
        "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
        "%62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, "
        "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, "
        "%102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, "
        "%119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                   "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
                   "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
                   "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
                   "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
                   "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
                   "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]),
                   "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
                   "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]),
                   "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]),
                   "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]),
                   "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]),
                   "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
                   "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]),
                   "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]),
                   "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(a_desc), "l"(b_desc), "r"(1));  // scale-d = 1: D += A·B
#else
    (void)d, (void)a_desc, (void)b_desc;
#endif
}


// ---- L2 cache policies and TMA with a cache hint (sm_90a builds) ----
// An L2 eviction policy (an opaque 64-bit value for the .L2::cache_hint operand): evict_first for data read once
// (streamed weights: they should not push out what is re-read), evict_last for data other CTAs re-read soon.
__device__ __forceinline__ uint64_t l2_policy_evict_first() {
    uint64_t pol = 0;
#if LATTE_PTX_SM90A
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
#endif
    return pol;
}
__device__ __forceinline__ uint64_t l2_policy_evict_last() {
    uint64_t pol = 0;
#if LATTE_PTX_SM90A
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(pol));
#endif
    return pol;
}
__device__ __forceinline__ uint64_t l2_policy_evict_normal() {
    uint64_t pol = 0;
#if LATTE_PTX_SM90A
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(pol));
#endif
    return pol;
}
// TMA: fetch the box at coordinates (c0, c1, c2) of the 3-D tensor map `tmap` into L2 only (no shared memory, no
// mbarrier, nothing to wait for): a later tma_load_3d of the same box then finds it in L2.
__device__ __forceinline__ void tma_prefetch_3d(const void *tmap, int c0, int c1, int c2) {
#if LATTE_PTX_SM90A
    asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];\n"
                 ::"l"(reinterpret_cast<uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
#endif
}
// tma_load_3d with an L2 eviction policy (l2_policy_*) for the bytes it reads.
__device__ __forceinline__ void tma_load_3d_hint(uint32_t dst, const void *tmap, int c0, int c1, int c2, uint32_t bar,
                                                 uint64_t policy) {
#if LATTE_PTX_SM90A
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
        " [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
        ::"r"(dst), "l"(reinterpret_cast<uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "l"(policy)
        : "memory");
#endif
}

// Bulk copy: `bytes` (a multiple of 16) contiguous global bytes at src into shared memory at dst (both 16-byte
// aligned), completing on mbarrier `bar`, with an L2 eviction policy.
__device__ __forceinline__ void bulk_load_hint(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar,
                                               uint64_t policy) {
#if LATTE_PTX_SM90A
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n"
        ::"r"(dst), "l"(src), "r"(bytes), "r"(bar), "l"(policy)
        : "memory");
#endif
}

// ---- thread block clusters (sm_90a): CTAs of a cluster reach each other's shared memory and mbarriers ----
// This CTA's rank in its cluster (0 when launched without clusters).
__device__ __forceinline__ uint32_t cluster_ctarank() {
    uint32_t r = 0;
#if LATTE_PTX_SM90A
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
    return r;
}
// All threads of every CTA of the cluster: arrive (release) and wait (acquire). Before a CTA's first copy into a
// peer (the peer's mbarriers are initialized) and before it exits (no peer still copies into it or arrives on it).
__device__ __forceinline__ void cluster_sync() {
#if LATTE_PTX_SM90A
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
// The address, in the cluster's shared window, of this CTA's shared-memory address `addr` in the CTA of rank `rank`.
__device__ __forceinline__ uint32_t mapa_shared(uint32_t addr, uint32_t rank) {
    uint32_t r = addr;
#if LATTE_PTX_SM90A
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
#endif
    return r;
}
// Arrive on the mbarrier at `cluster_bar`, a mapa_shared address (possibly another CTA's).
__device__ __forceinline__ void mbarrier_arrive_cluster(uint32_t cluster_bar) {
#if LATTE_PTX_SM90A
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_bar) : "memory");
#endif
}
// mbarrier_arrive_cluster with release semantics at cluster scope (this thread's earlier accesses, for a peer).
__device__ __forceinline__ void mbarrier_arrive_cluster_release(uint32_t cluster_bar) {
#if LATTE_PTX_SM90A
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_bar) : "memory");
#endif
}
// tma_load_3d_hint into every CTA of `cta_mask` (bit r: the CTA of rank r): one read of the box, the bytes land at
// `dst` in each of them and complete on the mbarrier at offset `bar` in each of them.
__device__ __forceinline__ void tma_load_3d_multicast(uint32_t dst, const void *tmap, int c0, int c1, int c2, uint32_t bar,
                                                      uint16_t cta_mask, uint64_t policy) {
#if LATTE_PTX_SM90A
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
        " [%0], [%1, {%2, %3, %4}], [%5], %6, %7;\n"
        ::"r"(dst), "l"(reinterpret_cast<uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(cta_mask),
          "l"(policy)
        : "memory");
#endif
}

// ---- programmatic dependent launch (sm_90 and later; no-ops on older targets and for grids launched without the
//      programmatic-stream-serialization attribute) ----
// Wait until the grid this one programmatically depends on has completed and its memory writes are visible.
__device__ __forceinline__ void griddep_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
// Let the next grid on the stream (launched with the attribute) be scheduled once every CTA of this grid has issued
// this or exited. Its CTAs then start as SMs free up, and must griddep_wait() before reading what this grid writes.
__device__ __forceinline__ void griddep_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

}  // namespace ptx
}  // namespace latte
