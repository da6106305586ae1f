"""What latte needs to know about a tensor: data pointer, shape, strides (elements), dtype, device, stream.

Three routes, tried in this order:
  - torch.Tensor: its own attributes (data_ptr, stride, dtype, device); stream = torch's current stream.
  - NumPy arrays: __array_interface__ (host memory; ml_dtypes.bfloat16 for bf16).
  - anything else with __dlpack__ (CuPy, JAX, ...): the DLManagedTensor capsule parsed with ctypes.
    Stream = CuPy's current stream for CuPy arrays, else the legacy default stream (0).
No framework is imported here unless the object at hand comes from it.
"""
import ctypes
import sys

from . import _lib

# ---- DLPack (dlpack.h, v0.8 legacy and v1.x versioned capsules) ------------------------------
kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13
kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool = 0, 1, 2, 4, 6
DLPACK_FLAG_READ_ONLY = 1


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_get_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_get_name.restype = ctypes.c_char_p
_capsule_get_name.argtypes = [ctypes.py_object]

_DL_DTYPES = {
    (kDLBfloat, 16): "bfloat16", (kDLFloat, 16): "float16", (kDLFloat, 32): "float32", (kDLFloat, 64): "float64",
    (kDLInt, 8): "int8", (kDLInt, 16): "int16", (kDLInt, 32): "int32", (kDLInt, 64): "int64",
    (kDLUInt, 8): "uint8", (kDLUInt, 16): "uint16", (kDLUInt, 32): "uint32", (kDLUInt, 64): "uint64",
    (kDLBool, 8): "bool",
}
_ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int8": 1, "int16": 2, "int32": 4,
             "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1}

LATTE_DTYPES = {"bfloat16": _lib.DTYPE_BF16, "float16": _lib.DTYPE_F16, "float32": _lib.DTYPE_F32}


class TensorInfo:
    """A view of one tensor: ptr (int, byte_offset applied), shape, strides (elements), dtype (a name such
    as 'bfloat16'), device ('cpu' or 'cuda'), device_id, kind ('torch', 'numpy', 'cupy', 'dlpack'),
    readonly, and `keep` (objects that must outlive the use of ptr: the tensor, the DLPack capsule)."""
    __slots__ = ("obj", "ptr", "shape", "strides", "dtype", "device", "device_id", "kind", "readonly", "keep")

    def __init__(self, obj, ptr, shape, strides, dtype, device, device_id, kind, readonly=False, keep=None):
        self.obj, self.ptr, self.shape, self.strides = obj, int(ptr or 0), tuple(shape), tuple(strides)
        self.dtype, self.device, self.device_id, self.kind = dtype, device, device_id, kind
        self.readonly, self.keep = readonly, keep

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def backend(self):
        return _lib.BACKEND_CUDA if self.device == "cuda" else _lib.BACKEND_CPU

    def __repr__(self):
        return (f"TensorInfo(kind={self.kind}, ptr=0x{self.ptr:x}, shape={self.shape}, strides={self.strides}, "
                f"dtype={self.dtype}, device={self.device}:{self.device_id}, readonly={self.readonly})")


def _contiguous_strides(shape):
    s, out = 1, []
    for n in reversed(shape):
        out.append(s)
        s *= max(int(n), 1)
    return tuple(reversed(out))


def torch_module(obj):
    """torch, if obj is a torch.Tensor (torch is never imported here just to find out)."""
    t = sys.modules.get("torch")
    if t is not None and isinstance(obj, t.Tensor):
        return t
    return None


def _is_numpy(obj):
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, np.ndarray)


def _is_cupy(obj):
    return type(obj).__module__.split(".")[0] == "cupy"


def describe_torch(t, name="tensor"):
    torch = sys.modules["torch"]
    dev = t.device
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"{name}: device {dev} is not supported (cpu or cuda)")
    dt = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32",
          torch.int32: "int32", torch.uint8: "uint8", torch.int64: "int64", torch.float64: "float64"}.get(
        t.dtype, str(t.dtype).replace("torch.", ""))
    return TensorInfo(t, t.data_ptr(), t.shape, t.stride(), dt, dev.type,
                      (dev.index if dev.index is not None else (torch.cuda.current_device() if dev.type == "cuda" else 0)),
                      "torch", False, t)


def describe_numpy(a, name="tensor"):
    ai = a.__array_interface__
    ptr, readonly = ai["data"]
    itemsize = a.dtype.itemsize
    if ai.get("strides") is None:
        strides = _contiguous_strides(a.shape)
    else:
        if any(s % itemsize for s in ai["strides"]):
            raise ValueError(f"{name}: byte strides {ai['strides']} are not multiples of the item size {itemsize}")
        strides = tuple(s // itemsize for s in ai["strides"])
    dt = a.dtype.name  # 'bfloat16' for ml_dtypes.bfloat16
    return TensorInfo(a, ptr, a.shape, strides, dt, "cpu", 0, "numpy", bool(readonly), a)


def describe_dlpack(obj, name="tensor", stream=None):
    """Parse obj.__dlpack__()'s DLManagedTensor (legacy or versioned capsule). The capsule is kept in
    info.keep: its destructor returns the tensor to its producer when the info is dropped.
    `stream`: the CUDA stream the data will be used on (passed to the producer per the DLPack protocol)."""
    dev_type, dev_id = kDLCPU, 0
    if hasattr(obj, "__dlpack_device__"):
        dev_type, dev_id = obj.__dlpack_device__()
    if int(dev_type) == kDLCUDA:
        s = 1 if not stream else int(stream)  # 1: the legacy default stream (0 is ambiguous in the protocol)
        try:
            cap = obj.__dlpack__(stream=s)
        except TypeError:
            cap = obj.__dlpack__()
    else:
        cap = obj.__dlpack__()
    cname = _capsule_get_name(cap)
    if cname == b"dltensor":
        mt = DLManagedTensor.from_address(_capsule_get_pointer(cap, b"dltensor"))
        t, readonly = mt.dl_tensor, False
    elif cname == b"dltensor_versioned":
        mt = DLManagedTensorVersioned.from_address(_capsule_get_pointer(cap, b"dltensor_versioned"))
        t, readonly = mt.dl_tensor, bool(mt.flags & DLPACK_FLAG_READ_ONLY)
    else:
        raise TypeError(f"{name}: __dlpack__ returned a capsule named {cname!r}")
    dt = _DL_DTYPES.get((t.dtype.code, t.dtype.bits))
    if dt is None or t.dtype.lanes != 1:
        raise TypeError(f"{name}: DLPack dtype (code {t.dtype.code}, bits {t.dtype.bits}, lanes {t.dtype.lanes}) "
                        "is not supported")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else _contiguous_strides(shape)
    dtype_dev = t.device.device_type
    if dtype_dev in (kDLCPU, kDLCUDAHost):
        device = "cpu"
    elif dtype_dev in (kDLCUDA, kDLCUDAManaged):
        device = "cuda"
    else:
        raise ValueError(f"{name}: DLPack device type {dtype_dev} is not supported (CPU or CUDA)")
    ptr = (t.data or 0) + t.byte_offset
    kind = "cupy" if _is_cupy(obj) else "dlpack"
    return TensorInfo(obj, ptr, shape, strides, dt, device, t.device.device_id, kind, readonly, (obj, cap))


def describe(obj, name="tensor", stream=None):
    """TensorInfo of obj by the first route that applies (torch, NumPy, DLPack)."""
    if torch_module(obj) is not None:
        return describe_torch(obj, name)
    if _is_numpy(obj):
        return describe_numpy(obj, name)
    if hasattr(obj, "__dlpack__"):
        return describe_dlpack(obj, name, stream)
    raise TypeError(f"{name}: {type(obj).__module__}.{type(obj).__name__} is not a tensor latte can read "
                    "(torch.Tensor, numpy.ndarray, or an object with __dlpack__)")


def current_stream(obj):
    """The CUDA stream (an int, 0 = legacy default) work on obj's device should go to."""
    t = torch_module(obj)
    if t is not None:
        if obj.device.type != "cuda":
            return 0
        return t.cuda.current_stream(obj.device).cuda_stream
    if _is_cupy(obj):
        import cupy
        return cupy.cuda.get_current_stream().ptr
    return 0


class device_guard:
    """Make obj's CUDA device current for the duration of a call (torch and CuPy; a no-op otherwise)."""

    def __init__(self, obj):
        self.ctx = None
        t = torch_module(obj)
        if t is not None and obj.device.type == "cuda" and obj.device.index is not None:
            if obj.device.index != t.cuda.current_device():
                self.ctx = t.cuda.device(obj.device.index)
        elif _is_cupy(obj):
            import cupy
            self.ctx = cupy.cuda.Device(obj.device.id)

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()
        return self

    def __exit__(self, *exc):
        if self.ctx is not None:
            return self.ctx.__exit__(*exc)
        return False


def empty_like_kind(info, shape, dtype):
    """A new tensor of the same library and device as `info` (torch, NumPy, CuPy); dtype a name."""
    if info.kind == "torch":
        torch = sys.modules["torch"]
        return torch.empty(shape, dtype=getattr(torch, dtype), device=info.obj.device)
    if info.kind == "numpy" or (info.device == "cpu" and info.kind == "dlpack"):
        import numpy as np
        if dtype == "bfloat16":
            import ml_dtypes
            return np.empty(shape, dtype=ml_dtypes.bfloat16)
        return np.empty(shape, dtype=dtype)
    if info.kind == "cupy":
        import cupy
        if dtype == "bfloat16":
            raise TypeError("CuPy has no bfloat16 dtype: pass out= (any DLPack-capable bf16 tensor)")
        with cupy.cuda.Device(info.device_id):
            return cupy.empty(shape, dtype=dtype)
    t = sys.modules.get("torch")
    if t is None:
        try:
            import torch as t
        except ImportError:
            t = None
    if t is not None and info.device == "cuda":
        return t.empty(shape, dtype=getattr(t, dtype), device=f"cuda:{info.device_id}")
    raise TypeError(f"cannot allocate a {dtype} tensor like a {info.kind} tensor on {info.device}: pass out=")


def latte_dtype(info, name, allowed=("bfloat16", "float16", "float32")):
    if info.dtype not in allowed:
        raise TypeError(f"{name}: dtype {info.dtype} is not supported ({', '.join(allowed)})")
    return LATTE_DTYPES[info.dtype]
