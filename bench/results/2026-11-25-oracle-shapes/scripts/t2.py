# One-token sequences (len 0: p = 1, so o_lat must be the appended row exactly): latte's y rows against y computed in
# PyTorch from latte's own appended row (the same GEMMs' rounding: untuned, row-independent), in batches of other lengths
import os, sys, torch
sys.path.insert(0, "python"); sys.path.insert(0, ".carry/oracle")
import latte, mla_oracle as o
cos, sin = o.rope_tables("bf16_reference")
g = torch.Generator(); g.manual_seed(5)
comps = {
    "all0": [0] * 128,
    "0/511": [0 if i % 2 == 0 else 511 for i in range(128)],
    "random+zeros": [0 if i % 13 == 3 else int(v) for i, v in enumerate(torch.randint(0, 8192, (128,), generator=g))],
    "zeros+one8191": [8191] + [0] * 127,
    "zeros+64": [64 if i % 2 else 0 for i in range(128)],
}
tag = os.environ.get("TAG", "default")
W, x, cache0, _ = o.make_inputs(128, 0, 777)
ab = o.Absorbed(W)
for name, lens in comps.items():
    for rotated in (False, True):
        cache = cache0.clone()
        gg = torch.Generator(device="cuda"); gg.manual_seed(9)
        for b, n in enumerate(lens):
            if n: cache[b, :n] = torch.randn(n, o.R + o.P, dtype=torch.bfloat16, device="cuda", generator=gg)
        lens_t = torch.tensor(lens, dtype=torch.int32, device="cuda")
        mla = latte.MLADecode(W, n_heads=o.H, kv_lora_rank=o.R, rope_dim=o.P, nope_dim=o.DN, v_dim=o.DV,
                              keys_stored_rotated=rotated)
        y = mla(x, cache, lens_t, cos, sin); torch.cuda.synchronize(); mla.close()
        z = [b for b, n in enumerate(lens) if n == 0]
        zt = torch.tensor(z, device="cuda")
        row = cache[zt, 0]
        ov = torch.bmm(row[:, None, :o.R].expand(len(z), o.H, o.R).transpose(0, 1), ab.W_UV).transpose(0, 1)
        yr = ov.reshape(len(z), -1) @ W['o'].T
        yl = y[zt]
        diff_rows = int((yl.view(torch.int16) != yr.view(torch.int16)).any(-1).sum())
        rels = ((yl.float() - yr.float()).norm(dim=-1) / yr.float().norm(dim=-1))
        print(f"[{tag}] {name:<14} rotated {int(rotated)}: one-token rows {len(z)}, rows not bit-identical {diff_rows}, "
              f"rel err max {rels.max().item():.2e} median {rels.median().item():.2e}", flush=True)
        del cache
