"""ctx.decode against the float64 reference, and kv_append on pyopencl
caches followed by a decode over the rows it wrote."""

import numpy as np
import pyopencl.array as cla
import pytest

import reference
from conftest import assert_close, poison

DK, DV = 24, 16
CAPACITY = 37


def make(rng, batch, heads_q, heads_kv, layout="bshd", dtype="f32", dk=DK, dv=DV):
    """q and caches in storage dtype and layout, and the stored values of
    q and of the caches in BSHD (float64)."""
    q, q64 = reference.storage(rng.standard_normal((batch, heads_q, dk)), dtype)
    caches = []
    for d in (dk, dv):
        c, c64 = reference.storage(rng.standard_normal((batch, CAPACITY, heads_kv, d)), dtype)
        caches.append((np.ascontiguousarray(reference.bshd(c, layout)), c64))
    return q, q64, caches


@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("heads_q,heads_kv", [(6, 2), (4, 4), (3, 1)])
def test_decode(ctx, rng, layout, heads_q, heads_kv):
    # 1: a single visible row; CAPACITY: the whole cache; 50: clamped.
    lens = [1, CAPACITY, 20, 50]
    q, q64, ((kc, k64), (vc, v64)) = make(rng, 4, heads_q, heads_kv, layout)
    out = ctx.decode(q, kc, vc, lens, cache_layout=layout)
    assert out.shape == (4, heads_q, DV)
    assert_close(out, reference.decode(q64, k64, v64, lens), "f32")


def test_decode_options(ctx, rng):
    heads_q = 4
    opts = {"window": 6, "softcap": 2.0, "alibi_slopes": [0.5, 0.25, 0.125, 0.0625],
            "sinks": [-np.inf, 0.5, 1.0, -0.5]}
    lens = np.array([1, CAPACITY, 20], np.int32)
    q, q64, ((kc, k64), (vc, v64)) = make(rng, 3, heads_q, 2, "bhsd")
    out = ctx.decode(q, kc, vc, lens, cache_layout="bhsd", scale=0.9, **opts)
    assert_close(out, reference.decode(q64, k64, v64, lens, scale=0.9, **opts), "f32")


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_decode_half(ctx, rng, dtype):
    lens = [CAPACITY, 11]
    q, q64, ((kc, k64), (vc, v64)) = make(rng, 2, 4, 2, dtype=dtype, dk=16, dv=16)
    out = ctx.decode(q, kc, vc, lens, dtype="bf16" if dtype == "bf16" else None)
    assert out.dtype == q.dtype
    assert_close(out, reference.decode(q64, k64, v64, lens), dtype)


def device_at(queue, host, offset):
    """A pyopencl copy of host starting `offset` elements into a larger
    buffer (0: a buffer of its own)."""
    flat = cla.empty(queue, host.size + offset + 3, host.dtype)
    view = flat[offset:offset + host.size].reshape(host.shape)
    view.set(np.ascontiguousarray(host))
    return view


# offset 0: the buffer itself; 1 element: a misaligned cache the call copies
# in and back, whose rows outside the appended ones must survive.
@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
def test_kv_append_then_decode(ctx, rng, offset, layout):
    batch, heads_q, heads_kv, n_new = 2, 6, 2, 3
    queue = ctx.queue
    q, q64, ((kc, k64), (vc, v64)) = make(rng, batch, heads_q, heads_kv, layout)
    k_new = rng.standard_normal((batch, n_new, heads_kv, DK)).astype(np.float32)
    v_new = rng.standard_normal((batch, n_new, heads_kv, DV)).astype(np.float32)
    pos = np.array([5, 0], np.int32)
    k_dev, v_dev = device_at(queue, kc, offset), device_at(queue, vc, offset)
    ev = ctx.kv_append(cla.to_device(queue, k_new), cla.to_device(queue, v_new),
                       cla.to_device(queue, pos), k_dev, v_dev, cache_layout=layout)
    assert ev in k_dev.events and ev in v_dev.events
    for b in range(batch):
        k64[b, pos[b]:pos[b] + n_new] = k_new[b]
        v64[b, pos[b]:pos[b] + n_new] = v_new[b]
    # The caches hold the new rows and nothing else changed.
    np.testing.assert_array_equal(reference.bshd(k_dev.get(), layout), k64.astype(np.float32))
    np.testing.assert_array_equal(reference.bshd(v_dev.get(), layout), v64.astype(np.float32))
    lens = pos + n_new
    out = poison(cla.empty(queue, (batch, heads_q, DV), np.float32))
    ctx.decode(cla.to_device(queue, q), k_dev, v_dev, cla.to_device(queue, lens),
               cache_layout=layout, out=out).wait()
    assert_close(out.get(), reference.decode(q64, k64, v64, lens), "f32")
