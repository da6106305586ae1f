// A kernel's dynamic shared-memory limit raised once per device, before its first launch there.
// cudaFuncSetAttribute is per device and idempotent, so two threads racing on a first call are harmless; a device
// index past 63 is simply set every time.
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>

#include <atomic>

namespace latte {

// kKernel: the __global__ function (one mask of done devices per kernel, instantiation included)
template <auto kKernel>
cudaError_t smem_optin_once(size_t bytes, int device) {
    static std::atomic<unsigned long long> done_mask{0};
    const unsigned long long bit = device >= 0 && device < 64 ? 1ull << device : 0ull;
    if (bit != 0 && (done_mask.load(std::memory_order_acquire) & bit)) return cudaSuccess;
    const cudaError_t e = cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e == cudaSuccess) done_mask.fetch_or(bit, std::memory_order_acq_rel);
    return e;
}

}  // namespace latte
