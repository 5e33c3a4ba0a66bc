"""Shared fixtures of the Python tests (tests/python.sh runs them).

The device is $CLATTN_TEST_DEVICE (a clattn device spec), else PoCL's CPU
device ("pthread"), else the first device."""

import os

import numpy as np
import pytest

import clattn


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
    seed = abs(hash(request.node.nodeid)) % (2**32)
    return np.random.default_rng(seed)


def poison(a):
    """Fill an output with NaN before a call, so a call that writes nothing
    cannot pass."""
    a.fill(np.nan)
    return a
