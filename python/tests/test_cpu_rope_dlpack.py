"""RoPE tables vs a NumPy formula; the DLPack parser on NumPy arrays; the ctypes structures vs the C compiler."""
import ctypes
import os
import shutil
import subprocess

import pytest

# the NumPy route (CI: .ci/run installs both); a GPU machine may lack ml_dtypes and still run the torch tests
np = pytest.importorskip("numpy")
pytest.importorskip("ml_dtypes")

import latte
from latte import _lib, _tensor
from conftest import BF16, bits, f64


def bf16_round(a):
    """fp32 value -> bf16 (round to nearest even), as float64."""
    return f64(np.asarray(a, np.float32).astype(BF16))


def numpy_tables(kind, max_pos, d, base):
    half = d // 2
    i = np.arange(half, dtype=np.float64)
    t = np.arange(max_pos, dtype=np.float64)
    if kind == "bf16_reference":
        # e_i = bf16(-i * (1/half)) (the reference divides in bf16), theta_i = bf16(base^e_i),
        # angle = bf16(bf16(t) * theta_i): torch promotes the int positions to bf16 first
        e = bf16_round((-i).astype(np.float32) * np.float32(1.0 / half))
        # the scalar base takes the tensor's dtype in torch: bf16(10000) = 9984
        theta = bf16_round(np.power(np.float64(bf16_round(np.float32(base))), e).astype(np.float32))
        ang = bf16_round((bf16_round(t)[:, None] * theta[None, :]).astype(np.float32))
    else:
        # theta_i = base^(-i/half), angle = fp32(t * theta_i)
        theta = np.power(np.float64(base), -i / half)
        ang = (t[:, None] * theta[None, :]).astype(np.float32).astype(np.float64)
    ang = np.concatenate([ang, ang], 1)
    return bf16_round(np.cos(ang).astype(np.float32)), bf16_round(np.sin(ang).astype(np.float32))


@pytest.mark.parametrize("kind", ["bf16_reference", "fp32"])
@pytest.mark.parametrize("shape", [(8192, 64), (37, 2), (300, 18)])
def test_rope_tables(kind, shape):
    max_pos, d = shape
    base = 10000.0 if d == 64 else 500.0
    cos = np.full((max_pos, d), np.nan, BF16)
    sin = np.full((max_pos, d), np.nan, BF16)
    r = latte.rope_tables(max_pos, d, kind=kind, base=base, out=(cos, sin))
    assert r[0] is cos and r[1] is sin
    rc, rs = numpy_tables(kind, max_pos, d, base)
    for name, got, ref in (("cos", cos, rc), ("sin", sin, rs)):
        g = f64(got)
        # one bf16 ulp at most (fp32 transcendentals in C vs float64 here can round a midpoint either way)
        ulp = np.maximum(np.abs(ref), 2.0 ** -126) * 2.0 ** -7
        bad = ~(np.abs(g - ref) <= ulp)
        assert not bad.any(), f"{kind} {name}: {int(bad.sum())} elements off by more than one bf16 ulp"
        exact = float((g == ref).mean())
        print(f"{kind} {name} {shape}: {exact:.5f} of the elements bit-exact vs NumPy")
        assert exact > 0.99
    # row t = [c_0..c_{P/2-1}, c_0..c_{P/2-1}]
    assert (bits(cos[:, :d // 2]) == bits(cos[:, d // 2:])).all()
    assert (f64(cos[0]) == 1).all() and (f64(sin[0]) == 0).all()


def test_rope_tables_default_return():
    cos, sin = latte.rope_tables(16, 8, device="numpy")
    assert isinstance(cos, np.ndarray) and cos.dtype == BF16 and cos.shape == (16, 8)
    rc, rs = numpy_tables("bf16_reference", 16, 8, 10000.0)
    assert np.abs(f64(cos) - rc).max() <= 2 ** -7 and np.abs(f64(sin) - rs).max() <= 2 ** -7


def test_rope_tables_errors():
    cos = np.zeros((4, 7), BF16)
    with pytest.raises(latte.LatteError, match="rope_dim"):
        latte.rope_tables(4, 7, out=(cos, cos.copy()))
    cos = np.zeros((4, 8), BF16)
    with pytest.raises(latte.LatteError, match="base"):
        latte.rope_tables(4, 8, base=-1.0, out=(cos, cos.copy()))
    with pytest.raises(ValueError, match="kind"):
        latte.rope_tables(4, 8, kind="fp64", out=(cos, cos.copy()))
    with pytest.raises(TypeError, match="bfloat16"):
        latte.rope_tables(4, 8, out=(np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32)))


# ---- DLPack parser ----------------------------------------------------------------------------------------


class DLPackOnly:
    """Exposes only the DLPack protocol of the wrapped array (forces latte's DLPack route)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, *args, **kw):
        return self.a.__dlpack__(*args, **kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32, np.uint8, np.float64])
def test_dlpack_parser_matches_array_interface(rng, dtype):
    base = (rng.standard_normal((6, 10, 12)) * 10).astype(dtype)
    views = [base, base[1:5], base[:, 3:7, ::3], base.transpose(2, 0, 1), base[2, :, 5], base[:0], base[3, 4, 5:6]]
    for v in views:
        a = _tensor.describe_numpy(v)
        d = _tensor.describe_dlpack(v)
        assert d.kind == "dlpack" and d.device == "cpu"
        assert (d.ptr, d.shape, d.dtype) == (a.ptr, a.shape, a.dtype), (d, a)
        # strides are only meaningful along dimensions longer than one
        assert all(sd == sa for sd, sa, n in zip(d.strides, a.strides, v.shape) if n > 1), (d, a)


def test_dlpack_parser_bf16():
    a = np.zeros((3, 4), BF16)
    try:
        d = _tensor.describe_dlpack(a)
    except (BufferError, TypeError) as e:
        pytest.skip(f"this NumPy does not export ml_dtypes.bfloat16 through DLPack: {e}")
    assert d.dtype == "bfloat16" and d.shape == (3, 4)


def test_dlpack_route_runs_qknorm(rng):
    """An object that only speaks DLPack goes through the capsule parser and is normalized in place."""
    buf = rng.standard_normal((5, 48)).astype(np.float32)
    q, k = buf[:, :32], buf[:, 32:40]
    wq, wk = np.ones(32, np.float32), np.ones(8, np.float32)
    expect_q = f64(q) / np.sqrt((f64(q) ** 2).mean(1, keepdims=True) + 1e-6)
    latte.qknorm_across_heads(DLPackOnly(q), DLPackOnly(k), DLPackOnly(wq), DLPackOnly(wk))
    assert np.allclose(q, expect_q, rtol=2e-6, atol=0)


def test_describe_rejects_non_tensors():
    with pytest.raises(TypeError, match="not a tensor"):
        latte.describe([1, 2, 3])


# ---- ABI: ctypes structures vs what the C compiler lays out ---------------------------------------------

STRUCTS = {
    "latte_qknorm_params": _lib.QKNormParams, "latte_mla_config": _lib.MLAConfig,
    "latte_mla_weights": _lib.MLAWeights, "latte_kv_cache": _lib.KVCache, "latte_mla_run_args": _lib.MLARunArgs,
}


def test_struct_layout_matches_c(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    include = os.path.join(os.path.dirname(__file__), "..", "..", "include")
    if not cc or not os.path.exists(os.path.join(include, "latte.h")):
        pytest.skip("no C compiler or no include/latte.h")
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "latte.h"', "int main(void) {"]
    for cname, st in STRUCTS.items():
        lines.append(f'printf("{cname} size %zu\\n", sizeof({cname}));')
        for f, _ in st._fields_:
            lines.append(f'printf("{cname} {f} %zu\\n", offsetof({cname}, {f}));')
    lines += ["return 0; }"]
    src = tmp_path / "abi.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "abi"
    subprocess.run([cc, "-I", include, str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    for line in filter(None, out):
        cname, field, value = line.split()
        st = STRUCTS[cname]
        got = ctypes.sizeof(st) if field == "size" else getattr(st, field).offset
        assert got == int(value), f"{cname}.{field}: ctypes {got}, C {value}"


def test_config_default_roundtrip():
    c = _lib.lib().latte_mla_config_deepseek_r1()
    assert (c.dim, c.q_lora_rank, c.kv_lora_rank, c.rope_dim, c.nope_dim, c.v_dim, c.n_heads) == \
        (7168, 1536, 512, 64, 128, 128, 128)
    assert c.key_convention == _lib.KEYS_ROTATED_AT_READ and c.softmax_scale == 0.0
    assert latte.version() == 100 * 1 + 0 or latte.version() >= 100
