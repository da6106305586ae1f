"""liblatte through ctypes: finding the library, the C structures of include/latte.h, error handling.

Every structure here mirrors latte.h field for field (int64_t, pointers, float, enums as c_int, unsigned);
tests/test_abi.py checks the sizes the C compiler sees against these.
"""
import ctypes
import ctypes.util
import os
import sys

# ---- enums (latte.h) -------------------------------------------------------------------------
STATUS_SUCCESS = 0
STATUS_INVALID_ARGUMENT = 1
STATUS_NOT_SUPPORTED = 2
STATUS_NO_DEVICE = 3
STATUS_OUT_OF_MEMORY = 4
STATUS_CUDA_ERROR = 5
STATUS_INTERNAL_ERROR = 6
STATUS_INSUFFICIENT_WORKSPACE = 7

DTYPE_BF16 = 0
DTYPE_F16 = 1
DTYPE_F32 = 2
DTYPE_NAMES = {DTYPE_BF16: "bfloat16", DTYPE_F16: "float16", DTYPE_F32: "float32"}

BACKEND_CUDA = 0
BACKEND_CPU = 1

ROPE_BF16_REFERENCE = 0
ROPE_FP32 = 1
ROPE_KINDS = {"bf16_reference": ROPE_BF16_REFERENCE, "fp32": ROPE_FP32}

KEYS_ROTATED_AT_READ = 0
KEYS_STORED_ROTATED = 1

QKNORM_WEIGHT_PLUS_ONE = 1

MLA_N_PHASE_EVENTS = 6


# ---- structures ------------------------------------------------------------------------------
class QKNormParams(ctypes.Structure):
    _fields_ = [
        ("n_tokens", ctypes.c_int64),
        ("q_width", ctypes.c_int64),
        ("k_width", ctypes.c_int64),
        ("q", ctypes.c_void_p),
        ("q_row_stride", ctypes.c_int64),
        ("k", ctypes.c_void_p),
        ("k_row_stride", ctypes.c_int64),
        ("q_out", ctypes.c_void_p),
        ("q_out_row_stride", ctypes.c_int64),
        ("k_out", ctypes.c_void_p),
        ("k_out_row_stride", ctypes.c_int64),
        ("q_weight", ctypes.c_void_p),
        ("k_weight", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("weight_dtype", ctypes.c_int),
        ("eps", ctypes.c_float),
        ("flags", ctypes.c_uint),
    ]


class MLAConfig(ctypes.Structure):
    _fields_ = [
        ("dim", ctypes.c_int64),
        ("q_lora_rank", ctypes.c_int64),
        ("kv_lora_rank", ctypes.c_int64),
        ("rope_dim", ctypes.c_int64),
        ("nope_dim", ctypes.c_int64),
        ("v_dim", ctypes.c_int64),
        ("n_heads", ctypes.c_int64),
        ("softmax_scale", ctypes.c_float),
        ("key_convention", ctypes.c_int),
    ]


class MLAWeights(ctypes.Structure):
    _fields_ = [
        ("wq_down", ctypes.c_void_p),
        ("wkv_down", ctypes.c_void_p),
        ("wq_up", ctypes.c_void_p),
        ("wkv_up", ctypes.c_void_p),
        ("wo", ctypes.c_void_p),
    ]


class KVCache(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("batch_stride", ctypes.c_int64),
        ("row_stride", ctypes.c_int64),
        ("capacity", ctypes.c_int64),
    ]


class MLARunArgs(ctypes.Structure):
    _fields_ = [
        ("batch", ctypes.c_int64),
        ("x", ctypes.c_void_p),
        ("x_row_stride", ctypes.c_int64),
        ("kv_cache", KVCache),
        ("cache_lens", ctypes.c_void_p),
        ("max_cache_len", ctypes.c_int64),
        ("rope_cos", ctypes.c_void_p),
        ("rope_sin", ctypes.c_void_p),
        ("rope_max_pos", ctypes.c_int64),
        ("y", ctypes.c_void_p),
        ("y_row_stride", ctypes.c_int64),
    ]


# ---- errors ----------------------------------------------------------------------------------
class LatteError(RuntimeError):
    """A liblatte call failed. `status` is the latte_status value, `status_string` its name,
    `message` the library's latte_last_error() text (which argument, and why)."""

    def __init__(self, status, status_string, message, function=None):
        self.status = int(status)
        self.status_string = status_string
        self.message = message
        self.function = function
        where = f"{function}: " if function else ""
        super().__init__(f"{where}{status_string}: {message}" if message else f"{where}{status_string}")


# ---- loading ---------------------------------------------------------------------------------
def _candidates():
    env = os.environ.get("LATTE_LIBRARY")
    if env:
        # an explicit choice: no fallback that could silently load another build
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    names = ["liblatte.so", "liblatte.so.0", "liblatte.dylib"]
    c = [os.path.join(here, n) for n in names]
    found = ctypes.util.find_library("latte")
    if found:
        c.append(found)
    for d in ("/usr/local/lib", os.path.join(sys.prefix, "lib"), "/usr/local/lib64", os.path.join(sys.prefix, "lib64")):
        c += [os.path.join(d, n) for n in names]
    return c, False


def _load():
    cands, explicit = _candidates()
    errors = []
    for path in cands:
        if not explicit and os.path.sep in path and not os.path.exists(path):
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(f"{path}: {e}")
    how = "LATTE_LIBRARY" if explicit else "LATTE_LIBRARY (unset), the package directory, find_library('latte'), " \
                                            "/usr/local/lib, sys.prefix/lib"
    raise ImportError("latte: cannot load liblatte (looked in " + how + ")" +
                      ("; " + "; ".join(errors) if errors else "") +
                      ". Build it (make) and set LATTE_LIBRARY=/path/to/liblatte.so.")


_lib = None
_lib_path = None


def lib():
    """The loaded liblatte (loaded on first use, so `import latte` works without it)."""
    global _lib, _lib_path
    if _lib is None:
        L, path = _load()
        _declare(L)
        _lib, _lib_path = L, path
    return _lib


def library_path():
    lib()
    return _lib_path


def _declare(L):
    S = ctypes.c_int  # latte_status
    vp = ctypes.c_void_p
    L.latte_status_string.restype = ctypes.c_char_p
    L.latte_status_string.argtypes = [ctypes.c_int]
    L.latte_last_error.restype = ctypes.c_char_p
    L.latte_last_error.argtypes = []
    L.latte_version.restype = ctypes.c_int
    L.latte_version.argtypes = []
    L.latte_cuda_device_count.restype = ctypes.c_int
    L.latte_cuda_device_count.argtypes = []
    L.latte_qknorm_across_heads.restype = S
    L.latte_qknorm_across_heads.argtypes = [ctypes.POINTER(QKNormParams), ctypes.c_int, vp]
    L.latte_rope_tables.restype = S
    L.latte_rope_tables.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_float, vp, vp,
                                    ctypes.c_int, vp]
    L.latte_mla_config_deepseek_r1.restype = MLAConfig
    L.latte_mla_config_deepseek_r1.argtypes = []
    L.latte_mla_plan_create.restype = S
    L.latte_mla_plan_create.argtypes = [ctypes.POINTER(vp), ctypes.POINTER(MLAConfig), ctypes.POINTER(MLAWeights),
                                        ctypes.c_int, vp]
    L.latte_mla_plan_destroy.restype = S
    L.latte_mla_plan_destroy.argtypes = [vp]
    L.latte_mla_workspace_size.restype = S
    L.latte_mla_workspace_size.argtypes = [vp, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_size_t)]
    L.latte_mla_run.restype = S
    L.latte_mla_run.argtypes = [vp, ctypes.POINTER(MLARunArgs), vp, ctypes.c_size_t, vp]
    L.latte_mla_run_with_events.restype = S
    L.latte_mla_run_with_events.argtypes = [vp, ctypes.POINTER(MLARunArgs), vp, ctypes.c_size_t, vp,
                                            ctypes.POINTER(vp)]
    L.latte_mla_plan_bad_lengths.restype = S
    L.latte_mla_plan_bad_lengths.argtypes = [vp, ctypes.POINTER(ctypes.c_int64), ctypes.c_int, vp]
    L.latte_mla_plan_tune.restype = S
    L.latte_mla_plan_tune.argtypes = [vp, ctypes.c_int64, ctypes.c_int64, vp, ctypes.c_size_t, vp]
    L.latte_mla_plan_describe.restype = S
    L.latte_mla_plan_describe.argtypes = [vp, ctypes.c_int64, ctypes.c_char_p, ctypes.c_size_t]


def check(status, function=None):
    """Raise LatteError for a non-zero latte_status (message read right away, it is thread-local)."""
    if status != STATUS_SUCCESS:
        L = lib()
        msg = L.latte_last_error().decode("utf-8", "replace")
        name = L.latte_status_string(status).decode("utf-8", "replace")
        raise LatteError(status, name, msg, function)


def version():
    """LATTE_VERSION of the loaded library (10000*major + 100*minor + patch)."""
    return lib().latte_version()


def cuda_device_count():
    return lib().latte_cuda_device_count()
