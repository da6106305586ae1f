/* QK RMSNorm across heads, CPU backend. (stub: being written) */
#include "internal.h"
latte_status latte_cpu_qknorm(const latte_qknorm_params *p) {
    return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "qknorm: CPU backend not written yet");
}
