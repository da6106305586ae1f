// Host side of TMA (the Hopper bulk tensor copy engine): encoding a tensor map, shared by the kernels that use one
// (the seesaw attention, the projection GEMM). The encoder is the driver's cuTensorMapEncodeTiled, fetched at run time
// through the runtime's entry-point query, so the library needs no link against libcuda.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums (types only)
#include <stddef.h>
#include <stdint.h>

namespace latte {

// A 3-D bf16 tensor map with the 128-byte swizzle (the layout wgmma reads): dims[0] is the contiguous dimension,
// strides_bytes[0..1] those of dims[1] and dims[2], box[0..2] the box copied per request (box[0] * 2 <= 128).
// Out-of-range parts of a box are zero-filled; an L2 miss fetches 256 bytes. false: no encoder in this driver, or an
// argument the unit cannot take (unaligned base or strides, a stride >= 2^40, ...): nothing was encoded.
bool tma_encode_bf16_3d(CUtensorMap *map, const void *base, const uint64_t dims[3], const uint64_t strides_bytes[2],
                        const uint32_t box[3]);

// Whether this process can encode tensor maps at all (the driver has the entry point).
bool tma_encoder_available();

// Whether `device` can run one of latte's sm_90a TMA kernels that needs `smem_bytes` of shared memory per block:
// compute capability 9.0, that much opt-in shared memory, and a driver that encodes tensor maps. (Whether the build
// has the sm_90a image is the caller's LATTE_HAVE_SM90A.)
bool tma_hopper_device_ok(int device, size_t smem_bytes);

}  // namespace latte
