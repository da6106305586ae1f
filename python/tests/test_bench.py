"""python -m latte.bench without a GPU: argument parsing and the table helpers (no torch needed), the PyTorch
absorbed-MLA peer against latte's CPU backend (both key conventions: the peer computes the layer latte computes),
and --dry-run end to end (every section, table and JSON on the CPU backend at toy sizes, ~2 s)."""
import json
import math

import pytest

import latte
from latte import bench

try:
    import torch
except ImportError:  # CI without torch: the parsing and helper tests still run
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch not importable")


def test_parse_args_defaults_and_quick():
    a = bench.parse_args([])
    assert a.lens == [512, 1024, 2048, 4096, 6144] and a.rot_lens == [4096] and a.batch == 128
    assert a.capacity == 8192 and a.sizes == bench.R1_SIZES and a.reps is None and not a.quick
    assert a.compile_backend == "inductor"
    a = bench.parse_args(["--quick", "--json", "x.json", "--max-seconds", "75", "--lens", "512,4096", "--rot-lens", ""])
    assert a.quick and a.json == "x.json" and a.max_seconds == 75 and a.lens == [512, 4096] and a.rot_lens == []
    a = bench.parse_args(["--dry-run"])
    assert a.sizes == bench.TOY_SIZES and a.batch == 3 and a.reps == 2 and a.compile_backend == "eager"
    assert max(a.lens + a.rot_lens) < a.capacity
    assert bench.parse_args(["--iters", "7"]).reps == 7  # the old spelling still works


@pytest.mark.parametrize("argv", [["--lens", "512,abc"], ["--lens", "-1"], ["--lens", "8192"], ["--batch", "0"],
                                  ["--reps", "0"], ["--dry-run", "--lens", "40"], ["--bogus"]])
def test_parse_args_rejects(argv, capsys):
    with pytest.raises(SystemExit) as e:
        bench.parse_args(argv)
    assert e.value.code == 2


def test_helpers_match_latte_bench():
    assert bench.median([3.0, 1.0, 2.0]) == 2.0 and bench.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert math.isnan(bench.median([]))
    assert bench.speedup(300.0, 100.0) == "3.00x" and bench.speedup(None, 1.0) == "-"
    assert bench.speedup(float("nan"), 1.0) == "-" and bench.speedup(1.0, 0.0) == "-"
    # latte-bench's twelve QK-norm cases, labels and L2 rotation (3x L2, at least 2 sets, at most 512)
    cases = bench.qk_cases()
    assert len(cases) == 12 and sum(1 for c in cases if c[4] and c[3] == "bf16" and not c[5] and c[1] == c[2]) == 4
    labels = [bench.qk_label(c) for c in cases]
    assert labels[0] == "bf16 (256, 1024) in place" and labels[4] == "bf16 (256, 1024) out of place"
    assert "bf16 (8192, 6144+1024) in place" in labels and "bf16 (8192, 4096) in place qkv" in labels
    assert "f32 (2048, 8192) in place" in labels
    l2 = 60 << 20
    assert bench.qk_buffer_sets((256, 1024, 1024, "bf16", True, False), l2) == (180, 180)
    assert bench.qk_buffer_sets((8192, 8192, 8192, "bf16", True, False), l2) == (2, 8)
    assert bench.qk_buffer_sets((8, 8, 8, "bf16", True, False), l2) == (512, 512)
    # the MLA floor at 512 with the README's H200 ceilings (112.7 us there)
    f = bench.mla_floor(bench.R1_SIZES, 128, 512, 4.2149, 766.6)
    assert abs(f["floor_us"] - 112.64) < 0.2


def _reference_check(got, expected, rtol=2e-2, atol=8e-3):
    g, e = got.double(), expected.double()
    return int(((g - e).abs() > atol + rtol * e.abs()).sum())


@needs_torch
@pytest.mark.parametrize("rotated", [False, True])
def test_torch_peer_equals_latte_cpu_backend(rotated):
    """The absorbed PyTorch peer and latte's CPU backend: the same layer, the same key convention, the same append."""
    z = bench.TOY_SIZES
    W, g = bench.mla_weights(z, 7, "cpu")
    bs, L, cap = 3, 11, 16
    x = torch.randn(bs, z["dim"], dtype=torch.bfloat16, generator=g)
    cache = torch.randn(bs, cap, z["R"] + z["P"], dtype=torch.bfloat16, generator=g)
    cos, sin = latte.rope_tables(cap, z["P"], kind="bf16_reference", device="cpu")
    peer = bench.TorchAbsorbedMLA(W, z["H"], z["R"], z["P"], z["DN"], z["DV"])
    c_peer, c_latte = cache.clone(), cache.clone()
    y_peer = peer(x, c_peer, L, cos, sin, rotated)
    mla = latte.MLADecode(W, n_heads=z["H"], kv_lora_rank=z["R"], rope_dim=z["P"], nope_dim=z["DN"], v_dim=z["DV"],
                          keys_stored_rotated=rotated)
    y = mla(x, c_latte, torch.full((bs,), L, dtype=torch.int32), cos, sin, max_cache_len=L)
    assert _reference_check(y_peer, y) == 0, (y_peer - y).abs().max()
    assert _reference_check(c_peer[:, L], c_latte[:, L]) == 0
    others = torch.ones(cap, dtype=torch.bool)
    others[L] = False
    assert torch.equal(c_peer[:, others], cache[:, others]) and torch.equal(c_latte[:, others], cache[:, others])
    mla.close()


@needs_torch
def test_no_cuda_device_says_so(capsys):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert bench.main(["--quick"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


@needs_torch
def test_dry_run_end_to_end(tmp_path, capsys):
    out = tmp_path / "pybench.json"
    assert bench.main(["--dry-run", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    table = text[text.index("==== latte.bench"):]
    for label in [bench.qk_label(c) for c in bench.qk_cases(dry_run=True)] + ["len 8 untuned", "len 24 stored-rotated"]:
        line = next((ln for ln in table.splitlines() if ln.startswith(f"  {label} ")), None)
        assert line is not None and "FAILED" not in line and "skipped" not in line, label
    # latte-bench's columns, in its order, then the in-process peers
    assert "vs SGLang  vs t.comp  eager us t.comp us  vs eager" in table
    assert "vs torch vs torch-rot vs cuBLAS+FM   torch us torch-rot us" in table
    assert table.index("QK RMSNorm") < table.index("MLA decode layer")  # latte-bench's order
    res = json.loads(out.read_text())
    # the oracle's anchors keys, which latte-bench --peers reads
    assert res["copy_TBps"] > 0 and res["gemm_TFLOPs"] > 0
    for L in (8, 24):
        assert res[f"len{L}"]["latte_us"] > 0 and res[f"len{L}"]["torch_absorbed_prerotated_us"] > 0
    assert res["len24"]["latte_prerotated_us"] > 0 and res["len8"]["torch_absorbed_us"] > 0
    for shape in ("(4, 64)", "(32, 256)"):
        q = res["qknorm"][shape]
        assert q["latte_us"] > 0 and q["torch_eager_us"] > 0 and q["torch_compile_us"] > 0
    assert len(res["records"]) == len(bench.qk_cases(dry_run=True)) + 4


@needs_torch
def test_dry_run_time_budget(capsys):
    assert bench.main(["--dry-run", "--no-compile", "--max-seconds", "0"]) == 0
    text = capsys.readouterr().out
    assert "skipped (time budget" in text and "case(s) skipped" in text


@needs_torch
def test_dry_run_section_failure_is_reported(monkeypatch, capsys):
    """An error outside a case (here the rope tables) stops its section, not the run: exit 1, the other table."""
    def broken(*a, **k):
        raise latte.LatteError(1, "LATTE_STATUS_INVALID_ARGUMENT", "injected by the test")
    monkeypatch.setattr(bench.latte, "rope_tables", broken)
    assert bench.main(["--dry-run", "--no-compile"]) == 1
    text = capsys.readouterr().out
    assert "the MLA section FAILED" in text and "latte call(s) FAILED" in text
    assert "  bf16 (4, 64) in place " in text[text.index("==== latte.bench"):]
