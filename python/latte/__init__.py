"""latte: fast attention-block kernels for LLM decoding (Python bindings over liblatte's C ABI, via ctypes).

    latte.qknorm_across_heads(q, k, q_weight, k_weight, eps=1e-6, out_q=None, out_k=None, weight_plus_one=False)
    latte.fused_inplace_qknorm_across_heads(q, k, q_weight, k_weight, eps=1e-6)     # SGLang's signature
    latte.rope_tables(max_pos, rope_dim=64, kind="bf16_reference" | "fp32", base=10000.0, device=None)
    latte.MLADecode(weights, n_heads=128, ..., keys_stored_rotated=False)(x, kv_cache, cache_lens, cos, sin)

Tensors: torch (cpu/cuda), NumPy (cpu, ml_dtypes.bfloat16 for bf16), or any __dlpack__ object (CuPy, JAX).
liblatte is loaded on first use: $LATTE_LIBRARY, else latte/liblatte.so, else the install prefix.
With torch >= 2.4 importable (and LATTE_NO_TORCH unset) the operations are also torch.ops.latte.* custom ops.
"""
import importlib.util as _ilu
import os as _os

from ._lib import LatteError, version, cuda_device_count, library_path  # noqa: F401
from .ops import MLADecode, qknorm_across_heads, fused_inplace_qknorm_across_heads, rope_tables  # noqa: F401
from ._tensor import describe  # noqa: F401

__version__ = "0.1.0"

# torch custom ops: registered at import when torch is installed (never imported otherwise).
if not _os.environ.get("LATTE_NO_TORCH") and _ilu.find_spec("torch") is not None:
    from . import _torch_ops  # noqa: F401

__all__ = ["LatteError", "MLADecode", "qknorm_across_heads", "fused_inplace_qknorm_across_heads", "rope_tables",
           "version", "cuda_device_count", "library_path", "describe"]
