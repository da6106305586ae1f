/* Status codes, the thread-local error message, version and dtype helpers. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

/* One message buffer per host thread: concurrent callers never see each other's messages. */
static _Thread_local char latte_error_message[512];

latte_status latte_set_error(latte_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(latte_error_message, sizeof latte_error_message, fmt, ap);
    va_end(ap);
    return status;
}

latte_status latte_clear_error(void) {
    latte_error_message[0] = '\0';
    return LATTE_STATUS_SUCCESS;
}

const char *latte_last_error(void) { return latte_error_message; }

int latte_version(void) { return LATTE_VERSION; }

const char *latte_status_string(latte_status status) {
    switch (status) {
    case LATTE_STATUS_SUCCESS: return "LATTE_STATUS_SUCCESS: the call succeeded";
    case LATTE_STATUS_INVALID_ARGUMENT: return "LATTE_STATUS_INVALID_ARGUMENT: an argument is invalid";
    case LATTE_STATUS_NOT_SUPPORTED: return "LATTE_STATUS_NOT_SUPPORTED: valid, but not supported by this build or device";
    case LATTE_STATUS_NO_DEVICE: return "LATTE_STATUS_NO_DEVICE: no usable CUDA device or driver";
    case LATTE_STATUS_OUT_OF_MEMORY: return "LATTE_STATUS_OUT_OF_MEMORY: an allocation failed";
    case LATTE_STATUS_CUDA_ERROR: return "LATTE_STATUS_CUDA_ERROR: the CUDA runtime reported an error";
    case LATTE_STATUS_INTERNAL_ERROR: return "LATTE_STATUS_INTERNAL_ERROR: a bug in latte";
    case LATTE_STATUS_INSUFFICIENT_WORKSPACE: return "LATTE_STATUS_INSUFFICIENT_WORKSPACE: the workspace is too small";
    }
    return "LATTE_STATUS_UNKNOWN: not a latte_status value";
}

int latte_dtype_is_valid(latte_dtype dtype) {
    return dtype == LATTE_DTYPE_BF16 || dtype == LATTE_DTYPE_F16 || dtype == LATTE_DTYPE_F32;
}

size_t latte_dtype_size(latte_dtype dtype) { return dtype == LATTE_DTYPE_F32 ? 4 : 2; }

const char *latte_dtype_name(latte_dtype dtype) {
    switch (dtype) {
    case LATTE_DTYPE_BF16: return "bf16";
    case LATTE_DTYPE_F16: return "f16";
    case LATTE_DTYPE_F32: return "f32";
    }
    return "invalid dtype";
}

int latte_cuda_device_count(void) { return latte_cuda_count_devices(); }

/* IEEE binary16 <-> binary32, round to nearest even (host side; the CPU backend's f16 path). */
float latte_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400u));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t latte_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);          /* NaN */
    if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);         /* overflow (rounds to inf) */
    if (absu < 0x38800000u) {                                            /* subnormal or zero in f16 */
        if (absu < 0x33000000u) return (uint16_t)sign;                   /* < half the smallest subnormal */
        uint32_t e = absu >> 23, man = (absu & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* leaves the value in units of 2^-24, the f16 subnormal step */
        uint32_t r = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = absu - 0x38000000u; /* rebias 127 -> 15 */
    uint32_t out = r >> 13, rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (out & 1u))) out++;
    return (uint16_t)(sign | out);
}
