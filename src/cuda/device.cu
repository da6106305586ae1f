// CUDA backend: device discovery and pointer checks shared by every operation.
#include "internal.h"

#include <cuda_runtime.h>

extern "C" int latte_cuda_count_devices(void) {
    int n = 0;
    // With no driver the static runtime returns cudaErrorInsufficientDriver / NoDevice: report 0.
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();  // do not leave a sticky error for the caller's next CUDA call
        return 0;
    }
    return n;
}

extern "C" latte_status latte_cuda_require_device(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return latte_set_error(LATTE_STATUS_NO_DEVICE, "CUDA backend: no usable device (%s: %s)", cudaGetErrorName(e),
                               cudaGetErrorString(e));
    }
    if (n == 0) return latte_set_error(LATTE_STATUS_NO_DEVICE, "CUDA backend: no CUDA device present");
    return LATTE_STATUS_SUCCESS;
}

extern "C" int latte_cuda_pointer_is_device(const void *ptr) {
    cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    switch (attr.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged: return 1;
    case cudaMemoryTypeHost: return attr.devicePointer != nullptr ? 1 : 0;  // pinned + mapped is usable
    default: return 0;                                                       // unregistered host memory
    }
}
