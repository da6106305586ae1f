"""Shared fixtures. Every test draws fresh random data from a seed it prints (pytest shows it on failure);
LATTE_TEST_SEED=N replays a run."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes")


@pytest.fixture
def rng(request):
    seed = int(os.environ.get("LATTE_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
    print(f"{request.node.name}: seed {seed} (LATTE_TEST_SEED={seed} replays it)")
    return np.random.default_rng(seed)


BF16 = ml_dtypes.bfloat16
NP_DTYPES = {"bfloat16": BF16, "float16": np.float16, "float32": np.float32}


def bits(a):
    """The raw bits of an array (NaN-safe bit-identity comparisons)."""
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def to_bf16(a):
    return np.asarray(a, dtype=np.float64).astype(np.float32).astype(BF16)


def f64(a):
    return np.asarray(a).astype(np.float64)
