"""python -m latte.bench: latte next to its PyTorch peers, in one process on one GPU, CUDA-graph replay, median.

    python -m latte.bench [--lens 512,1024,2048,4096,6144] [--batch 128] [--iters 50] [--json out.json]
                          [--no-mla] [--no-qknorm] [--no-compile]

MLA decode layer (DeepSeek-R1 sizes, bf16): latte (reference key convention, and keys stored rotated) vs the
weight-absorbed layer written in plain PyTorch (cuBLAS GEMMs + bmm; both conventions).
QK RMSNorm across heads (bf16, q and k both [N, D], in place): latte vs the plain formula in eager PyTorch
and under torch.compile.
"""
import argparse
import json
import math
import sys

import torch

import latte

DIM, DQ, H, R, P, DN, DV = 7168, 1536, 128, 512, 64, 128, 128


def time_us(fn, iters=50, warmup=5, graph=True):
    """Median microseconds of fn, replayed from a CUDA graph (warm-up on a side stream, as capture requires)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    run = fn
    if graph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        run = g.replay
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return sorted(ts)[len(ts) // 2]


# ---- the PyTorch peer: the absorbed layer as a user would write it ------------------------------------------


def _rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., h:], x[..., :h]), -1) * sin


class TorchAbsorbedMLA:
    """Weight absorption in plain PyTorch: q_lat = W_UK^T q_nope, scores against the latent cache, o = W_UV o_lat."""

    def __init__(self, W):
        kv_up = W["kv_up"].view(H, DN + DV, R)
        self.w_uk = kv_up[:, :DN, :].contiguous()                   # [H, 128, 512]
        self.w_uv = kv_up[:, DN:, :].transpose(1, 2).contiguous()   # [H, 512, 128]
        self.W = W

    def __call__(self, x, cache, L, cos, sin, keys_stored_rotated=False):
        W, bs = self.W, x.shape[0]
        q_lora = x @ W["q_down"].T
        kv_new = x @ W["kv_down"].T
        if keys_stored_rotated:
            kv_new = torch.cat([kv_new[:, :R], _rope(kv_new[:, R:], cos[L], sin[L])], -1)
        cache[:, L] = kv_new
        q = (q_lora @ W["q_up"].T).view(bs, H, DN + P)
        q_lat = torch.bmm(q[..., :DN].transpose(0, 1), self.w_uk).transpose(0, 1)      # [bs, H, R]
        q_pe = _rope(q[..., DN:], cos[L], sin[L])
        kv = cache[:, :L + 1]
        keys = kv if keys_stored_rotated else torch.cat([kv[..., :R], _rope(kv[..., R:], cos[:L + 1], sin[:L + 1])], -1)
        s = torch.bmm(torch.cat([q_lat, q_pe], -1), keys.transpose(1, 2)) * (1.0 / math.sqrt(DN + P))
        p = torch.softmax(s.float(), -1).to(torch.bfloat16)
        o = torch.bmm(torch.bmm(p, kv[..., :R]).transpose(0, 1), self.w_uv).transpose(0, 1)
        return o.reshape(bs, H * DV) @ W["o"].T


def mla_inputs(bs, L, seed, capacity=8192):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    rn = lambda *s: torch.randn(s, dtype=torch.bfloat16, generator=g, device="cuda")
    W = dict(q_down=rn(DQ, DIM) / math.sqrt(DIM), kv_down=rn(R + P, DIM) / math.sqrt(DIM),
             q_up=rn(H * (DN + P), DQ) / math.sqrt(DQ), kv_up=rn(H * (DN + DV), R) / math.sqrt(R),
             o=rn(DIM, H * DV) / math.sqrt(H * DV))
    x = rn(bs, DIM)
    cache = torch.zeros(bs, capacity, R + P, dtype=torch.bfloat16, device="cuda")
    cache[:, :L] = rn(bs, L, R + P)
    return W, x, cache


def bench_mla(lens, bs, iters):
    cos, sin = latte.rope_tables(8192, P, kind="bf16_reference", device="cuda")
    rows = []
    for L in lens:
        W, x, cache = mla_inputs(bs, L, 1000 + L)
        lens_t = torch.full((bs,), L, dtype=torch.int32, device="cuda")
        row = dict(len=L)
        for rotated, tag in ((False, ""), (True, "_prerotated")):
            mla = latte.MLADecode(W, n_heads=H, keys_stored_rotated=rotated)
            row["latte" + tag + "_us"] = time_us(lambda: mla(x, cache, lens_t, cos, sin, max_cache_len=L), iters)
            mla.close()
            ab = TorchAbsorbedMLA(W)
            row["torch_absorbed" + tag + "_us"] = time_us(lambda: ab(x, cache, L, cos, sin, rotated), iters)
            ab = None
        rows.append(row)
        print(f"  len {L}: latte {row['latte_us']:.1f} us (prerotated {row['latte_prerotated_us']:.1f}) | "
              f"torch absorbed {row['torch_absorbed_us']:.1f} us (prerotated {row['torch_absorbed_prerotated_us']:.1f})",
              flush=True)
        W = x = cache = None  # free before the next length's inputs
        torch.cuda.empty_cache()
    return rows


# ---- QK norm peers ----------------------------------------------------------------------------------------------


def qknorm_formula(q, k, wq, wk, eps: float = 1e-6):
    """The plain formula, in place (what SGLang's kernel computes)."""
    qf, kf = q.float(), k.float()
    q.copy_(qf * torch.rsqrt(qf.pow(2).mean(-1, keepdim=True) + eps) * wq.float())
    k.copy_(kf * torch.rsqrt(kf.pow(2).mean(-1, keepdim=True) + eps) * wk.float())


QK_SHAPES = [(256, 1024), (1024, 4096), (2048, 8192), (8192, 8192)]


def bench_qknorm(shapes, iters, compile_peer=True):
    compiled = torch.compile(qknorm_formula, dynamic=False) if compile_peer else None
    rows = []
    for n, d in shapes:
        g = torch.Generator(device="cuda")
        g.manual_seed(n * 31 + d)
        q = torch.randn(n, d, dtype=torch.bfloat16, device="cuda", generator=g)
        k = torch.randn(n, d, dtype=torch.bfloat16, device="cuda", generator=g)
        wq = torch.randn(d, dtype=torch.bfloat16, device="cuda", generator=g)
        wk = torch.randn(d, dtype=torch.bfloat16, device="cuda", generator=g)
        row = dict(shape=(n, d), bytes_us=None)
        row["latte_us"] = time_us(lambda: latte.qknorm_across_heads(q, k, wq, wk), iters)
        row["torch_eager_us"] = time_us(lambda: qknorm_formula(q, k, wq, wk), iters)
        if compiled is not None:
            row["torch_compile_us"] = time_us(lambda: compiled(q, k, wq, wk), iters)
        rows.append(row)
        print(f"  ({n}, {d}): latte {row['latte_us']:.1f} us | torch eager {row['torch_eager_us']:.1f} us"
              + (f" | torch.compile {row['torch_compile_us']:.1f} us" if compiled is not None else ""), flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m latte.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lens", default="512,1024,2048,4096,6144")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-mla", action="store_true")
    ap.add_argument("--no-qknorm", action="store_true")
    ap.add_argument("--no-compile", action="store_true")
    a = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("latte.bench: no CUDA device", file=sys.stderr)
        return 2
    p = torch.cuda.get_device_properties(0)
    print(f"GPU {p.name} ({p.multi_processor_count} SMs), torch {torch.__version__}, liblatte {latte.version()} "
          f"({latte.library_path()})", flush=True)
    res = dict(gpu=p.name, torch=torch.__version__)
    if not a.no_mla:
        print(f"MLA decode layer, batch {a.batch}, {H} heads (CUDA-graph replay, median of {a.iters}):", flush=True)
        res["mla"] = bench_mla([int(s) for s in a.lens.split(",") if s], a.batch, a.iters)
    if not a.no_qknorm:
        print("QK RMSNorm across heads, bf16, q and k [N, D], in place:", flush=True)
        res["qknorm"] = bench_qknorm(QK_SHAPES, a.iters, not a.no_compile)
    # the table, last
    print()
    if "mla" in res:
        print(f"{'MLA len':>8} | {'latte':>9} | {'torch absorbed':>14} | {'speed-up':>8} | {'latte prerot':>12} | "
              f"{'torch prerot':>12} | {'speed-up':>8}")
        for r in res["mla"]:
            print(f"{r['len']:>8} | {r['latte_us']:>7.1f}us | {r['torch_absorbed_us']:>12.1f}us | "
                  f"{r['torch_absorbed_us'] / r['latte_us']:>7.2f}x | {r['latte_prerotated_us']:>10.1f}us | "
                  f"{r['torch_absorbed_prerotated_us']:>10.1f}us | "
                  f"{r['torch_absorbed_prerotated_us'] / r['latte_prerotated_us']:>7.2f}x")
    if "qknorm" in res:
        print(f"{'QK norm (N, D)':>15} | {'latte':>9} | {'torch eager':>11} | {'torch.compile':>13} | {'vs compile':>10}")
        for r in res["qknorm"]:
            tc = r.get("torch_compile_us")
            print(f"{str(r['shape']):>15} | {r['latte_us']:>7.1f}us | {r['torch_eager_us']:>9.1f}us | "
                  + (f"{tc:>11.1f}us | {tc / r['latte_us']:>9.2f}x" if tc else f"{'-':>13} | {'-':>10}"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1, default=list)
    return 0


if __name__ == "__main__":
    sys.exit(main())
