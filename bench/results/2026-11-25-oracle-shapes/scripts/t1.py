# Where latte's extra error on one-token sequences (len 0, T = 1: o_lat = the appended row exactly) comes from:
# y recomputed in PyTorch from latte's own appended row, against latte's y and the reference's
import os, sys, torch
sys.path.insert(0, "python"); sys.path.insert(0, ".carry/oracle")
import latte, mla_oracle as o
cos, sin = o.rope_tables("bf16_reference")
def rel(a, b): return ((a.float() - b.float()).norm() / b.float().norm()).item()
def bits(a, b): return (a.view(torch.int16) != b.view(torch.int16)).float().mean().item()
for seed in (534204910, 12, 23):
    for rotated in (False, True):
        for tuned in (False, True):
            W, x, cache, lens = o.make_inputs(128, 0, seed)
            c_in = cache.clone()
            lens_t = torch.zeros(128, dtype=torch.int32, device="cuda")
            mla = latte.MLADecode(W, n_heads=o.H, kv_lora_rank=o.R, rope_dim=o.P, nope_dim=o.DN, v_dim=o.DV,
                                  keys_stored_rotated=rotated)
            if tuned: mla.tune(128, 0)
            y = mla(x, cache, lens_t, cos, sin); torch.cuda.synchronize(); mla.close()
            y_ref, c_ref = o.reference_layer(W, x, c_in, lens, cos, sin, keys_stored_rotated=rotated)
            ab = o.Absorbed(W)
            c2 = c_in.clone(); y_ab = ab(x, c2, 0, cos, sin, keys_stored_rotated=rotated)
            row = cache[:, 0]           # latte's appended row
            row_t = c2[:, 0]            # PyTorch's
            # y from latte's row, PyTorch's W_UV and out: o_lat = row[:, :R] (p = 1)
            ov = torch.bmm(row[:, None, :o.R].expand(128, o.H, o.R).transpose(0, 1), ab.W_UV).transpose(0, 1)
            y_from_row = ov.reshape(128, -1) @ W['o'].T
            ov2 = torch.bmm(row_t[:, None, :o.R].expand(128, o.H, o.R).transpose(0, 1), ab.W_UV).transpose(0, 1)
            print(f"seed {seed} rotated {int(rotated)} tuned {int(tuned)}: rel(latte, ref) {rel(y, y_ref):.2e} "
                  f"rel(absorbed, ref) {rel(y_ab, y_ref):.2e} | appended row: bits differ {bits(row, row_t):.4f} "
                  f"rel {rel(row, row_t):.2e} | y from latte's row vs latte {rel(y_from_row, y):.2e}, vs ref "
                  f"{rel(y_from_row, y_ref):.2e} | o_v(latte row) vs o_v(torch row) {rel(ov, ov2):.2e}", flush=True)
            del W, x, cache, c_in, c2
            torch.cuda.empty_cache()
