"""torch integration: the torch.ops.latte custom ops (CPU tensors: CPU backend), and on a GPU the CUDA backend
against the CPU backend, non-contiguous inputs, CUDA-graph capture and replay, torch.compile(fullgraph=True),
and (LATTE_ORACLE=path/to/mla_oracle.py) the MLA layer against the independent oracle at a small batch.
Skips cleanly without torch, and the GPU part without CUDA."""
import importlib.util
import math
import os

import pytest

torch = pytest.importorskip("torch")
import latte  # noqa: E402

if not hasattr(torch.library, "custom_op"):
    pytest.skip("torch < 2.4: no torch.library.custom_op", allow_module_level=True)

cuda = pytest.mark.skipif(not (torch.cuda.is_available() and latte.cuda_device_count() > 0),
                          reason="no CUDA device (or liblatte sees none)")


@pytest.fixture
def gen(rng):
    g = torch.Generator()
    g.manual_seed(int(rng.integers(0, 2 ** 62)))
    return g


def randn(gen, *shape, dtype=torch.bfloat16, scale=1.0, device="cpu"):
    return (torch.randn(shape, generator=gen, dtype=torch.float32) * scale).to(dtype).to(device)


def same_bits(a, b):
    """bit-identical (NaN-safe, unlike torch.equal)"""
    iv = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.contiguous().view(iv), b.contiguous().view(iv))


def ulps_apart(a, b):
    """|a - b| in units of the dtype's spacing at |b| (float64 arithmetic)."""
    fi = torch.finfo(a.dtype)
    a, b = a.double().cpu(), b.double().cpu()
    spacing = torch.clamp(b.abs(), min=fi.tiny) * fi.eps
    return ((a - b).abs() / spacing)


# one rounding of fp32 math: 1 ulp for bf16/f16 outputs; fp32 outputs carry the fp32 sum-of-squares error
MAX_ULPS = {torch.bfloat16: 1, torch.float16: 1, torch.float32: 16}


def qknorm_ref(x, w, eps=1e-6):
    x64 = x.double()
    return x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w.double()


# ---- CPU tensors (CPU backend): the custom ops themselves ---------------------------------------------------


def test_custom_ops_registered_and_opcheck(gen):
    assert hasattr(torch.ops.latte, "qknorm_across_heads") and hasattr(torch.ops.latte, "mla_decode")
    q, k = randn(gen, 5, 64), randn(gen, 5, 16)
    wq, wk = randn(gen, 64), randn(gen, 16)
    torch.library.opcheck(torch.ops.latte.qknorm_across_heads.default, (q, k, wq, wk, 1e-6, None, None, False))
    oq, ok = torch.empty_like(q), torch.empty_like(k)
    torch.library.opcheck(torch.ops.latte.qknorm_across_heads.default, (q, k, wq, wk, 1e-6, oq, ok, True))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_torch_cpu_qknorm(gen, dtype):
    buf = randn(gen, 9, 200 + 40 + 7, dtype=dtype, scale=3)
    q, k = buf[:, :200], buf[:, 200:240]
    wq, wk = randn(gen, 200, dtype=torch.float32), randn(gen, 40, dtype=torch.float32)
    rq, rk = qknorm_ref(q, wq), qknorm_ref(k, wk)
    tail = buf[:, 240:].clone()
    out = latte.qknorm_across_heads(q, k, wq, wk)
    assert out[0] is q and out[1] is k
    assert ulps_apart(q, rq).max() <= MAX_ULPS[dtype] and ulps_apart(k, rk).max() <= MAX_ULPS[dtype]
    assert same_bits(buf[:, 240:], tail)
    with pytest.raises(ValueError, match="column stride"):
        latte.qknorm_across_heads(buf[:, ::2], None, randn(gen, 124, dtype=dtype), None)


def test_torch_cpu_compile_fullgraph_both_ops(gen):
    """aot_eager on the CPU: no C++ toolchain needed, but the same tracing (fake tensors, functionalization)."""
    cfg = dict(dim=64, dq=32, R=16, P=8, DN=16, DV=16, H=4)
    W, x, cache, lens, cos, sin = small_mla_inputs(gen, cfg, 3, [0, 5, 17], 24, "cpu")
    mla = make_layer(W, cfg)
    wq, wk = randn(gen, 64), randn(gen, 64)

    def step(x, q, k, cache, lens):
        latte.qknorm_across_heads(q, k, wq, wk)
        y = mla(x, cache, lens, cos, sin)
        return y + q.sum(), q * 2

    q, k = randn(gen, 3, 64), randn(gen, 3, 64)
    c1, c2 = cache.clone(), cache.clone()
    ye, qe = step(x, q.clone(), k.clone(), c1, lens)
    yc, qc = torch.compile(step, fullgraph=True, backend="aot_eager")(x, q.clone(), k.clone(), c2, lens)
    assert torch.equal(ye, yc) and torch.equal(qe, qc)
    assert same_bits(c1, c2), "the compiled function did not append to the cache in place"


# ---- MLA helpers ----------------------------------------------------------------------------------------------


def small_mla_inputs(gen, cfg, bs, lens, capacity, device, scale=1.0):
    dim, dq, R, P, DN, DV, H = (cfg[k] for k in ("dim", "dq", "R", "P", "DN", "DV", "H"))
    W = dict(q_down=randn(gen, dq, dim, scale=1 / math.sqrt(dim)), kv_down=randn(gen, R + P, dim, scale=1 / math.sqrt(dim)),
             q_up=randn(gen, H * (DN + P), dq, scale=1 / math.sqrt(dq)),
             kv_up=randn(gen, H * (DN + DV), R, scale=1 / math.sqrt(R)),
             o=randn(gen, dim, H * DV, scale=1 / math.sqrt(H * DV)))
    W = {n: w.to(device) for n, w in W.items()}
    x = randn(gen, bs, dim, scale=scale).to(device)
    cache = torch.full((bs, capacity, R + P), float("nan"), dtype=torch.bfloat16)
    for b, n in enumerate(lens):
        cache[b, :n] = randn(gen, n, R + P)
    cos, sin = latte.rope_tables(capacity, P, device=device)
    return W, x, cache.to(device), torch.tensor(lens, dtype=torch.int32, device=device), cos, sin


def make_layer(W, cfg, **kw):
    return latte.MLADecode(W, n_heads=cfg["H"], kv_lora_rank=cfg["R"], rope_dim=cfg["P"], nope_dim=cfg["DN"],
                           v_dim=cfg["DV"], **kw)


def reference_check(got, expected, rtol=2e-2, atol=8e-3):
    g, e = got.double().cpu(), expected.double().cpu()
    bad = (g - e).abs() > atol + rtol * e.abs()
    bad |= torch.isnan(g) ^ torch.isnan(e)
    return int(bad.sum())


# ---- GPU --------------------------------------------------------------------------------------------------------

GPU_CFG = dict(dim=512, dq=256, R=512, P=64, DN=128, DV=128, H=16)  # the CUDA backend's per-head sizes


@cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("shape", [(1, 128, 128), (37, 6144, 1024), (300, 8, 40), (5, 1000, 3), (0, 64, 64)])
def test_gpu_qknorm_equals_cpu_backend(gen, dtype, shape):
    n, dq, dk = shape
    buf = randn(gen, n, dq + dk + 24, dtype=dtype, scale=2)
    q, k = buf[:, :dq], buf[:, dq + 8:dq + 8 + dk]  # column slices of one fused buffer
    wq, wk = randn(gen, dq, dtype=dtype), randn(gen, dk, dtype=dtype)
    cq, ck = q.clone(), k.clone()
    latte.qknorm_across_heads(cq, ck, wq, wk, eps=1e-5)  # CPU backend
    gbuf = buf.cuda()
    gq, gk = gbuf[:, :dq], gbuf[:, dq + 8:dq + 8 + dk]
    latte.qknorm_across_heads(gq, gk, wq.cuda(), wk.cuda(), eps=1e-5)
    torch.cuda.synchronize()
    for name, g, c in (("q", gq, cq), ("k", gk, ck)):
        u = ulps_apart(g, c)
        exact = float((u == 0).double().mean()) if u.numel() else 1.0
        print(f"{name}: {exact:.4f} of the elements equal to the CPU backend's")
        lim = MAX_ULPS[dtype]
        assert u.numel() == 0 or u.max() <= lim, f"{name}: {int((u > lim).sum())} elements > {lim} ulp from the CPU backend"
    # untouched columns
    assert same_bits(gbuf[:, dq:dq + 8].cpu(), buf[:, dq:dq + 8])
    assert same_bits(gbuf[:, dq + 8 + dk:].cpu(), buf[:, dq + 8 + dk:])


@cuda
def test_gpu_qknorm_non_contiguous_and_errors(gen):
    a = randn(gen, 16, 256, device="cuda")
    w = randn(gen, 128, device="cuda")
    with pytest.raises(ValueError, match="column stride"):
        latte.qknorm_across_heads(a[:, ::2], None, w, None)
    with pytest.raises(ValueError, match="on cpu"):
        latte.qknorm_across_heads(a[:, :128], None, w.cpu(), None)
    t = a.t().contiguous().t()  # column-major: rejected with the reason
    with pytest.raises(ValueError, match="column stride"):
        latte.qknorm_across_heads(t, None, randn(gen, 256, device="cuda"), None)
    with pytest.raises(latte.LatteError, match="eps"):
        latte.qknorm_across_heads(a[:, :128], None, w, None, eps=float("nan"))


@cuda
def test_gpu_mla_equals_cpu_backend(gen):
    cfg = GPU_CFG
    lens = [0, 1, 77, 130, 255]
    W, x, cache, lens_t, cos, sin = small_mla_inputs(gen, cfg, len(lens), lens, 256, "cpu")
    y_cpu = make_layer(W, cfg)(x, c_cpu := cache.clone(), lens_t, cos, sin)
    Wg = {n: w.cuda() for n, w in W.items()}
    mla = make_layer(Wg, cfg)
    c_gpu = cache.cuda()
    y = mla(x.cuda(), c_gpu, lens_t.cuda(), cos.cuda(), sin.cuda())
    torch.cuda.synchronize()
    # Each backend is held to the spec's tolerance (8e-3 + 2e-2 |ref|) against the reference, so against each other
    # to twice that (as tests/gpu_mla.c): their fp32 sums differ in order, a bf16 score one rounding apart is an
    # expected difference, and with a peaked softmax it moves y past the single tolerance. Measured on an H100 over
    # 80 seeds: 10 seeds had an element past the single tolerance (worst 1.41 times it), the same with each of the
    # three attention kernels (bench/results/2026-11-23-h100-3ce5a9d/seeds_*.log). The oracle test holds the GPU
    # to the spec's own tolerance against the reference.
    m = reference_check(y, y_cpu, rtol=2 * 2e-2, atol=2 * 8e-3)
    rel = ((y.cpu().double() - y_cpu.double()).norm() / y_cpu.double().norm()).item()
    print(f"GPU vs CPU backend: {m} misses of {y.numel()} at twice the spec's tolerance, rel err {rel:.2e}")
    assert m == 0 and rel < 1e-2
    assert reference_check(c_gpu, c_cpu) == 0
    untouched = torch.ones(cache.shape[:2], dtype=torch.bool)
    untouched[torch.arange(len(lens)), lens_t.long()] = False
    assert torch.equal(c_gpu.cpu().view(torch.int16)[untouched], cache.view(torch.int16)[untouched])
    assert mla.bad_lengths() == 0


@cuda
def test_gpu_mla_bad_lengths_and_strided_cache(gen):
    cfg = GPU_CFG
    W, x, cache, lens_t, cos, sin = small_mla_inputs(gen, cfg, 3, [5, 9, 2], 64, "cuda")
    padded = torch.full((3, 64, 640), float("nan"), dtype=torch.bfloat16, device="cuda")
    padded[:, :, :576] = cache
    mla = make_layer(W, cfg)
    y_ref = mla(x, cache.clone(), lens_t, cos, sin)
    y = mla(x, padded[:, :, :576], lens_t, cos, sin)  # row stride 640
    assert torch.equal(y, y_ref)
    assert torch.isnan(padded[:, :, 576:]).all()
    bad = torch.tensor([5, -1, 70], dtype=torch.int32, device="cuda")
    y = mla(x, cache, bad, cos, sin, max_cache_len=40)
    assert torch.isnan(y[1]).all() and torch.isnan(y[2]).all() and torch.isfinite(y[0]).all()
    assert mla.bad_lengths(reset=True) == 2 and mla.bad_lengths() == 0


@cuda
def test_gpu_cuda_graph_capture_and_replay(gen):
    cfg = GPU_CFG
    W, x, cache, lens_t, cos, sin = small_mla_inputs(gen, cfg, 4, [3, 40, 100, 7], 128, "cuda")
    mla = make_layer(W, cfg)
    q, k = randn(gen, 4, 1024, device="cuda"), randn(gen, 4, 256, device="cuda")
    wq, wk = randn(gen, 1024, device="cuda"), randn(gen, 256, device="cuda")
    cache0 = cache.clone()

    def step():
        latte.qknorm_across_heads(q, k, wq, wk)
        return mla(x, cache, lens_t, cos, sin, max_cache_len=127)

    # eager expectations for two different inputs
    q1, k1 = q.clone(), k.clone()
    y1 = step()
    qe1 = q.clone()
    x2 = randn(gen, *x.shape, device="cuda")
    x_saved = x.clone()
    x.copy_(x2)
    q.copy_(q1 * 3)
    k.copy_(k1 * 3)
    cache.copy_(cache0)
    y2 = step()
    qe2 = q.clone()
    # capture (warm-up on a side stream first, as torch requires), then replay with each input
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y_static = step()
    for xin, qin, kin, ye, qe in ((x_saved, q1, k1, y1, qe1), (x2, q1 * 3, k1 * 3, y2, qe2)):
        x.copy_(xin)
        q.copy_(qin)
        k.copy_(kin)
        cache.copy_(cache0)
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(y_static, ye), "graph replay differs from eager"
        assert torch.equal(q, qe)
    assert mla.bad_lengths() == 0


@cuda
def test_gpu_torch_compile_fullgraph(gen):
    cfg = GPU_CFG
    W, x, cache, lens_t, cos, sin = small_mla_inputs(gen, cfg, 2, [10, 33], 64, "cuda")
    mla = make_layer(W, cfg)
    wq, wk = randn(gen, 512, device="cuda"), randn(gen, 128, device="cuda")

    def step(x, qkv, cache, lens):
        q, k = qkv[:, :512], qkv[:, 512:640]
        latte.qknorm_across_heads(q, k, wq, wk)
        y = mla(x, cache, lens, cos, sin)
        return y * 2 + 1, qkv[:, :640].float().sum(-1)

    qkv = randn(gen, 2, 768, device="cuda")
    c1, c2 = cache.clone(), cache.clone()
    q1, q2 = qkv.clone(), qkv.clone()
    ye, se = step(x, q1, c1, lens_t)
    yc, sc = torch.compile(step, fullgraph=True)(x, q2, c2, lens_t)
    torch.cuda.synchronize()
    assert torch.equal(ye, yc) and torch.allclose(se, sc)
    assert same_bits(c1, c2) and same_bits(q1, q2)


# ---- the oracle ---------------------------------------------------------------------------------------------------


def load_oracle():
    path = os.environ.get("LATTE_ORACLE")
    if not path or not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location("mla_oracle", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@cuda
@pytest.mark.skipif(not os.environ.get("LATTE_ORACLE"), reason="LATTE_ORACLE (path to mla_oracle.py) not set")
@pytest.mark.parametrize("keys_stored_rotated", [False, True])
def test_gpu_mla_against_oracle(rng, keys_stored_rotated):
    o = load_oracle()
    assert o is not None, "LATTE_ORACLE does not name a file"
    lens = [0, int(rng.integers(1, 8191)), 1000, 8191]
    seed = int(rng.integers(0, 2 ** 31))
    W, x, cache, lens = o.make_inputs(len(lens), lens, seed)
    cos, sin = o.rope_tables("bf16_reference")
    lc, ls = latte.rope_tables(o.MAXLEN, o.P, kind="bf16_reference", device="cuda")
    assert torch.equal(lc, cos) and torch.equal(ls, sin), "rope tables differ from the oracle's"
    y_ref, cache_ref = o.reference_layer(W, x, cache, lens, cos, sin, keys_stored_rotated=keys_stored_rotated)
    mla = latte.MLADecode(W, n_heads=o.H, keys_stored_rotated=keys_stored_rotated)
    c = cache.clone()
    y = mla(x, c, torch.tensor(lens, dtype=torch.int32, device="cuda"), cos, sin)
    torch.cuda.synchronize()
    print(f"oracle: misses {o.reference_check(y, y_ref)}, rel err {o.rel_err(y, y_ref):.2e}, "
          f"cache misses {o.reference_check(c, cache_ref)}")
    assert o.reference_check(y, y_ref) == 0
    assert o.reference_check(c, cache_ref) == 0
    changed = (c.view(torch.int16) != cache.view(torch.int16)).any(-1)
    changed[torch.arange(len(lens)), torch.tensor(lens)] = False
    assert not changed.any(), "rows other than the appended ones changed"
