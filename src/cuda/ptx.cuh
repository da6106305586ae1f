// The inline-PTX instructions latte's kernels use, in one place, each with a line on what it does.
// All of them exist from sm_80 on (Ampere and Hopper); Hopper-only instructions (wgmma, TMA, mbarrier,
// setmaxnreg) will be added here too, behind __CUDA_ARCH__ checks, when a kernel uses them.
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
// Closes the group of cp.async issued by this thread since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed cp.async groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Hint: bring the 128-byte line holding ptr into L1 (never faults).
__device__ __forceinline__ void prefetch_l1(const void *ptr) { asm volatile("prefetch.global.L1 [%0];\n" ::"l"(ptr)); }

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

}  // namespace ptx
}  // namespace latte
