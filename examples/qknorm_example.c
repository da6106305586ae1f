/*
 * latte-qknorm-example: QK RMSNorm across heads, in place, on the GPU when there is one (else the CPU).
 *
 * q and k are [N, D] bf16 (all heads of a token side by side); each row is scaled by the reciprocal RMS
 * of the whole row and multiplied by a per-column weight. With the CUDA backend every pointer is a
 * device pointer and the call is asynchronous on `stream`; with the CPU backend they are host pointers.
 */
#include "latte.h"

#include <cuda_runtime_api.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint16_t to_bf16(float f) { /* round to nearest even (finite inputs) */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

int main(void) {
    enum { N = 4, D = 1024 }; /* 4 tokens, 8 heads of 128 */
    static uint16_t q[N * D], k[N * D], wq[D], wk[D];
    for (int i = 0; i < N * D; i++) {
        q[i] = to_bf16(sinf(0.1f * i) * 5.0f);
        k[i] = to_bf16(cosf(0.3f * i) * 0.2f);
    }
    for (int j = 0; j < D; j++) wq[j] = wk[j] = to_bf16(1.0f);

    const int gpu = latte_cuda_device_count() > 0;
    latte_status st;
    if (gpu) {
        void *dq, *dk, *dwq, *dwk;
        cudaMalloc(&dq, sizeof q), cudaMalloc(&dk, sizeof k), cudaMalloc(&dwq, sizeof wq), cudaMalloc(&dwk, sizeof wk);
        cudaMemcpy(dq, q, sizeof q, cudaMemcpyHostToDevice);
        cudaMemcpy(dk, k, sizeof k, cudaMemcpyHostToDevice);
        cudaMemcpy(dwq, wq, sizeof wq, cudaMemcpyHostToDevice);
        cudaMemcpy(dwk, wk, sizeof wk, cudaMemcpyHostToDevice);

        /* contiguous rows, in place, eps 1e-6; set p.q_out/p.k_out, strides or p.flags for other forms */
        latte_qknorm_params p = latte_qknorm_params_default(N, dq, D, dk, D, dwq, dwk, LATTE_DTYPE_BF16);
        st = latte_qknorm_across_heads(&p, LATTE_BACKEND_CUDA, NULL /* default stream */);

        cudaMemcpy(q, dq, sizeof q, cudaMemcpyDeviceToHost); /* waits for the kernel */
        cudaMemcpy(k, dk, sizeof k, cudaMemcpyDeviceToHost);
        cudaFree(dq), cudaFree(dk), cudaFree(dwq), cudaFree(dwk);
    } else {
        latte_qknorm_params p = latte_qknorm_params_default(N, q, D, k, D, wq, wk, LATTE_DTYPE_BF16);
        st = latte_qknorm_across_heads(&p, LATTE_BACKEND_CPU, NULL);
    }
    if (st != LATTE_STATUS_SUCCESS) {
        fprintf(stderr, "latte_qknorm_across_heads: %s\n  %s\n", latte_status_string(st), latte_last_error());
        return 1;
    }

    /* with unit weights every row now has RMS 1 */
    for (int n = 0; n < N; n++) {
        double sq = 0, sk = 0;
        for (int j = 0; j < D; j++) {
            sq += from_bf16(q[n * D + j]) * (double)from_bf16(q[n * D + j]);
            sk += from_bf16(k[n * D + j]) * (double)from_bf16(k[n * D + j]);
        }
        printf("token %d: RMS q %.4f, k %.4f\n", n, sqrt(sq / D), sqrt(sk / D));
    }
    printf("QK norm on the %s backend: ok\n", gpu ? "CUDA" : "CPU");
    return 0;
}
