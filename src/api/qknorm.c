/* QK RMSNorm across heads: host API and validation. (stub: being written) */
#include "internal.h"

latte_qknorm_params latte_qknorm_params_default(int64_t n_tokens, void *q, int64_t q_width, void *k, int64_t k_width,
                                                const void *q_weight, const void *k_weight, latte_dtype dtype) {
    latte_qknorm_params p;
    memset(&p, 0, sizeof p);
    p.n_tokens = n_tokens;
    p.q = q; p.q_width = q_width; p.q_row_stride = q_width;
    p.k = k; p.k_width = k_width; p.k_row_stride = k_width;
    p.q_weight = q_weight; p.k_weight = k_weight;
    p.dtype = dtype; p.weight_dtype = dtype;
    p.eps = 1e-6f;
    return p;
}

latte_status latte_qknorm_across_heads(const latte_qknorm_params *params, latte_backend backend, latte_stream_t stream) {
    if (!params) return latte_set_error(LATTE_STATUS_INVALID_ARGUMENT, "params: null pointer");
    return backend == LATTE_BACKEND_CPU ? latte_cpu_qknorm(params) : latte_cuda_qknorm(params, stream);
}
