"""The operations: QK RMSNorm across heads, RoPE tables, the MLA decode layer.

Each public entry point routes torch tensors through the torch.ops.latte custom ops (when torch >= 2.4 is
present, see _torch_ops.py) so torch.compile traces them without graph breaks; everything else (NumPy,
CuPy, JAX, torch without custom_op) calls the *_impl functions directly. The *_impl functions do the
Python-side shape checks (the C API has no notion of an N-D tensor), fill the C structures and call liblatte;
the library validates the rest (pointers, strides, alignment, dtypes) and its message comes back as LatteError.
"""
import ctypes
import itertools
import sys
import weakref

from . import _lib
from . import _tensor as T

# ---- helpers -----------------------------------------------------------------------------------


def _torch_ops():
    """The custom-op module when torch's custom ops are registered, else None."""
    m = sys.modules.get("latte._torch_ops")
    return m if (m is not None and m.REGISTERED) else None


def _row_stride(info, name):
    """Row stride of a 2-D [N, D] tensor with unit column stride (D == 1 or N <= 1: any stride goes)."""
    if info.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D tensor [n_tokens, width], got shape {list(info.shape)}")
    n, d = info.shape
    if d > 1 and info.strides[1] != 1:
        raise ValueError(f"{name}: column stride {info.strides[1]} != 1 (rows must be contiguous; "
                         "the row stride may be anything >= width)")
    if n <= 1:
        return max(int(info.strides[0]), int(d))
    return int(info.strides[0])


def _same_device(infos):
    first = None
    for name, i in infos:
        if i is None:
            continue
        if first is None:
            first = (name, i)
        elif (i.device, i.device_id if i.device == "cuda" else 0) != (first[1].device, first[1].device_id
                                                                        if first[1].device == "cuda" else 0):
            raise ValueError(f"{name}: on {i.device}:{i.device_id}, but {first[0]} is on "
                             f"{first[1].device}:{first[1].device_id}")
    return first[1]


def _writable(info, name):
    if info is not None and info.readonly:
        raise ValueError(f"{name}: read-only memory (the operation writes it)")


# ---- QK RMSNorm across heads ---------------------------------------------------------------------


def qknorm_across_heads(q, k, q_weight, k_weight, eps=1e-6, out_q=None, out_k=None, weight_plus_one=False):
    """RMSNorm over the whole row of q [N, Dq] and k [N, Dk] (all heads together), in one launch:
        q_out = q * rsqrt(mean(q^2) + eps) * w_q      (w = weight, or 1 + weight if weight_plus_one)
    Math in fp32, one rounding at the store. Rows need unit column stride; any row stride >= width
    (q and k may be column slices of one fused qkv buffer). k may be None (with k_weight None).
    dtypes: bf16, f16 or f32 activations; weights in the activation dtype or f32.
    In place when out_q/out_k are None. Returns (q_out, k_out)."""
    tops = _torch_ops()
    if tops is not None and isinstance(q, tops.torch.Tensor):
        tops.torch.ops.latte.qknorm_across_heads(q, k, q_weight, k_weight, float(eps), out_q, out_k,
                                                 bool(weight_plus_one))
    else:
        qknorm_impl(q, k, q_weight, k_weight, eps, out_q, out_k, weight_plus_one)
    return (q if out_q is None else out_q), (k if out_k is None else out_k)


def fused_inplace_qknorm_across_heads(q, k, q_weight, k_weight, eps=1e-6):
    """SGLang's signature: normalizes q and k in place; returns None."""
    qknorm_across_heads(q, k, q_weight, k_weight, eps)


def qknorm_impl(q, k, q_weight, k_weight, eps=1e-6, out_q=None, out_k=None, weight_plus_one=False):
    stream = T.current_stream(q)
    qi = T.describe(q, "q", stream)
    ki = T.describe(k, "k", stream) if k is not None else None
    qwi = T.describe(q_weight, "q_weight", stream)
    kwi = T.describe(k_weight, "k_weight", stream) if k_weight is not None else None
    oqi = T.describe(out_q, "out_q", stream) if out_q is not None else None
    oki = T.describe(out_k, "out_k", stream) if out_k is not None else None
    if ki is None and (kwi is not None or oki is not None):
        raise ValueError("k is None: k_weight and out_k must be None too")
    if ki is not None and kwi is None:
        raise ValueError("k_weight: None, but k is given")
    base = _same_device([("q", qi), ("k", ki), ("q_weight", qwi), ("k_weight", kwi), ("out_q", oqi), ("out_k", oki)])

    p = _lib.QKNormParams()
    p.q_row_stride = _row_stride(qi, "q")
    p.n_tokens, p.q_width = qi.shape
    p.q = qi.ptr
    p.dtype = T.latte_dtype(qi, "q")
    _writable(qi if oqi is None else oqi, "q" if oqi is None else "out_q")
    if ki is not None:
        p.k_row_stride = _row_stride(ki, "k")
        if ki.shape[0] != p.n_tokens:
            raise ValueError(f"k: {ki.shape[0]} rows, but q has {p.n_tokens}")
        if ki.dtype != qi.dtype:
            raise TypeError(f"k: dtype {ki.dtype} != q's {qi.dtype}")
        p.k_width = ki.shape[1]
        p.k = ki.ptr
        _writable(ki if oki is None else oki, "k" if oki is None else "out_k")
    for oi, src, nm in ((oqi, qi, "out_q"), (oki, ki, "out_k")):
        if oi is None:
            continue
        if oi.shape != src.shape:
            raise ValueError(f"{nm}: shape {list(oi.shape)} != input shape {list(src.shape)}")
        if oi.dtype != qi.dtype:
            raise TypeError(f"{nm}: dtype {oi.dtype} != q's {qi.dtype}")
    if oqi is not None:
        p.q_out, p.q_out_row_stride = oqi.ptr, _row_stride(oqi, "out_q")
    if oki is not None:
        p.k_out, p.k_out_row_stride = oki.ptr, _row_stride(oki, "out_k")
    for wi, width, nm in ((qwi, p.q_width, "q_weight"), (kwi, p.k_width, "k_weight")):
        if wi is None:
            continue
        if wi.ndim != 1 or wi.shape[0] != width:
            raise ValueError(f"{nm}: shape {list(wi.shape)}, expected [{width}]")
        if width > 1 and wi.strides[0] != 1:
            raise ValueError(f"{nm}: stride {wi.strides[0]} != 1 (weights must be contiguous)")
    p.q_weight = qwi.ptr
    p.weight_dtype = T.latte_dtype(qwi, "q_weight")
    if kwi is not None:
        if kwi.dtype != qwi.dtype:
            raise TypeError(f"k_weight: dtype {kwi.dtype} != q_weight's {qwi.dtype}")
        p.k_weight = kwi.ptr
    p.eps = float(eps)
    p.flags = _lib.QKNORM_WEIGHT_PLUS_ONE if weight_plus_one else 0
    with T.device_guard(q):
        st = _lib.lib().latte_qknorm_across_heads(ctypes.byref(p), base.backend, ctypes.c_void_p(stream or None))
    _lib.check(st, "latte_qknorm_across_heads")


# ---- RoPE tables -------------------------------------------------------------------------------------


def rope_tables(max_pos, rope_dim=64, kind="bf16_reference", base=10000.0, device=None, out=None):
    """cos, sin [max_pos, rope_dim] bf16, row t = [c_0..c_{P/2-1}, c_0..c_{P/2-1}] (NeoX half split).
    kind 'bf16_reference' reproduces the reference's bf16-rounded tables; 'fp32' computes angles in fp32.
    Returns torch tensors on `device` when torch is importable (device None: cuda if available, else cpu),
    else NumPy arrays (ml_dtypes.bfloat16; device must be cpu). out=(cos, sin): write into those
    (any tensor kind, contiguous [max_pos, rope_dim] bf16) and return them."""
    if kind not in _lib.ROPE_KINDS:
        raise ValueError(f"kind: {kind!r} is not one of {sorted(_lib.ROPE_KINDS)}")
    if out is None:
        torch = None
        try:
            import torch
        except ImportError:
            pass
        if torch is not None and not (device is not None and str(device) == "numpy"):
            if device is None:
                device = "cuda" if torch.cuda.is_available() else "cpu"
            cos = torch.empty((max_pos, rope_dim), dtype=torch.bfloat16, device=device)
            sin = torch.empty((max_pos, rope_dim), dtype=torch.bfloat16, device=device)
        else:
            if device is not None and str(device) not in ("cpu", "numpy"):
                raise ValueError(f"device: {device!r} needs torch (not importable); NumPy tables are on the cpu")
            import numpy as np
            import ml_dtypes
            cos = np.empty((max_pos, rope_dim), dtype=ml_dtypes.bfloat16)
            sin = np.empty((max_pos, rope_dim), dtype=ml_dtypes.bfloat16)
    else:
        cos, sin = out
    stream = T.current_stream(cos)
    ci, si = T.describe(cos, "cos", stream), T.describe(sin, "sin", stream)
    base_info = _same_device([("cos", ci), ("sin", si)])
    for i, nm in ((ci, "cos"), (si, "sin")):
        if i.dtype != "bfloat16":
            raise TypeError(f"{nm}: dtype {i.dtype}, the tables are bfloat16")
        if i.shape != (max_pos, rope_dim):
            raise ValueError(f"{nm}: shape {list(i.shape)}, expected [{max_pos}, {rope_dim}]")
        if i.strides != T._contiguous_strides(i.shape) and max_pos > 1:
            raise ValueError(f"{nm}: strides {i.strides}, the tables must be contiguous")
        _writable(i, nm)
    with T.device_guard(cos):
        st = _lib.lib().latte_rope_tables(_lib.ROPE_KINDS[kind], int(max_pos), int(rope_dim), float(base), ci.ptr,
                                          si.ptr, base_info.backend, ctypes.c_void_p(stream or None))
    _lib.check(st, "latte_rope_tables")
    return cos, sin


# ---- MLA decode layer ----------------------------------------------------------------------------------

# Plans by id: the torch custom ops receive the id (an int) and find the object here. Weak: the registry
# never keeps a layer alive (a captured CUDA graph needs the layer object kept alive by its owner).
_PLANS = weakref.WeakValueDictionary()
_plan_ids = itertools.count(1)


def plan_by_id(plan_id):
    dec = _PLANS.get(int(plan_id))
    if dec is None:
        raise RuntimeError(f"latte: MLA plan {plan_id} no longer exists (closed or garbage-collected)")
    return dec


class MLADecode:
    """DeepSeek-V3/R1 MLA decode layer (one new token per sequence), planned once.

        mla = latte.MLADecode(dict(q_down=Wq_down, kv_down=Wkv_down, q_up=Wq_up, kv_up=Wkv_up, o=Wo), n_heads=128)
        y = mla(x, kv_cache, cache_lens, rope_cos, rope_sin)   # appends kv_lora at row cache_lens[b]

    Weights: bf16 in the spec's layouts (q_down [dq, dim], kv_down [R+P, dim], q_up [H*(nope+P), dq],
    kv_up [H*(nope+v), R], o [dim, H*v]); dim and q_lora_rank are read from their shapes. The plan copies them
    (re-laid out); this object keeps no reference to them. The backend follows the weights' device.
    keys_stored_rotated: the cache holds k_pe already rotated (DeepSeek/FlashMLA/SGLang/vLLM) instead of the
    reference convention (rotated when read)."""

    def __init__(self, weights, n_heads=128, kv_lora_rank=512, rope_dim=64, nope_dim=128, v_dim=128,
                 softmax_scale=None, keys_stored_rotated=False):
        self._plan = None
        names = ("q_down", "kv_down", "q_up", "kv_up", "o")
        missing = [n for n in names if n not in weights]
        if missing:
            raise KeyError(f"weights: missing {missing} (need {list(names)})")
        ws = {n: weights[n] for n in names}
        tm = T.torch_module(ws["q_down"])
        if tm is not None:  # the plan reads row-major contiguous weights
            ws = {n: w.contiguous() for n, w in ws.items()}
        stream = T.current_stream(ws["q_down"])
        infos = {n: T.describe(w, f"weights[{n!r}]", stream) for n, w in ws.items()}
        dq, dim = infos["q_down"].shape if infos["q_down"].ndim == 2 else (None, None)
        if dq is None:
            raise ValueError(f"weights['q_down']: expected 2-D [q_lora_rank, dim], got {list(infos['q_down'].shape)}")
        R, P, H = kv_lora_rank, rope_dim, n_heads
        expect = dict(q_down=(dq, dim), kv_down=(R + P, dim), q_up=(H * (nope_dim + P), dq),
                      kv_up=(H * (nope_dim + v_dim), R), o=(dim, H * v_dim))
        for n, i in infos.items():
            if i.shape != expect[n]:
                raise ValueError(f"weights[{n!r}]: shape {list(i.shape)}, expected {list(expect[n])} "
                                 f"(n_heads {H}, kv_lora_rank {R}, rope_dim {P}, nope_dim {nope_dim}, v_dim {v_dim})")
            if i.dtype != "bfloat16":
                raise TypeError(f"weights[{n!r}]: dtype {i.dtype}, the weights are bfloat16")
            if i.strides != T._contiguous_strides(i.shape):
                raise ValueError(f"weights[{n!r}]: strides {i.strides}, the weights must be contiguous row-major")
        base = _same_device(list(infos.items()))
        self.backend = base.backend
        self.device = base.device
        self.device_id = base.device_id
        cfg = _lib.MLAConfig(dim=dim, q_lora_rank=dq, kv_lora_rank=R, rope_dim=P, nope_dim=nope_dim, v_dim=v_dim,
                             n_heads=H, softmax_scale=0.0 if softmax_scale is None else float(softmax_scale),
                             key_convention=_lib.KEYS_STORED_ROTATED if keys_stored_rotated
                             else _lib.KEYS_ROTATED_AT_READ)
        self.config = dict(dim=dim, q_lora_rank=dq, kv_lora_rank=R, rope_dim=P, nope_dim=nope_dim, v_dim=v_dim,
                           n_heads=H, softmax_scale=softmax_scale, keys_stored_rotated=bool(keys_stored_rotated))
        w = _lib.MLAWeights(wq_down=infos["q_down"].ptr, wkv_down=infos["kv_down"].ptr, wq_up=infos["q_up"].ptr,
                            wkv_up=infos["kv_up"].ptr, wo=infos["o"].ptr)
        plan = ctypes.c_void_p()
        with T.device_guard(ws["q_down"]):
            st = _lib.lib().latte_mla_plan_create(ctypes.byref(plan), ctypes.byref(cfg), ctypes.byref(w),
                                                  self.backend, ctypes.c_void_p(stream or None))
        _lib.check(st, "latte_mla_plan_create")
        self._plan = plan
        self._lib = _lib.lib()  # kept for __del__ at interpreter shutdown
        self._workspaces = {}  # (batch, max_cache_len) -> (tensor, aligned pointer, bytes)
        # a 1-byte tensor of the weights' library and device: tune() allocates its workspace like it
        try:
            self._like = T.describe(T.empty_like_kind(infos["q_down"], (1,), "uint8"), "like")
        except (TypeError, ImportError):
            self._like = None
        self._plan_id = next(_plan_ids)
        _PLANS[self._plan_id] = self
        del infos, ws

    # -- lifetime --
    def close(self):
        """Destroy the plan (frees its weight copies) and the cached workspaces. Idempotent."""
        plan, self._plan = getattr(self, "_plan", None), None
        if plan:
            _PLANS.pop(getattr(self, "_plan_id", None), None)
            self._workspaces = {}
            self._like = None
            self._lib.latte_mla_plan_destroy(plan)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _handle(self):
        if not self._plan:
            raise RuntimeError("MLADecode: the plan was closed")
        return self._plan

    # -- queries --
    def workspace_size(self, batch, max_cache_len):
        n = ctypes.c_size_t()
        _lib.check(_lib.lib().latte_mla_workspace_size(self._handle(), int(batch), int(max_cache_len), ctypes.byref(n)),
                   "latte_mla_workspace_size")
        return n.value

    def bad_lengths(self, reset=False, stream=None):
        """Sequences rejected for an out-of-range device-side length since the last reset (synchronizes)."""
        if stream is None and self.device == "cuda":
            torch = sys.modules.get("torch")
            if torch is not None:
                with torch.cuda.device(self.device_id):
                    stream = torch.cuda.current_stream().cuda_stream
        n = ctypes.c_int64()
        _lib.check(_lib.lib().latte_mla_plan_bad_lengths(self._handle(), ctypes.byref(n), 1 if reset else 0,
                                                          ctypes.c_void_p(stream or None)),
                   "latte_mla_plan_bad_lengths")
        return n.value

    def _workspace(self, batch, max_cache_len, like):
        """Workspace for (batch, max_cache_len), allocated once per key with `like`'s library (torch: its
        caching allocator, so CUDA graphs and memory pools see it) and kept for later calls."""
        key = (int(batch), int(max_cache_len))
        ws = self._workspaces.get(key)
        if ws is None:
            nbytes = self.workspace_size(batch, max_cache_len)
            if nbytes == 0:
                ws = (None, 0, 0)
            else:
                buf = T.empty_like_kind(like, (nbytes + 256,), "uint8")
                ptr = T.describe(buf, "workspace").ptr
                ws = (buf, (ptr + 255) // 256 * 256, nbytes)
            self._workspaces[key] = ws
        return ws[1], ws[2]

    # -- tuning --
    def tune(self, batch, max_cache_len, like=None):
        """Optional, once at startup (before capturing CUDA graphs): time every candidate of the five
        projection GEMMs for runs of `batch` sequences and keep the fastest in the plan; later calls with that
        batch (and contiguous x / out) use them, bit-reproducibly. Synchronizes the current stream and
        allocates temporary device memory (not a run). Another tune() may choose differently (timing noise).
        The workspace for (batch, max_cache_len) is allocated as a call would (and kept for the calls).
        like: a tensor whose library and device allocate that workspace (default: the weights').
        CPU backend: nothing to tune. Returns describe(batch)."""
        plan = self._handle()
        info = T.describe(like, "like") if like is not None else self._like
        if info is None:
            raise TypeError("MLADecode.tune: cannot allocate a workspace like the weights: pass like= (a tensor on "
                            "the plan's device)")
        obj = info.obj
        stream = T.current_stream(obj)
        ws_ptr, ws_bytes = self._workspace(int(batch), max(int(max_cache_len), 0), info)
        with T.device_guard(obj):
            st = _lib.lib().latte_mla_plan_tune(plan, int(batch), int(max_cache_len), ctypes.c_void_p(ws_ptr or None),
                                                ws_bytes, ctypes.c_void_p(stream or None))
        _lib.check(st, "latte_mla_plan_tune")
        return self.describe(batch)

    def describe(self, batch):
        """What calls with `batch` sequences use for each projection GEMM, one line each (cuBLASLt algorithm
        or latte's GEMM with its split; with tune()'s timings once tuned)."""
        buf = ctypes.create_string_buffer(4096)
        _lib.check(_lib.lib().latte_mla_plan_describe(self._handle(), int(batch), buf, len(buf)),
                   "latte_mla_plan_describe")
        return buf.value.decode("utf-8", "replace")

    # -- run --
    def __call__(self, x, kv_cache, cache_lens, rope_cos, rope_sin, max_cache_len=None, out=None):
        """One decode step for x [batch, dim] bf16. kv_cache [batch, capacity, >= R+P] bf16 (unit last stride,
        any other strides) gets row cache_lens[b] of sequence b written; cache_lens [batch] int32 on the same
        device; rope_cos/rope_sin [max_pos, rope_dim] bf16 contiguous, max_pos > max_cache_len.
        max_cache_len: a bound on every cache_lens[b] (default capacity - 1; smaller bounds need less workspace).
        A sequence whose length is out of range gets y = NaN and no append (see bad_lengths()).
        Returns y [batch, dim] (out, if given)."""
        tops = _torch_ops()
        if tops is not None and isinstance(x, tops.torch.Tensor):
            if max_cache_len is None:
                max_cache_len = kv_cache.shape[1] - 1
            if out is None:
                return tops.torch.ops.latte.mla_decode(self._plan_id, x, kv_cache, cache_lens, rope_cos, rope_sin,
                                                       int(max_cache_len))
            tops.torch.ops.latte.mla_decode_out(self._plan_id, x, kv_cache, cache_lens, rope_cos, rope_sin,
                                                int(max_cache_len), out)
            return out
        return self.run_impl(x, kv_cache, cache_lens, rope_cos, rope_sin, max_cache_len, out)

    def run_impl(self, x, kv_cache, cache_lens, rope_cos, rope_sin, max_cache_len=None, out=None):
        plan = self._handle()
        c = self.config
        stream = T.current_stream(x)
        xi = T.describe(x, "x", stream)
        if xi.ndim != 2 or xi.shape[1] != c["dim"]:
            raise ValueError(f"x: shape {list(xi.shape)}, expected [batch, {c['dim']}]")
        batch = xi.shape[0]
        if out is None:
            out = T.empty_like_kind(xi, (batch, c["dim"]), "bfloat16")
        yi = T.describe(out, "out", stream)
        ci = T.describe(kv_cache, "kv_cache", stream)
        li = T.describe(cache_lens, "cache_lens", stream)
        cosi, sini = T.describe(rope_cos, "rope_cos", stream), T.describe(rope_sin, "rope_sin", stream)
        infos = [("x", xi), ("out", yi), ("kv_cache", ci), ("cache_lens", li), ("rope_cos", cosi), ("rope_sin", sini)]
        base = _same_device(infos)
        if base.backend != self.backend or (base.device == "cuda" and base.device_id != self.device_id):
            raise ValueError(f"x: on {base.device}:{base.device_id}, but the plan was made for "
                             f"{self.device}:{self.device_id}")
        for nm, i in infos:
            if nm != "cache_lens" and i.dtype != "bfloat16":
                raise TypeError(f"{nm}: dtype {i.dtype}, expected bfloat16")
        if yi.shape != (batch, c["dim"]):
            raise ValueError(f"out: shape {list(yi.shape)}, expected [{batch}, {c['dim']}]")
        _writable(yi, "out")
        _writable(ci, "kv_cache")
        x_rs, y_rs = _row_stride(xi, "x"), _row_stride(yi, "out")
        row = c["kv_lora_rank"] + c["rope_dim"]
        if ci.ndim != 3 or ci.shape[0] != batch or ci.shape[2] < row:
            raise ValueError(f"kv_cache: shape {list(ci.shape)}, expected [{batch}, capacity, >= {row}]")
        if ci.strides[2] != 1:
            raise ValueError(f"kv_cache: last stride {ci.strides[2]} != 1 (cache rows must be contiguous)")
        capacity = ci.shape[1]
        row_stride = ci.strides[1] if capacity > 1 else max(ci.strides[1], ci.shape[2])
        batch_stride = ci.strides[0] if batch > 1 else max(ci.strides[0], capacity * row_stride)
        if li.dtype != "int32" or li.shape != (batch,):
            raise ValueError(f"cache_lens: {li.dtype} {list(li.shape)}, expected int32 [{batch}]")
        if batch > 1 and li.strides[0] != 1:
            raise ValueError(f"cache_lens: stride {li.strides[0]} != 1")
        P = c["rope_dim"]
        for nm, i in (("rope_cos", cosi), ("rope_sin", sini)):
            if i.ndim != 2 or i.shape[1] != P:
                raise ValueError(f"{nm}: shape {list(i.shape)}, expected [max_pos, {P}]")
            if i.shape[0] > 1 and i.strides != (P, 1):
                raise ValueError(f"{nm}: strides {i.strides}, the tables must be contiguous")
        if cosi.shape != sini.shape:
            raise ValueError(f"rope_sin: shape {list(sini.shape)} != rope_cos {list(cosi.shape)}")
        if max_cache_len is None:
            max_cache_len = capacity - 1
        ws_ptr, ws_bytes = self._workspace(batch, max(int(max_cache_len), 0), xi)
        a = _lib.MLARunArgs()
        a.batch = batch
        a.x, a.x_row_stride = xi.ptr, x_rs
        a.kv_cache = _lib.KVCache(data=ci.ptr, batch_stride=batch_stride, row_stride=row_stride, capacity=capacity)
        a.cache_lens = li.ptr
        a.max_cache_len = int(max_cache_len)
        a.rope_cos, a.rope_sin, a.rope_max_pos = cosi.ptr, sini.ptr, cosi.shape[0]
        a.y, a.y_row_stride = yi.ptr, y_rs
        with T.device_guard(x):
            st = _lib.lib().latte_mla_run(plan, ctypes.byref(a), ctypes.c_void_p(ws_ptr or None), ws_bytes,
                                          ctypes.c_void_p(stream or None))
        _lib.check(st, "latte_mla_run")
        return out
