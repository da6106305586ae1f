"""QK RMSNorm across heads on the CPU backend (NumPy arrays) against a float64 NumPy computation."""
import pytest

# the NumPy route (CI: .ci/run installs both); a GPU machine may lack ml_dtypes and still run the torch tests
np = pytest.importorskip("numpy")
pytest.importorskip("ml_dtypes")

import latte
from conftest import NP_DTYPES, bits, f64

# one rounding at the store after fp32 math: within half an ulp of the exact value, plus fp32 noise
REL_TOL = {"bfloat16": 2.0 ** -8 + 1e-5, "float16": 2.0 ** -11 + 1e-5, "float32": 2e-6}
ABS_TOL = {"bfloat16": 1e-38, "float16": 2.0 ** -25, "float32": 1e-38}


def reference(x, w, eps, plus_one):
    x = f64(x)
    w = f64(w) + (1.0 if plus_one else 0.0)
    if x.shape[0] == 0:
        return x
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * w


def check(name, got, ref, dtype):
    got = f64(got)
    err = np.abs(got - ref)
    tol = REL_TOL[dtype] * np.abs(ref) + ABS_TOL[dtype]
    bad = ~(err <= tol)
    assert got.shape == ref.shape
    assert not bad.any(), (f"{name}: {int(bad.sum())} of {bad.size} elements out of tolerance; first at "
                           f"{np.argwhere(bad)[0]}: got {got[bad][0]!r}, expected {ref[bad][0]!r}")


def fused_buffer(rng, n, widths, dtype, scale, pad=5):
    """One [n, sum(widths) + pad] buffer, NaN-poisoned, with random data in each column slice."""
    buf = np.full((n, sum(widths) + pad), np.nan, dtype=NP_DTYPES[dtype])
    views, c = [], 0
    for w in widths:
        v = buf[:, c:c + w]
        v[...] = (rng.standard_normal((n, w)) * scale).astype(NP_DTYPES[dtype])
        views.append(v)
        c += w
    return buf, views


CASES = [  # (n, dq, dk)
    (7, 128, 128), (33, 256, 64), (5, 6144, 1024), (3, 37, 5), (4, 1, 1), (1, 1000, 24), (0, 64, 64), (16, 8, 8200),
]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("weight_f32", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_qknorm_strided_in_place(rng, dtype, weight_f32, case):
    n, dq, dk = case
    scale = float(10.0 ** rng.uniform(-2, 2)) if dtype != "float16" else float(10.0 ** rng.uniform(-1, 1))
    buf, (q, k, v) = fused_buffer(rng, n, (dq, dk, 3), dtype, scale)
    wdt = np.float32 if weight_f32 else NP_DTYPES[dtype]
    qw = (rng.standard_normal(dq) * 0.5 + 1).astype(wdt)
    kw = (rng.standard_normal(dk) * 0.5 + 1).astype(wdt)
    eps = float(rng.choice([1e-6, 1e-5, 0.0]))
    rq, rk = reference(q, qw, eps, False), reference(k, kw, eps, False)
    before = buf.copy()
    qo, ko = latte.qknorm_across_heads(q, k, qw, kw, eps=eps)
    assert qo is q and ko is k
    check("q", q, rq, dtype)
    check("k", k, rk, dtype)
    # columns outside q and k (v, the padding) are untouched
    assert (bits(buf[:, dq + dk:]) == bits(before[:, dq + dk:])).all()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("plus_one", [False, True])
def test_qknorm_out_of_place(rng, dtype, plus_one):
    n, dq, dk = int(rng.integers(1, 40)), int(rng.integers(1, 700)), int(rng.integers(1, 300))
    _, (q, k) = fused_buffer(rng, n, (dq, dk), dtype, 3.0)
    obuf = np.full((n, dq + dk + 16), np.nan, dtype=NP_DTYPES[dtype])
    oq, ok = obuf[:, 8:8 + dq], obuf[:, 8 + dq + 8:8 + dq + 8 + dk]
    qw = (rng.standard_normal(dq) * 0.1).astype(NP_DTYPES[dtype])
    kw = (rng.standard_normal(dk) * 0.1).astype(NP_DTYPES[dtype])
    q0, k0, ob0 = q.copy(), k.copy(), obuf.copy()
    r = latte.qknorm_across_heads(q, k, qw, kw, 1e-6, out_q=oq, out_k=ok, weight_plus_one=plus_one)
    assert r[0] is oq and r[1] is ok
    check("out_q", oq, reference(q0, qw, 1e-6, plus_one), dtype)
    check("out_k", ok, reference(k0, kw, 1e-6, plus_one), dtype)
    assert (bits(q) == bits(q0)).all() and (bits(k) == bits(k0)).all(), "inputs changed"
    outside = np.ones(obuf.shape, bool)
    outside[:, 8:8 + dq] = False
    outside[:, 8 + dq + 8:8 + dq + 8 + dk] = False
    assert (bits(obuf)[outside] == bits(ob0)[outside]).all(), "output padding changed"


def test_qknorm_q_alone_and_sglang_signature(rng):
    q = rng.standard_normal((9, 96)).astype(np.float32)
    w = rng.standard_normal(96).astype(np.float32)
    ref = reference(q, w, 1e-6, False)
    latte.qknorm_across_heads(q, None, w, None)
    check("q", q, ref, "float32")
    q = rng.standard_normal((9, 96)).astype(np.float16)
    k = rng.standard_normal((9, 96)).astype(np.float16)
    wq, wk = np.ones(96, np.float16), np.full(96, 2, np.float16)
    rq, rk = reference(q, wq, 1e-5, False), reference(k, wk, 1e-5, False)
    assert latte.fused_inplace_qknorm_across_heads(q, k, wq, wk, 1e-5) is None
    check("q", q, rq, "float16")
    check("k", k, rk, "float16")


def test_qknorm_library_errors_write_nothing(rng):
    q = rng.standard_normal((4, 16)).astype(np.float16)
    k = rng.standard_normal((4, 16)).astype(np.float16)
    q0, k0 = q.copy(), k.copy()
    w16 = np.ones(16, np.float16)
    with pytest.raises(latte.LatteError) as e:
        latte.qknorm_across_heads(q, k, w16, w16, eps=-1.0)
    assert e.value.status == 1 and "INVALID_ARGUMENT" in e.value.status_string and "eps" in e.value.message
    assert "eps" in str(e.value)
    wb = np.ones(16, NP_DTYPES["bfloat16"])
    with pytest.raises(latte.LatteError) as e:  # bf16 weights for f16 activations: neither dtype nor f32
        latte.qknorm_across_heads(q, k, wb, wb)
    assert "weight_dtype" in e.value.message
    with pytest.raises(latte.LatteError) as e:  # outputs overlapping the inputs
        latte.qknorm_across_heads(q, k, w16, w16, out_q=k, out_k=q)
    assert "overlap" in e.value.message
    assert (bits(q) == bits(q0)).all() and (bits(k) == bits(k0)).all(), "a rejected call wrote"


def test_qknorm_python_side_errors(rng):
    a = rng.standard_normal((16, 8)).astype(np.float32)
    w = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="column stride"):
        latte.qknorm_across_heads(a[:, ::2], a[:, 1::2], w, w)
    with pytest.raises(ValueError, match="2-D"):
        latte.qknorm_across_heads(a.reshape(2, 8, 8), None, np.ones(8, np.float32), None)
    with pytest.raises(TypeError, match="float64"):
        latte.qknorm_across_heads(a.astype(np.float64), None, np.ones(8), None)
    with pytest.raises(ValueError, match="q_weight"):
        latte.qknorm_across_heads(a, None, w, None)
    ro = a.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        latte.qknorm_across_heads(ro, None, np.ones(8, np.float32), None)
