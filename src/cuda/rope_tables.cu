// RoPE tables, CUDA backend: cos, sin [max_pos][P] bf16, row t = [c_0..c_{P/2-1}, c_0..c_{P/2-1}].
//
// What and why: the same tables as the CPU builder (src/cpu/rope_cpu.c, which documents the reference's
// op-by-op bf16 rounding), bit for bit, so a caller may build them on either backend. To get there:
//   - theta_i is computed on the host with exactly the CPU builder's code (same libm pow) and passed to the
//     kernel by value (at most 2048 doubles: 16 KB of kernel parameters, allowed since CUDA 12.1);
//   - the kernel forms the angle with the same fp32 (reference kind) or double (fp32 kind) operations,
//     and takes cos/sin in double of the float angle, rounded to float then bf16, like the CPU.
// The kernel cannot call double cos/sin: their large-argument reduction (Payne-Hanek) uses local memory,
// which our build treats as an error. Instead it reduces exactly-enough itself: u = angle/pi in double-double
// (fma error term), u -= 2*rint(u/2) (exact), then sincospi(u), which needs no table. The result is within a
// few 1e-16 of cos/sin(angle), so after rounding to float and bf16 it can differ from the CPU's correctly
// rounded value only for a double result within ~2^-50 of a rounding boundary: not expected in practice
// (tests/gpu_mla.c compares the two tables bit for bit).
#include "internal.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace {

struct RopeThetas {
    double theta[2048];  // exactly a bf16 value for the reference kind
};

__device__ __forceinline__ __nv_bfloat16 bf16_of_double(double v) { return __float2bfloat16_rn((float)v); }

// sin and cos of a float angle, in double, without a Payne-Hanek reduction (see above)
__device__ __forceinline__ void sincos_of_float(float angle, double *s, double *c) {
    const double inv_pi_hi = 0.31830988618379069, inv_pi_lo = -1.9678676675182486e-17;  // 1/pi = hi + lo
    const double x = (double)angle;
    const double u_hi = x * inv_pi_hi;
    const double u_lo = fma(x, inv_pi_hi, -u_hi) + x * inv_pi_lo;
    const double k2 = 2.0 * rint(0.5 * u_hi);  // u_hi - k2 is exact: both are in the same binade or less
    sincospi((u_hi - k2) + u_lo, s, c);
}

__global__ void rope_tables_kernel(const RopeThetas th, int reference, int64_t max_pos, int half,
                                   __nv_bfloat16 *__restrict__ rope_cos, __nv_bfloat16 *__restrict__ rope_sin) {
    const int64_t total = max_pos * half;
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = idx / half;
        const int i = (int)(idx % half);
        float angle;
        if (reference) {
            // positions are rounded to bf16 first (torch type promotion), product in fp32, rounded
            const float t_b = __bfloat162float(__float2bfloat16_rn((float)t));
            angle = __bfloat162float(__float2bfloat16_rn(__fmul_rn(t_b, (float)th.theta[i])));
        } else {
            angle = (float)__dmul_rn((double)t, th.theta[i]);
        }
        double sd, cd;
        sincos_of_float(angle, &sd, &cd);
        const __nv_bfloat16 c = bf16_of_double(cd), s = bf16_of_double(sd);
        const int64_t o = t * 2 * half + i;
        rope_cos[o] = c;
        rope_cos[o + half] = c;
        rope_sin[o] = s;
        rope_sin[o + half] = s;
    }
}

}  // namespace

extern "C" latte_status latte_cuda_rope_tables(latte_rope_kind kind, int64_t max_pos, int64_t rope_dim, float base,
                                               void *rope_cos, void *rope_sin, latte_stream_t stream) {
    const int half = (int)(rope_dim / 2);  // <= 2048 (validated)
    const int ref = kind == LATTE_ROPE_BF16_REFERENCE;
    RopeThetas th;
    latte_rope_thetas(kind, rope_dim, base, th.theta);  // the CPU builder's frequencies, bit for bit
    for (int i = half; i < 2048; i++) th.theta[i] = 0.0;
    const int64_t work = max_pos * half;
    int64_t blocks = (work + 255) / 256;
    if (blocks > 65536) blocks = 65536;
    rope_tables_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(th, ref, max_pos, half,
                                                                          (__nv_bfloat16 *)rope_cos,
                                                                          (__nv_bfloat16 *)rope_sin);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return latte_set_error(LATTE_STATUS_CUDA_ERROR, "latte_rope_tables: kernel launch failed (%s: %s)",
                               cudaGetErrorName(e), cudaGetErrorString(e));
    return LATTE_STATUS_SUCCESS;
}
