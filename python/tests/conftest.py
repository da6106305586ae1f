"""Shared fixtures. Every test draws fresh random data from a seed it prints (pytest shows it on failure);
LATTE_TEST_SEED=N replays a run.

NumPy and ml_dtypes are optional here: the NumPy tests (test_cpu_*.py) skip themselves without them, and the
torch tests (test_torch.py, test_bench.py) must still run on a GPU machine that has torch but no ml_dtypes."""
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import numpy as np
except ImportError:
    np = None
try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None


class _PyRng:
    """The part of numpy.random.Generator the torch tests use (integers), when NumPy is missing."""

    def __init__(self, seed):
        self._r = random.Random(seed)

    def integers(self, low, high=None):
        if high is None:
            low, high = 0, low
        return self._r.randrange(int(low), int(high))


@pytest.fixture
def rng(request):
    seed = int(os.environ.get("LATTE_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
    print(f"{request.node.name}: seed {seed} (LATTE_TEST_SEED={seed} replays it)")
    return np.random.default_rng(seed) if np is not None else _PyRng(seed)


BF16 = ml_dtypes.bfloat16 if ml_dtypes is not None else None
NP_DTYPES = {"bfloat16": BF16, "float16": np.float16, "float32": np.float32} if np is not None and BF16 else {}


def bits(a):
    """The raw bits of an array (NaN-safe bit-identity comparisons)."""
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def to_bf16(a):
    return np.asarray(a, dtype=np.float64).astype(np.float32).astype(BF16)


def f64(a):
    return np.asarray(a).astype(np.float64)
