"""python -m latte.bench: latte beside its PyTorch peers, in one process on one GPU, in latte-bench's tables.

    python -m latte.bench [--quick] [--json PATH] [--max-seconds S] [--lens 512,1024,2048,4096,6144]
                          [--rot-lens 4096] [--batch 128] [--reps N] [--no-mla] [--no-qknorm] [--no-compile]
                          [--compile-backend NAME] [--dry-run]

Measured as bench/latte_bench.cu measures, with its cases, columns and floors, so that the two tables compare
line for line; the PyTorch peers, which latte-bench reads from --peers, are timed here, the same way:
  - ceilings of this GPU first: a 1 GiB device-to-device copy (bytes read + written) and a cuBLAS bf16 GEMM
    8192^3; every floor uses these numbers;
  - every time is the median over replays of a CUDA graph, each bracketed by CUDA events, after an eager warm-up
    round on a side stream (lazy initialization, torch.compile's compilation and autotuning happen there);
  - small operations (QK norm, the copy) are captured K times back to back in one graph and timed per call,
    each call on another buffer set, with enough sets that one replay touches > 3x the L2 cache (nothing is
    timed from L2, and the graph launch is amortized); the MLA layer is one call per graph: its weights
    (374 MB) and cache already exceed L2 several times.
MLA decode layer (DeepSeek-R1 sizes, batch 128, bf16, one set of weights and a full random cache): latte with
the reference key convention at every length (first untuned at the first length, then after
MLADecode.tune(), as latte-bench), and with keys stored rotated at --rot-lens; the peer is the weight-absorbed
layer in plain PyTorch (cuBLAS GEMMs + bmm) in both conventions: "vs torch" is the row's convention,
"vs torch-rot" PyTorch with keys stored rotated (its faster variant).
QK RMSNorm across heads: latte-bench's twelve cases; the peers (bf16, q and k both [N, D], in place) are the
plain formula in eager PyTorch and under torch.compile. SGLang and cuBLAS+FlashMLA are the H200 figures of
shared/anchors.md, not of this run, as in latte-bench.

--quick: 20 replays per median (what scripts/gpu_check.sh runs; about 30-60 s on an H100/H200, most of it
torch.compile). --max-seconds: cases that would start later are skipped, and say so. --json: the records, and at
the top level the keys of the oracle's anchors file (copy_TBps, gemm_TFLOPs, len<L>, qknorm), which
`latte-bench --peers` reads. --dry-run: everything on the CPU backend at toy sizes, eager, wall-clock timing
(checks the code paths where there is no GPU; the figures mean nothing).
Exit status: 0 ok; 1 a latte call failed; 2 no CUDA device or bad usage; 3 latte ok, but a peer failed
(e.g. torch.compile) and its columns are '-'.
"""
import argparse
import json
import math
import os
import sys
import time
import traceback

_T_START = time.time()  # --max-seconds counts from here: importing torch is part of what a caller's timeout sees

try:
    import torch
except ImportError:  # parse_args() and the table formatting work without torch (and are tested so)
    torch = None

import latte

DIM, DQ, H, R, P, DN, DV = 7168, 1536, 128, 512, 64, 128, 128
R1_SIZES = dict(dim=DIM, dq=DQ, R=R, P=P, DN=DN, DV=DV, H=H)
# --dry-run: the CPU backend takes any sizes
TOY_SIZES = dict(dim=64, dq=32, R=16, P=8, DN=16, DV=16, H=4)

# the peers' shapes, bf16, q and k both [N, D] (scripts/oracle_check.py imports QK_SHAPES and qknorm_formula)
QK_SHAPES = [(256, 1024), (1024, 4096), (2048, 8192), (8192, 8192)]
TOY_QK_SHAPES = [(4, 64), (32, 256)]

# anchors.md, H200, not this run (the same figures as latte-bench)
SGLANG_H200_US = {(256, 1024): 7.6, (1024, 4096): 20.4, (2048, 8192): 79.9, (8192, 8192): 293.9}
FLASHMLA_H200_US = {512: 295.0, 1024: 320.0, 2048: 369.0, 4096: 477.0, 6144: 597.0}

DTYPE_BYTES = {"bf16": 2, "f16": 2, "f32": 4}


def _torch_dtype(name):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[name]


def median(v):
    """latte-bench's median (the mean of the two middle values for an even count)"""
    v = sorted(v)
    n = len(v)
    if n == 0:
        return float("nan")
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def speedup(peer_us, ours_us):
    """'1.23x' for peer / ours, '-' when either is unknown"""
    if peer_us is None or ours_us is None or not (math.isfinite(peer_us) and math.isfinite(ours_us)) or ours_us <= 0:
        return "-"
    return f"{peer_us / ours_us:.2f}x"


def _us(v, fmt="9.1f"):
    return format(v, fmt) if v is not None and math.isfinite(v) else "-"


# ---- timing ----------------------------------------------------------------------------------------------------


class Timer:
    """Times `calls` back-to-back enqueue(i) (i < calls) as one CUDA graph, replayed `reps` times between CUDA
    events; returns (median replay time / calls, graphed). An eager round on a side stream comes first (the
    warm-up capture needs; errors surface there, not in the capture). If the capture fails, the eager rounds are
    timed instead and the row says [eager]. On the CPU (--dry-run): eager rounds, wall clock."""

    def __init__(self, device, reps, warm_rounds=3):
        self.cuda = device == "cuda"
        self.reps = reps
        self.warm_rounds = warm_rounds if self.cuda else 1
        self.notes = []

    def calls(self, calls, enqueue, reps=None, graph=True):
        reps = reps or self.reps
        if not self.cuda:
            for i in range(calls):
                enqueue(i)
            for _ in range(self.warm_rounds):
                for i in range(calls):
                    enqueue(i)
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter()
                for i in range(calls):
                    enqueue(i)
                ts.append((time.perf_counter() - t0) * 1e6 / calls)
            return median(ts), False

        cur = torch.cuda.current_stream()
        side = torch.cuda.Stream()
        side.wait_stream(cur)
        with torch.cuda.stream(side):
            for i in range(calls):
                enqueue(i)
        cur.wait_stream(side)
        torch.cuda.synchronize()

        g = None
        if graph:
            g = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(g):
                    for i in range(calls):
                        enqueue(i)
            except Exception as e:  # not capturable: time eager rounds, as latte-bench does
                msg = f"graph capture failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); " \
                      "timing eager calls instead"
                print("  note: " + msg, flush=True)
                self.notes.append(msg)
                g = None
                try:
                    torch.cuda.synchronize()
                except Exception:
                    pass

        def eager_round():
            for i in range(calls):
                enqueue(i)

        run = g.replay if g is not None else eager_round
        for _ in range(self.warm_rounds):
            run()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        for _ in range(reps):
            a.record()
            run()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3 / calls)
        if g is not None:
            g.reset()  # its memory pool goes back now, not at the next garbage collection
        return median(ts), g is not None


class Context:
    """What every section needs: the device, timer, reps, the time budget, failures."""

    def __init__(self, args):
        self.args = args
        self.device = "cpu" if args.dry_run else "cuda"
        self.t0 = _T_START
        self.failures = 0       # latte calls that failed
        self.peer_failures = 0  # peers that failed (their columns are '-')
        self.skipped = 0        # cases skipped for the time budget
        self.table = []         # lines of the closing table
        if self.device == "cuda":
            p = torch.cuda.get_device_properties(0)
            self.gpu = p.name
            self.sm_count = p.multi_processor_count
            self.l2_bytes = int(getattr(p, "L2_cache_size", 0) or 0) or 64 << 20
            self.cc = f"{p.major}.{p.minor}"
        else:
            self.gpu, self.sm_count, self.l2_bytes, self.cc = "CPU (--dry-run)", 0, 16 << 10, "-"

    def elapsed(self):
        return time.time() - self.t0

    def over_budget(self, what):
        m = self.args.max_seconds
        if m is not None and self.elapsed() > m:
            self.skipped += 1
            print(f"{what}: skipped (time budget --max-seconds {m:g} spent)", flush=True)
            return True
        return False


# ---- ceilings ----------------------------------------------------------------------------------------------------


def measure_ceilings(ctx):
    """copy bandwidth (device to device, bytes read + written) and bf16 GEMM peak, eager, as latte-bench"""
    quick, dev = ctx.args.quick, ctx.device
    nbytes = (1 << 30) if dev == "cuda" else (1 << 20)
    src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device=dev).normal_()
    dst = torch.empty_like(src)
    us, _ = ctx.timer.calls(1, lambda i: dst.copy_(src), reps=10 if quick else 20, graph=False)
    copy_TBps = 2.0 * nbytes / (us * 1e-6) / 1e12
    src = dst = None  # (not del: the timed lambda refers to them)
    n = 8192 if dev == "cuda" else 128
    A = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
    B = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
    C = torch.empty(n, n, dtype=torch.bfloat16, device=dev)
    us, _ = ctx.timer.calls(1, lambda i: torch.matmul(A, B, out=C), reps=5 if quick else 10, graph=False)
    gemm_TFLOPs = 2.0 * n ** 3 / (us * 1e-6) / 1e12
    A = B = C = None
    if dev == "cuda":
        torch.cuda.empty_cache()
    return copy_TBps, gemm_TFLOPs


# ---- the PyTorch peer of the MLA layer: the absorbed layer as a user would write it ----------------------------


def _rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., h:], x[..., :h]), -1) * sin


class TorchAbsorbedMLA:
    """Weight absorption in plain PyTorch: q_lat = W_UK^T q_nope, scores against the latent cache, o = W_UV o_lat.
    The same computation as the oracle's Absorbed (shared/oracle/mla_oracle.py): the reference key convention
    (k_pe rotated when read) or keys stored rotated; appends row L of every sequence (uniform length L)."""

    def __init__(self, W, n_heads=H, kv_lora_rank=R, rope_dim=P, nope_dim=DN, v_dim=DV):
        self.H, self.R, self.P, self.DN, self.DV = n_heads, kv_lora_rank, rope_dim, nope_dim, v_dim
        kv_up = W["kv_up"].view(n_heads, nope_dim + v_dim, kv_lora_rank)
        self.w_uk = kv_up[:, :nope_dim, :].contiguous()                  # [H, DN, R]
        self.w_uv = kv_up[:, nope_dim:, :].transpose(1, 2).contiguous()  # [H, R, DV]
        self.W = W

    def __call__(self, x, cache, L, cos, sin, keys_stored_rotated=False):
        W, bs = self.W, x.shape[0]
        Hh, Rr, DNn, DVv = self.H, self.R, self.DN, self.DV
        q_lora = x @ W["q_down"].T
        kv_new = x @ W["kv_down"].T
        if keys_stored_rotated:
            kv_new = torch.cat([kv_new[:, :Rr], _rope(kv_new[:, Rr:], cos[L], sin[L])], -1)
        cache[:, L] = kv_new
        q = (q_lora @ W["q_up"].T).view(bs, Hh, DNn + self.P)
        q_lat = torch.bmm(q[..., :DNn].transpose(0, 1), self.w_uk).transpose(0, 1)      # [bs, H, R]
        q_pe = _rope(q[..., DNn:], cos[L], sin[L])
        kv = cache[:, :L + 1]
        if keys_stored_rotated:
            keys = kv
        else:
            keys = torch.cat([kv[..., :Rr], _rope(kv[..., Rr:], cos[:L + 1], sin[:L + 1])], -1)
        s = torch.bmm(torch.cat([q_lat, q_pe], -1), keys.transpose(1, 2)) * (1.0 / math.sqrt(DNn + self.P))
        p = torch.softmax(s.float(), -1).to(torch.bfloat16)
        o = torch.bmm(torch.bmm(p, kv[..., :Rr]).transpose(0, 1), self.w_uv).transpose(0, 1)
        return o.reshape(bs, Hh * DVv) @ W["o"].T


def mla_weights(sizes, seed, device):
    """randn / sqrt(fan_in), bf16, the spec's layouts (as the oracle and latte-bench)"""
    z = sizes
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    rn = lambda *s: torch.randn(s, dtype=torch.bfloat16, generator=g, device=device)  # noqa: E731
    W = dict(q_down=rn(z["dq"], z["dim"]) / math.sqrt(z["dim"]),
             kv_down=rn(z["R"] + z["P"], z["dim"]) / math.sqrt(z["dim"]),
             q_up=rn(z["H"] * (z["DN"] + z["P"]), z["dq"]) / math.sqrt(z["dq"]),
             kv_up=rn(z["H"] * (z["DN"] + z["DV"]), z["R"]) / math.sqrt(z["R"]),
             o=rn(z["dim"], z["H"] * z["DV"]) / math.sqrt(z["H"] * z["DV"]))
    return W, g


def mla_floor(z, batch, L, copy_TBps, gemm_TFLOPs):
    """latte-bench's floor, rates and byte counts (the oracle's floor_us with this run's ceilings)"""
    weight_elems = (z["dq"] * z["dim"] + (z["R"] + z["P"]) * z["dim"] + z["H"] * (z["DN"] + z["P"]) * z["dq"]
                    + z["H"] * (z["DN"] + z["DV"]) * z["R"] + z["dim"] * z["H"] * z["DV"])
    T = L + 1
    wbytes = 2.0 * weight_elems
    kv_bytes = 2.0 * batch * T * (z["R"] + z["P"])
    attn_flops = 2.0 * batch * z["H"] * T * ((z["R"] + z["P"]) + z["R"])
    proj_flops = 2.0 * batch * weight_elems
    floor_us = wbytes / copy_TBps * 1e-6 + max(kv_bytes / copy_TBps * 1e-6, attn_flops / gemm_TFLOPs * 1e-6)
    return dict(floor_us=floor_us, weight_bytes=wbytes, cache_bytes=kv_bytes, attention_flops=attn_flops,
                projection_flops=proj_flops)


def bench_mla(ctx, res):
    a, dev, z = ctx.args, ctx.device, ctx.sizes
    batch, capacity, lens, rot_lens = a.batch, a.capacity, a.lens, a.rot_lens
    reps = a.reps or (20 if a.quick else 50)
    print(f"MLA decode layer, batch {batch}, {z['H']} heads, cache lengths {lens} (keys stored rotated: {rot_lens})",
          flush=True)
    W, g = mla_weights(z, 1000, dev)
    x = torch.randn(batch, z["dim"], dtype=torch.bfloat16, generator=g, device=dev)
    cache = torch.randn(batch, capacity, z["R"] + z["P"], dtype=torch.bfloat16, generator=g, device=dev)
    y = torch.empty(batch, z["dim"], dtype=torch.bfloat16, device=dev)
    lens_t = torch.zeros(batch, dtype=torch.int32, device=dev)
    cos, sin = latte.rope_tables(capacity, z["P"], kind="bf16_reference", device=dev)
    peer = TorchAbsorbedMLA(W, z["H"], z["R"], z["P"], z["DN"], z["DV"])
    mkw = dict(n_heads=z["H"], kv_lora_rank=z["R"], rope_dim=z["P"], nope_dim=z["DN"], v_dim=z["DV"])

    t = ctx.table
    t.append(f"MLA decode layer, {'DeepSeek-R1' if z == R1_SIZES else 'toy'} sizes, batch {batch} (median of graph "
             "replays; floor as shared/anchors.md with this run's ceilings; PyTorch peers timed in this process)")
    t.append("  %-22s %9s %9s %7s %7s %8s %12s %12s %12s %10s %12s" % (
        "case", "us", "floor us", "xfloor", "TB/s", "TFLOP/s", "vs torch", "vs torch-rot", "vs cuBLAS+FM",
        "torch us", "torch-rot us"))

    # latte-bench's runs: the first length untuned, then (tuned) every length, then keys stored rotated
    runs = ([(False, lens[0], True)] if lens else []) + [(False, L, False) for L in lens] + \
           [(True, L, False) for L in rot_lens]
    plans, tuned, peers = {}, set(), {}

    def torch_peer(L, rotated):
        key = (L, rotated)
        if key not in peers:
            try:
                peers[key] = ctx.timer.calls(1, lambda i: peer(x, cache, L, cos, sin, rotated), reps)
            except Exception as e:
                ctx.peer_failures += 1
                print(f"mla len {L}: PyTorch absorbed peer ({'stored-rotated' if rotated else 'reference'} keys) "
                      f"FAILED: {type(e).__name__}: {e}", flush=True)
                peers[key] = (None, False)
        return peers[key][0]

    for rot, L, untuned in runs:
        label = f"len {L}" + (" stored-rotated" if rot else "") + (" untuned" if untuned else "")
        if ctx.over_budget(f"mla {label}"):
            t.append(f"  {label:<22} skipped (time budget)")
            continue
        try:
            if rot not in plans:
                plans[rot] = latte.MLADecode(W, keys_stored_rotated=rot, **mkw)
            mla = plans[rot]
            if not untuned and rot not in tuned:
                tuned.add(rot)
                t0 = time.time()
                desc = mla.tune(batch, L).strip()
                tune_s = time.time() - t0
                conv = "stored-rotated" if rot else "rotated-at-read"
                print(f"mla: tuned batch {batch} ({conv} keys) in {tune_s:.2f} s:\n{desc}", flush=True)
                # the choices themselves are in the log above (latte-bench repeats them in its table)
                t.append(f"  projections tuned for batch {batch} ({conv} keys) in {tune_s:.2f} s")
            lens_t.fill_(L)
            us, graphed = ctx.timer.calls(1, lambda i: mla(x, cache, lens_t, cos, sin, max_cache_len=L, out=y), reps)
            bad = mla.bad_lengths(reset=True)
            if bad:
                raise RuntimeError(f"the plan rejected {bad} sequence lengths (expected 0)")
        except Exception as e:
            ctx.failures += 1
            print(f"mla {label}: FAILED: {type(e).__name__}: {e}", flush=True)
            t.append(f"  {label:<22} FAILED")
            continue
        t_ref = None if rot else torch_peer(L, False)
        t_rot = torch_peer(L, True)
        f = mla_floor(z, batch, L, ctx.copy_TBps, ctx.gemm_TFLOPs)
        tbps = (f["weight_bytes"] + f["cache_bytes"]) / (us * 1e-6) / 1e12
        tflops = (f["attention_flops"] + f["projection_flops"]) / (us * 1e-6) / 1e12
        fm = FLASHMLA_H200_US.get(L) if z == R1_SIZES else None
        mark = "" if graphed or dev != "cuda" else " [eager]"
        print(f"mla {label}: {us:.1f} us (floor {f['floor_us']:.1f}, x{us / f['floor_us']:.2f}), {tbps:.2f} TB/s, "
              f"{tflops:.0f} TFLOP/s{mark} | torch absorbed {_us(t_ref, '.1f')} us, keys stored rotated "
              f"{_us(t_rot, '.1f')} us", flush=True)
        t.append("  %-22s %9.1f %9.1f %7.2f %7.2f %8.0f %12s %12s %12s %10s %12s%s" % (
            label, us, f["floor_us"], us / f["floor_us"], tbps, tflops, speedup(t_ref, us), speedup(t_rot, us),
            speedup(fm, us), _us(t_ref, ".1f"), _us(t_rot, ".1f"), mark))
        res["records"].append(dict(
            impl="latte", op="mla_decode", case=label, median_us=us, graph=graphed,
            params=dict(batch=batch, cache_len=L, capacity=capacity, n_heads=z["H"],
                        key_convention="stored_rotated" if rot else "rotated_at_read", rope="bf16_reference",
                        projections="untuned" if untuned else "tuned", **{k: f[k] for k in (
                            "weight_bytes", "cache_bytes", "attention_flops", "projection_flops")}),
            floor_us=f["floor_us"], ratio_to_floor=us / f["floor_us"], TBps=tbps, TFLOPs=tflops,
            peers=dict(torch_absorbed_us=t_ref, torch_absorbed_prerotated_us=t_rot, cublas_flashmla_h200_anchor_us=fm)))
        # the oracle's anchors keys (latte-bench --peers reads them)
        if not untuned:
            e = res.setdefault(f"len{L}", {})
            e["floor_us"] = f["floor_us"]
            e["latte_prerotated_us" if rot else "latte_us"] = us
            if t_ref is not None:
                e["torch_absorbed_us"] = t_ref
            if t_rot is not None:
                e["torch_absorbed_prerotated_us"] = t_rot
    t.append("  vs torch / torch-rot: PyTorch absorbed (the row's / stored-rotated keys, this process) over ours;"
             " vs cuBLAS+FM: cuBLAS+FlashMLA on an H200 (anchors.md, not this run) over ours")
    for p in plans.values():
        p.close()
    W = x = cache = y = peer = plans = None  # free before the QK-norm section
    if dev == "cuda":
        torch.cuda.empty_cache()


# ---- QK RMSNorm across heads ---------------------------------------------------------------------------------------


def qknorm_formula(q, k, wq, wk, eps: float = 1e-6):
    """The plain formula, in place (what SGLang's kernel computes); tensor methods only (torch.compile traces it)."""
    qf, kf = q.float(), k.float()
    q.copy_(qf * (qf.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * wq.float())
    k.copy_(kf * (kf.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * wk.float())


def qk_cases(dry_run=False):
    """latte-bench's cases: (n, dq, dk, dtype, in_place, qkv_slices)"""
    shapes = TOY_QK_SHAPES if dry_run else QK_SHAPES
    cases = [(n, d, d, "bf16", ip, False) for ip in (True, False) for n, d in shapes]
    if dry_run:
        extra = [(32, 192, 64, "bf16", True, False), (32, 128, 128, "bf16", True, True),
                 (32, 256, 256, "f16", True, False), (32, 256, 256, "f32", True, False)]
    else:
        extra = [(8192, 6144, 1024, "bf16", True, False), (8192, 4096, 4096, "bf16", True, True),
                 (2048, 8192, 8192, "f16", True, False), (2048, 8192, 8192, "f32", True, False)]
    return cases + extra


def qk_label(c):
    n, dq, dk, dt, ip, qkv = c
    width = str(dq) if dq == dk else f"{dq}+{dk}"
    return f"{dt} ({n}, {width}) {'in place' if ip else 'out of place'}{' qkv' if qkv else ''}"


def qk_buffer_sets(c, l2_bytes):
    """latte-bench's rotation: enough buffer sets that one replay touches > 3x L2; calls per graph"""
    n, dq, dk, dt, ip, qkv = c
    touched = n * (dq + dk) * DTYPE_BYTES[dt] * (1 if ip else 2)
    sets = min(max(2, -(-3 * l2_bytes // touched)), 512)
    return sets, sets * (-(-8 // sets))


def bench_qknorm(ctx, res):
    a, dev = ctx.args, ctx.device
    reps = a.reps or (20 if a.quick else 100)
    compiled = None
    if not a.no_compile:
        compiled = torch.compile(qknorm_formula, dynamic=False, backend=a.compile_backend)
    t = ctx.table
    t.append("QK RMSNorm across heads (median of graph replays; floor = bytes at this run's copy bandwidth; "
             "PyTorch peers timed in this process)")
    t.append("  %-34s %9s %9s %7s %7s %8s %9s %10s %10s %9s %9s %9s" % (
        "case", "us", "floor us", "xfloor", "TB/s", "%copy", "copy us", "vs SGLang", "vs t.comp",
        "eager us", "t.comp us", "vs eager"))
    print("QK RMSNorm across heads:", flush=True)
    res["qknorm"] = {}
    for ci, c in enumerate(qk_cases(a.dry_run)):
        n, dq, dk, dtn, ip, qkv = c
        label = qk_label(c)
        if ctx.over_budget(f"qknorm {label}"):
            t.append(f"  {label:<34} skipped (time budget)")
            continue
        dt, es = _torch_dtype(dtn), DTYPE_BYTES[dtn]
        sets, calls = qk_buffer_sets(c, ctx.l2_bytes)
        row = dq + 2 * dk if qkv else 0  # the qkv buffer's row stride
        act = n * (dq + dk)              # elements of q and k
        g = torch.Generator(device=dev)
        g.manual_seed(100 + ci)
        bufs = [torch.randn(n * row if qkv else act, dtype=dt, generator=g, device=dev) for _ in range(sets)]
        if qkv:
            qs = [b.view(n, row)[:, :dq] for b in bufs]
            ks = [b.view(n, row)[:, dq:dq + dk] for b in bufs]
        else:
            qs = [b[:n * dq].view(n, dq) for b in bufs]
            ks = [b[n * dq:].view(n, dk) for b in bufs]
        outs = [] if ip else [torch.empty(act, dtype=dt, device=dev) for _ in range(sets)]
        oqs = [o[:n * dq].view(n, dq) for o in outs]
        oks = [o[n * dq:].view(n, dk) for o in outs]
        wq = (1 + 0.1 * torch.randn(dq, generator=g, device=dev)).to(dt)
        wk = (1 + 0.1 * torch.randn(dk, generator=g, device=dev)).to(dt)

        def run_latte(i):
            j = i % sets
            latte.qknorm_across_heads(qs[j], ks[j], wq, wk, out_q=None if ip else oqs[j], out_k=None if ip else oks[j])

        def run_copy(i):
            j = i % sets
            dst = outs[j] if outs else bufs[(j + 1) % sets]
            dst[:act].copy_(bufs[j][:act])

        try:
            us, graphed = ctx.timer.calls(calls, run_latte, reps)
        except Exception as e:
            ctx.failures += 1
            print(f"qknorm {label}: FAILED: {type(e).__name__}: {e}", flush=True)
            t.append(f"  {label:<34} FAILED")
            continue
        try:
            copy_us, _ = ctx.timer.calls(calls, run_copy, reps)
        except Exception as e:  # the reference copy is not latte: a '-' and a note, not a failure
            copy_us = float("nan")
            print(f"qknorm {label}: the same-size copy FAILED: {type(e).__name__}: {e}", flush=True)
        peer_shape = dtn == "bf16" and ip and not qkv and dq == dk
        eager_us = comp_us = None
        if peer_shape:
            # the peers get q and k as separate tensors (as a model has them): views of one buffer would make
            # torch.compile treat two mutated, aliased inputs through a synthetic base (extra copies), not the peer
            bufs = qs = ks = None
            pq = [torch.randn(n, dq, dtype=dt, generator=g, device=dev) for _ in range(sets)]
            pk = [torch.randn(n, dk, dtype=dt, generator=g, device=dev) for _ in range(sets)]
            try:
                eager_us, _ = ctx.timer.calls(calls, lambda i: qknorm_formula(pq[i % sets], pk[i % sets], wq, wk), reps)
            except Exception as e:
                ctx.peer_failures += 1
                print(f"qknorm {label}: eager PyTorch peer FAILED: {type(e).__name__}: {e}", flush=True)
            if compiled is not None:
                try:
                    t0 = time.time()
                    comp_us, _ = ctx.timer.calls(calls, lambda i: compiled(pq[i % sets], pk[i % sets], wq, wk), reps)
                    print(f"  torch.compile peer ({n}, {dq}): compiled and timed in {time.time() - t0:.1f} s",
                          flush=True)
                except Exception as e:
                    ctx.peer_failures += 1
                    compiled = None  # one failure is enough: the later shapes would fail as slowly
                    print(f"qknorm {label}: torch.compile peer FAILED (no t.comp column from here on): "
                          f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
        # free now (not del: the timed closures refer to them), before the next case's buffers
        bufs = qs = ks = outs = oqs = oks = pq = pk = None
        nbytes = 2.0 * act * es + (dq + dk) * es
        floor_us = nbytes / (ctx.copy_TBps * 1e12) * 1e6
        tbps = nbytes / (us * 1e-6) / 1e12
        pct = 100.0 * tbps / ctx.copy_TBps
        sg = SGLANG_H200_US.get((n, dq)) if peer_shape else None
        mark = "" if graphed or dev != "cuda" else " [eager]"
        peers_txt = f" | torch eager {_us(eager_us, '.1f')} us, torch.compile {_us(comp_us, '.1f')} us" \
            if peer_shape else ""
        print(f"qknorm {label}: {us:.1f} us, {tbps:.2f} TB/s ({pct:.0f}% of copy), floor {floor_us:.1f} us, "
              f"same-size copy {copy_us:.1f} us{mark}{peers_txt}", flush=True)
        t.append("  %-34s %9.1f %9.1f %7.2f %7.2f %7.0f%% %9.1f %10s %10s %9s %9s %9s%s" % (
            label, us, floor_us, us / floor_us, tbps, pct, copy_us, speedup(sg, us), speedup(comp_us, us),
            _us(eager_us), _us(comp_us), speedup(eager_us, us), mark))
        res["records"].append(dict(
            impl="latte", op="qknorm", case=label, median_us=us, graph=graphed,
            params=dict(n_tokens=n, q_width=dq, k_width=dk, dtype=dtn, in_place=ip,
                        layout="qkv_slices" if qkv else "contiguous", buffer_sets=sets, calls_per_graph=calls,
                        bytes=nbytes),
            floor_us=floor_us, ratio_to_floor=us / floor_us, TBps=tbps, pct_copy_bw=pct, copy_same_bytes_us=copy_us,
            peers=dict(torch_eager_us=eager_us, torch_compile_us=comp_us, sglang_h200_anchor_us=sg)))
        if peer_shape:
            res["qknorm"][str((n, dq))] = dict(latte_us=us, torch_eager_us=eager_us, torch_compile_us=comp_us)
        if dev == "cuda":
            torch.cuda.empty_cache()
    t.append("  vs SGLang: SGLang's kernel on an H200 (anchors.md, not this run) / ours; vs t.comp, vs eager: the "
             "plain formula under torch.compile / in eager PyTorch (this process) / ours")


# ---- main ---------------------------------------------------------------------------------------------------


def _int_list(s):
    try:
        v = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a comma-separated list of integers")
    if any(x < 0 for x in v):
        raise argparse.ArgumentTypeError(f"{s!r}: lengths are >= 0")
    return v


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m latte.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20 replays per median (default: MLA 50, QK norm 100)")
    ap.add_argument("--json", metavar="PATH", help="write the records (and the oracle's anchors keys) as JSON")
    ap.add_argument("--max-seconds", type=float, default=None, metavar="S",
                    help="skip the cases that would start after S seconds (the table says so)")
    ap.add_argument("--lens", type=_int_list, default=None, help="MLA cache lengths (default 512,1024,2048,4096,6144)")
    ap.add_argument("--rot-lens", type=_int_list, default=None,
                    help="MLA lengths also run with keys stored rotated (default 4096; '' for none)")
    ap.add_argument("--batch", type=int, default=None, help="MLA batch (default 128)")
    ap.add_argument("--reps", "--iters", dest="reps", type=int, default=None, help="replays per median")
    ap.add_argument("--no-mla", action="store_true")
    ap.add_argument("--no-qknorm", action="store_true")
    ap.add_argument("--no-compile", action="store_true",
                    help="no torch.compile peer (its compilation is most of --quick's time)")
    ap.add_argument("--compile-backend", default=None, help="torch.compile backend of the QK-norm peer "
                    "(default inductor; --dry-run: eager)")
    ap.add_argument("--dry-run", action="store_true",
                    help="the CPU backend at toy sizes, eager, wall clock: checks the code paths without a GPU")
    a = ap.parse_args(argv)
    a.sizes = TOY_SIZES if a.dry_run else R1_SIZES
    a.capacity = 40 if a.dry_run else 8192
    if a.lens is None:
        a.lens = [8, 24] if a.dry_run else [512, 1024, 2048, 4096, 6144]
    if a.rot_lens is None:
        a.rot_lens = [24] if a.dry_run else [4096]
    if a.batch is None:
        a.batch = 3 if a.dry_run else 128
    if a.dry_run and a.reps is None:
        a.reps = 2
    if a.compile_backend is None:
        a.compile_backend = "eager" if a.dry_run else "inductor"
    if a.batch < 1:
        ap.error("--batch must be >= 1")
    if a.reps is not None and a.reps < 1:
        ap.error("--reps must be >= 1")
    for L in a.lens + a.rot_lens:
        if L >= a.capacity:
            ap.error(f"cache length {L}: must be < the capacity {a.capacity} (the appended row must fit)")
    return a


def main(argv=None):
    a = parse_args(argv)
    if torch is None:
        print("latte.bench: needs torch (not importable)", file=sys.stderr)
        return 2
    if not a.dry_run and not (torch.cuda.is_available() and latte.cuda_device_count() > 0):
        print("latte.bench: no CUDA device (torch or liblatte sees none); --dry-run runs on the CPU backend",
              file=sys.stderr)
        return 2
    ctx = Context(a)
    ctx.sizes = a.sizes
    ctx.timer = Timer(ctx.device, a.reps or 20)
    mode = " (dry run: CPU backend, toy sizes, wall clock)" if a.dry_run else " (quick)" if a.quick else ""
    print(f"latte.bench: {ctx.gpu}, {ctx.sm_count} SMs, L2 {ctx.l2_bytes / 1e6:.0f} MB, cc {ctx.cc}, torch "
          f"{torch.__version__}, liblatte {latte.version()} at {latte.library_path()}{mode}", flush=True)
    res = dict(device=dict(name=ctx.gpu, sm_count=ctx.sm_count, l2_bytes=ctx.l2_bytes, cc=ctx.cc),
               torch=torch.__version__, latte_version=latte.version(), git=os.environ.get("LATTE_GIT_REV"),
               quick=a.quick, dry_run=a.dry_run, date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               records=[])
    ctx.copy_TBps, ctx.gemm_TFLOPs = measure_ceilings(ctx)
    res.update(gpu=ctx.gpu, copy_TBps=ctx.copy_TBps, gemm_TFLOPs=ctx.gemm_TFLOPs)
    print(f"ceilings: copy {ctx.copy_TBps:.2f} TB/s (read + write), bf16 GEMM {ctx.gemm_TFLOPs:.0f} TFLOP/s "
          f"({ctx.elapsed():.1f} s)", flush=True)

    # the MLA layer first: it is the headline, and the QK-norm peers' compilation is what may run out of time
    mla_table, qk_table = [], []
    for skip, table, section, name in ((a.no_mla, mla_table, bench_mla, "MLA"),
                                       (a.no_qknorm, qk_table, bench_qknorm, "QK norm")):
        if skip:
            continue
        ctx.table = table
        try:
            section(ctx, res)
        except Exception:  # outside a case (inputs, rope tables): the section stops, the other one still runs
            ctx.failures += 1
            traceback.print_exc()
            print(f"latte.bench: the {name} section FAILED (traceback above)", flush=True)
            table.append(f"{name}: the section FAILED (traceback in the log)")
        print(f"({name} done at {ctx.elapsed():.1f} s)", flush=True)

    # the readable table last, in latte-bench's order (QK norm, then MLA): the GPU tool shows the tail
    print(f"\n==== latte.bench (Python, torch {torch.__version__}): {ctx.gpu} ({ctx.sm_count} SMs, "
          f"L2 {ctx.l2_bytes / 1e6:.0f} MB) ====")
    gemm = "cuBLAS bf16 GEMM 8192^3" if ctx.device == "cuda" else "bf16 GEMM 128^3"
    print(f"ceilings measured now: copy {ctx.copy_TBps:.2f} TB/s, {gemm} {ctx.gemm_TFLOPs:.0f} TFLOP/s")
    for line in qk_table + mla_table:
        print(line)
    for n in ctx.timer.notes:
        print(f"latte.bench: note: {n}")
    if ctx.skipped:
        print(f"latte.bench: {ctx.skipped} case(s) skipped (time budget --max-seconds {a.max_seconds:g})")
    if ctx.failures:
        print(f"latte.bench: {ctx.failures} latte call(s) FAILED (see above)")
    if ctx.peer_failures:
        print(f"latte.bench: {ctx.peer_failures} peer(s) FAILED (see above; their columns are '-')")
    res["seconds"] = round(ctx.elapsed(), 1)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
        print(f"latte.bench: wrote {a.json}")
    print(f"latte.bench: {ctx.elapsed():.1f} s")
    return 1 if ctx.failures else 3 if ctx.peer_failures else 0


if __name__ == "__main__":
    sys.exit(main())
