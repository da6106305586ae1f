// QK RMSNorm across heads, CUDA backend. (stub: being written)
#include "internal.h"
extern "C" latte_status latte_cuda_qknorm(const latte_qknorm_params *p, latte_stream_t stream) {
    return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "qknorm: CUDA backend not written yet");
}
