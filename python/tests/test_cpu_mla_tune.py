"""MLADecode.tune / describe on the CPU backend: nothing to tune, but the calls validate and succeed, and a
tuned layer computes what an untuned one does (bit for bit: the CPU backend has one GEMM)."""
import pytest

# the NumPy route (CI: .ci/run installs both); a GPU machine may lack ml_dtypes and still run the torch tests
np = pytest.importorskip("numpy")
pytest.importorskip("ml_dtypes")

import latte
from conftest import bits
from test_cpu_mla import CFG, layer, make, tables


def test_cpu_tune_is_a_noop(rng):
    W, x, cache, lens = make(rng, CFG, 3, [0, 5, 9], 12)
    cos, sin = tables(16, CFG["P"])
    with layer(W, CFG) as mla, layer(W, CFG) as ref:
        text = mla.tune(3, 11)
        assert "CPU" in text and text == mla.describe(3)
        y = mla(x, cache.copy(), lens, cos, sin, max_cache_len=11)
        y_ref = ref(x, cache.copy(), lens, cos, sin, max_cache_len=11)
        assert np.array_equal(bits(y), bits(y_ref))


def test_cpu_tune_rejects_bad_arguments(rng):
    W, _, _, _ = make(rng, CFG, 1, [0], 4)
    with layer(W, CFG) as mla:
        with pytest.raises(latte.LatteError):
            mla.tune(0, 10)
        with pytest.raises(latte.LatteError):
            mla.tune(2, -1)
        with pytest.raises(latte.LatteError):
            mla.describe(0)
