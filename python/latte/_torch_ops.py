"""torch.library custom ops over liblatte (torch >= 2.4), so torch.compile traces latte without graph breaks
and CUDA graphs capture it.

    latte::qknorm_across_heads(q, k?, q_weight, k_weight?, eps, out_q?, out_k?, weight_plus_one) -> ()
        mutates q and k (in place) or out_q/out_k (out of place).
    latte::mla_decode(plan, x, kv_cache, cache_lens, rope_cos, rope_sin, max_cache_len) -> y
        functional in y; mutates kv_cache (the append). `plan` is the id of an MLADecode object in the plan
        registry (ops._PLANS), an int, so the graph holds no pointer.
    latte::mla_decode_out(plan, x, kv_cache, cache_lens, rope_cos, rope_sin, max_cache_len, out) -> ()

The implementations launch on torch's current stream and allocate only through torch's caching allocator
(the MLA workspace, once per (batch, max_cache_len), kept by the MLADecode object; y), so they are
graph-capturable. The fake implementations give shapes only.
"""
from typing import Optional

import torch

from . import ops

REGISTERED = False

if hasattr(torch, "library") and hasattr(torch.library, "custom_op"):

    @torch.library.custom_op("latte::qknorm_across_heads", mutates_args=("q", "k", "out_q", "out_k"))
    def qknorm_across_heads(q: torch.Tensor, k: Optional[torch.Tensor], q_weight: torch.Tensor,
                            k_weight: Optional[torch.Tensor], eps: float, out_q: Optional[torch.Tensor],
                            out_k: Optional[torch.Tensor], weight_plus_one: bool) -> None:
        ops.qknorm_impl(q, k, q_weight, k_weight, eps, out_q, out_k, weight_plus_one)

    @qknorm_across_heads.register_fake
    def _(q, k, q_weight, k_weight, eps, out_q, out_k, weight_plus_one):
        return None

    @torch.library.custom_op("latte::mla_decode", mutates_args=("kv_cache",))
    def mla_decode(plan: int, x: torch.Tensor, kv_cache: torch.Tensor, cache_lens: torch.Tensor,
                   rope_cos: torch.Tensor, rope_sin: torch.Tensor, max_cache_len: int) -> torch.Tensor:
        dec = ops.plan_by_id(plan)
        y = torch.empty((x.shape[0], dec.config["dim"]), dtype=x.dtype, device=x.device)
        dec.run_impl(x, kv_cache, cache_lens, rope_cos, rope_sin, max_cache_len, y)
        return y

    @mla_decode.register_fake
    def _(plan, x, kv_cache, cache_lens, rope_cos, rope_sin, max_cache_len):
        return x.new_empty((x.shape[0], x.shape[1]))

    @torch.library.custom_op("latte::mla_decode_out", mutates_args=("kv_cache", "out"))
    def mla_decode_out(plan: int, x: torch.Tensor, kv_cache: torch.Tensor, cache_lens: torch.Tensor,
                       rope_cos: torch.Tensor, rope_sin: torch.Tensor, max_cache_len: int,
                       out: torch.Tensor) -> None:
        ops.plan_by_id(plan).run_impl(x, kv_cache, cache_lens, rope_cos, rope_sin, max_cache_len, out)

    @mla_decode_out.register_fake
    def _(plan, x, kv_cache, cache_lens, rope_cos, rope_sin, max_cache_len, out):
        return None

    REGISTERED = True
