/* Smallest program against an installed latte: normalizes one token on the CPU backend. */
#include <latte.h>
#include <stdio.h>

int main(void) {
    float q[4] = {1, 2, 3, 4}, k[2] = {3, 4}, wq[4] = {1, 1, 1, 1}, wk[2] = {1, 1};
    latte_qknorm_params p = latte_qknorm_params_default(1, q, 4, k, 2, wq, wk, LATTE_DTYPE_F32);
    latte_status st = latte_qknorm_across_heads(&p, LATTE_BACKEND_CPU, NULL);
    if (st != LATTE_STATUS_SUCCESS) {
        fprintf(stderr, "consumer: %s (%s)\n", latte_status_string(st), latte_last_error());
        return 1;
    }
    /* k = [3,4] / sqrt((9+16)/2 + eps) */
    double want = 3.0 / 3.5355339059327378;
    if (k[0] < want - 1e-5 || k[0] > want + 1e-5) {
        fprintf(stderr, "consumer: k[0] = %f, expected %f\n", k[0], want);
        return 1;
    }
    printf("consumer: latte %d, CUDA devices %d, ok\n", latte_version(), latte_cuda_device_count());
    return 0;
}
