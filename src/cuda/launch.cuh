// A kernel launch with programmatic dependent launch as an option: cudaLaunchKernelEx with the
// programmatic-stream-serialization attribute where pdl is set (the kernel may then start while the one before it on
// the stream still runs, and must griddepcontrol.wait before it reads what that one writes), a plain launch otherwise.
// The one place the launchers that take a `pdl` flag build it.
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace latte {

template <typename... Params, typename... Args>
cudaError_t launch_maybe_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t stream,
                             bool pdl, Args &&...args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem_bytes;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace latte
