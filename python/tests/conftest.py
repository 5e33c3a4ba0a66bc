"""Shared fixtures of the Python tests (tests/python.sh runs them).

The device is $CLATTN_TEST_DEVICE (a clattn device spec), else PoCL's CPU
device ("pthread"), else the first device."""

import os
import zlib

import numpy as np
import pytest

import clattn
import reference


def _device_spec():
    return os.environ.get("CLATTN_TEST_DEVICE", "pthread")


@pytest.fixture(scope="session")
def ctx():
    context = clattn.Context(_device_spec())
    yield context
    context.close()


@pytest.fixture
def rng(request):
    # Each test its own stream, the same on every run.
    # crc32, not hash(): str hashes change with every process.
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


def poison(a):
    """Fill an output with NaN before a call, so a call that writes nothing
    cannot pass.  NumPy or pyopencl arrays; uint16 ones hold bfloat16 bits
    and get bfloat16's quiet NaN.  A pyopencl array is filled before the
    call returns (the fill's event is waited for)."""
    nan = 0x7FC0 if np.dtype(a.dtype) == np.uint16 else np.nan
    a.fill(nan)
    if hasattr(a, "finish"):
        a.finish()
    return a


def is_poisoned(a):
    """Every element still the poison (a pyopencl array is read back)."""
    host = a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else a
    if np.dtype(host.dtype) == np.uint16:
        return bool((host == 0x7FC0).all())
    return bool(np.isnan(host).all())


# Absolute and relative tolerance per storage dtype, for inputs of unit
# scale (outputs are convex mixes of V rows, so of unit scale too); the
# reference is given the stored (rounded) inputs, so the error is the
# kernel's arithmetic and the output's rounding:
#  - f32: float32 accumulation over a few dozen keys and an exp accurate to a
#    few ulps: some 1e-6; 2e-5 leaves room for another summation order.
#  - f16: the output's rounding alone is half an ulp, 2^-11 relative (4.9e-4
#    near 1); 2e-3 also covers weights or partial sums held in half.
#  - bf16: half an ulp is 2^-8 relative (3.9e-3 near 1); 1.6e-2 covers that
#    twice over plus the weights' rounding.
TOLERANCE = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}


def assert_close(got, want, dtype):
    """got (an output in storage dtype `dtype`) equals the float64 reference
    `want` within the dtype's tolerance; NaN nowhere (outputs are poisoned
    with NaN, so a row left unwritten fails here)."""
    got = reference.values(got, dtype)
    assert np.isfinite(got).all(), "non-finite output (an unwritten row?)"
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
