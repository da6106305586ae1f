#!/usr/bin/env python3
"""Print a SHA-256 of the layer's y and appended cache rows for a few (batch, lengths) cases: run once with each
library (LATTE_LIBRARY) and diff the outputs to check two builds bit for bit (untuned plans: deterministic choices).
Needs the oracle in .carry/oracle/ (its make_inputs draws the reference's inputs). Usage: python3 bitcmp.py"""
import hashlib, importlib.util, os, sys
import torch
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "python"))
import latte

spec = importlib.util.spec_from_file_location("mla_oracle", ".carry/oracle/mla_oracle.py")
o = importlib.util.module_from_spec(spec)
spec.loader.exec_module(o)
cos, sin = latte.rope_tables(8192, 64, kind="bf16_reference", device="cuda")
cases = [(1, [4096]), (1, [8191]), (1, [511]), (2, [3000, 17]), (5, [8191, 0, 64, 2047, 100]), (8, [4096] * 8),
         (16, [int(v) for v in torch.randint(0, 8192, (16,), generator=torch.Generator().manual_seed(5))]),
         (24, [int(v) for v in torch.randint(0, 8192, (24,), generator=torch.Generator().manual_seed(6))])]
for bs, lens in cases:
    W, x, cache, lens = o.make_inputs(bs, lens, 77 + bs)
    lens_t = torch.tensor(lens, dtype=torch.int32, device="cuda")
    mla = latte.MLADecode(W, n_heads=o.H)
    y = mla(x, cache, lens_t, cos, sin)
    torch.cuda.synchronize()
    mla.close()
    rows = cache[torch.arange(bs, device="cuda"), lens_t.long()]
    h = hashlib.sha256(y.view(torch.int16).cpu().numpy().tobytes() + rows.view(torch.int16).cpu().numpy().tobytes())
    print(f"batch {bs} lens {lens if bs <= 8 else f'{bs} random'}: {h.hexdigest()[:16]} finite {bool(torch.isfinite(y).all())}")
