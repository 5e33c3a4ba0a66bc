"""Talking-heads attention from Python: prefill, decode and append against
the float64 reference (reference_th.py), on NumPy and pyopencl arrays, and
the misuse that must be refused before anything is enqueued.

Three head counts that all differ (heads_k 3 key heads, heads 5 logit
heads, heads_v 2 value heads) and sizes that divide no tile; few distinct
kernel configurations, since each is a program compiled on first use."""

import numpy as np
import pyopencl.array as cla
import pytest

import clattn
import reference_th
from conftest import poison

B, NQ, NKV, HK, H, HV, DK, DV = 2, 13, 21, 3, 5, 2, 16, 8
CAPACITY = 19

# As the C tests' bar (host/src/base/tolerance.h) for the output's rounding
# and float32 arithmetic, here as absolute and relative tolerances for
# inputs and outputs of unit scale.
TOLERANCE = {"f32": 1e-4, "f16": 2e-3}


def assert_close(got, want, dtype):
    got = np.asarray(got, dtype=np.float64)
    assert np.isfinite(got).all(), "non-finite output (an unwritten row?)"
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def inputs(rng, n_q=NQ, n_kv=NKV, dtype=np.float32):
    q = rng.standard_normal((B, n_q, HK, DK)).astype(dtype)
    k = rng.standard_normal((B, n_kv, HK, DK)).astype(dtype)
    v = rng.standard_normal((B, n_kv, HV, DV)).astype(dtype)
    return q, k, v


def mixing(rng):
    p_l = (rng.standard_normal((HK, H)) / np.sqrt(HK)).astype(np.float32)
    p_w = (rng.standard_normal((H, HV)) / np.sqrt(H)).astype(np.float32)
    return p_l, p_w


# (causal, kv_lens, window, scale): sequence 1 of the causal case has fewer
# valid keys (9) than queries (13), so its first queries see no key (zeros).
PREFILL_CASES = {
    "plain": (False, None, 0, None),
    "kv_lens_scale": (False, [21, 9], 0, 0.3),
    "causal": (True, [21, 9], 0, None),
    "causal_window": (True, [17, 21], 4, None),
}


@pytest.mark.parametrize("case", sorted(PREFILL_CASES))
def test_prefill_numpy(ctx, rng, case):
    causal, kv_lens, window, scale = PREFILL_CASES[case]
    q, k, v = inputs(rng)
    p_l, p_w = mixing(rng)
    lens = None if kv_lens is None else np.array(kv_lens, np.int32)
    out = poison(np.empty((B, NQ, HV, DV), np.float32))
    got = ctx.talking_heads(q, k, v, p_l, p_w, causal=causal, scale=scale, kv_lens=lens,
                            window=window, out=out)
    assert got is out
    want = reference_th.talking_heads(q, k, v, p_l, p_w, causal=causal, scale=scale,
                                      kv_lens=lens, window=window)
    assert_close(got, want, "f32")
    if case == "causal":
        # the queries before sequence 1's first key: zeros, not NaN
        assert (got[1, :NQ - 9] == 0).all()


def test_prefill_f16_bhsd(ctx, rng):
    q, k, v = inputs(rng, dtype=np.float16)
    p_l, p_w = mixing(rng)
    lens = np.array([21, 9], np.int32)
    # the kernels read [batch, heads, seq, dim]: BHSD copies of the BSHD arrays
    qt, kt, vt = (np.ascontiguousarray(a.transpose(0, 2, 1, 3)) for a in (q, k, v))
    got = ctx.talking_heads(qt, kt, vt, p_l, p_w, causal=True, kv_lens=lens,
                            q_layout="bhsd", kv_layout="bhsd")
    assert got.dtype == np.float16 and got.shape == (B, HV, NQ, DV)
    want = reference_th.talking_heads(q, k, v, p_l, p_w, causal=True, kv_lens=lens)
    assert_close(got.transpose(0, 2, 1, 3), want, "f16")


def test_prefill_pyopencl(ctx, rng):
    q, k, v = inputs(rng)
    p_l, p_w = mixing(rng)
    dev = [cla.to_device(ctx.queue, a) for a in (q, k, v, p_l, p_w)]
    out = poison(cla.empty(ctx.queue, (B, NQ, HV, DV), np.float32))
    event = ctx.talking_heads(*dev, out=out, wait_for=[])
    event.wait()
    assert event in out.events
    assert_close(out.get(), reference_th.talking_heads(q, k, v, p_l, p_w), "f32")


def test_decode_after_appends_pyopencl(ctx, rng):
    """A prompt of 5 rows appended to NaN-filled device caches, then one
    more row per sequence (sequence 1 overwriting its row 2), then decode
    over the valid rows: the NaN rows past them are never read."""
    k_cache = cla.empty(ctx.queue, (B, CAPACITY, HK, DK), np.float32)
    v_cache = cla.empty(ctx.queue, (B, CAPACITY, HV, DV), np.float32)
    poison(k_cache)
    poison(v_cache)
    k_host = np.zeros(k_cache.shape)
    v_host = np.zeros(v_cache.shape)
    p_l, p_w = mixing(rng)
    for n_new, pos in ((5, [0, 0]), (1, [5, 2])):
        k_new = rng.standard_normal((B, n_new, HK, DK)).astype(np.float32)
        v_new = rng.standard_normal((B, n_new, HV, DV)).astype(np.float32)
        event = ctx.talking_heads_append(cla.to_device(ctx.queue, k_new),
                                         cla.to_device(ctx.queue, v_new),
                                         cla.to_device(ctx.queue, np.array(pos, np.int32)),
                                         k_cache, v_cache, heads=H)
        assert event in k_cache.events and event in v_cache.events
        for b in range(B):
            k_host[b, pos[b]:pos[b] + n_new] = k_new[b]
            v_host[b, pos[b]:pos[b] + n_new] = v_new[b]
    lens = np.array([6, 3], np.int32)
    written = np.zeros((B, CAPACITY), bool)
    written[0, :6] = written[1, :5] = True
    kc, vc = k_cache.get(), v_cache.get()
    np.testing.assert_array_equal(kc[written], k_host[written])
    np.testing.assert_array_equal(vc[written], v_host[written])
    assert np.isnan(kc[~written]).all() and np.isnan(vc[~written]).all()

    q = rng.standard_normal((B, HK, DK)).astype(np.float32)
    out = poison(cla.empty(ctx.queue, (B, HV, DV), np.float32))
    event = ctx.talking_heads_decode(cla.to_device(ctx.queue, q), k_cache, v_cache,
                                     cla.to_device(ctx.queue, p_l),
                                     cla.to_device(ctx.queue, p_w),
                                     cla.to_device(ctx.queue, lens), out=out)
    event.wait()
    want = reference_th.talking_heads_decode(q, k_host, v_host, p_l, p_w, lens)
    assert_close(out.get(), want, "f32")


def test_decode_numpy_window_bhsd(ctx, rng):
    q = rng.standard_normal((B, HK, DK)).astype(np.float32)
    k_cache = rng.standard_normal((B, CAPACITY, HK, DK)).astype(np.float32)
    v_cache = rng.standard_normal((B, CAPACITY, HV, DV)).astype(np.float32)
    p_l, p_w = mixing(rng)
    lens = np.array([CAPACITY, 4], np.int32)
    kt, vt = (np.ascontiguousarray(a.transpose(0, 2, 1, 3)) for a in (k_cache, v_cache))
    got = ctx.talking_heads_decode(q, kt, vt, p_l.astype(np.float64), p_w, lens, window=3,
                                   cache_layout="bhsd")
    assert got.shape == (B, HV, DV)
    want = reference_th.talking_heads_decode(q, k_cache, v_cache, p_l, p_w, lens, window=3)
    assert_close(got, want, "f32")


# ------------------------------------------------------------------ misuse


def test_misuse_is_refused_before_enqueue(ctx, rng):
    q, k, v = inputs(rng)
    p_l, p_w = mixing(rng)
    with pytest.raises(ValueError, match="^p_l: expected shape"):
        ctx.talking_heads(q, k, v, p_l[:2], p_w)
    with pytest.raises(ValueError, match="^p_l: expected 2 dimensions"):
        ctx.talking_heads(q, k, v, p_l[0], p_w)
    with pytest.raises(ValueError, match="^p_w: expected shape"):
        ctx.talking_heads(q, k, v, p_l, p_w[:, :1])
    with pytest.raises(ValueError, match="^p_l: expected a float32 matrix"):
        ctx.talking_heads(q, k, v, p_l.astype(np.int32), p_w)
    with pytest.raises(ValueError, match="query and key head count"):
        ctx.talking_heads(q, k[:, :, :2], v, p_l, p_w)
    with pytest.raises(ValueError, match="^kv_lens"):
        ctx.talking_heads(q, k, v, p_l, p_w, kv_lens=np.array([3], np.int32))
    with pytest.raises(ValueError, match="^q_layout"):
        ctx.talking_heads(q, k, v, p_l, p_w, q_layout="bsdh")
    with pytest.raises(ValueError, match="not a mix"):
        ctx.talking_heads(q, k, v, cla.to_device(ctx.queue, p_l), p_w)
    dev = [cla.to_device(ctx.queue, a) for a in (q, k, v, p_w)]
    with pytest.raises(ValueError, match="^p_l: a pyopencl mixing matrix must be float32"):
        ctx.talking_heads(*dev[:3], cla.to_device(ctx.queue, p_l.astype(np.float64)), dev[3],
                          out=cla.empty(ctx.queue, (B, NQ, HV, DV), np.float32))
    with pytest.raises(ValueError, match="^out"):
        ctx.talking_heads(*dev[:3], cla.to_device(ctx.queue, p_l), dev[3])
    # the attention options other than the window are not keywords here
    with pytest.raises(TypeError):
        ctx.talking_heads(q, k, v, p_l, p_w, softcap=30.0)


def test_library_refusals_are_errors(ctx, rng):
    q, k, v = inputs(rng)
    too_many = np.ones((HK, 33), np.float32)  # CLATTN_TH_MAX_HEADS is 32
    with pytest.raises(clattn.Error) as e:
        ctx.talking_heads(q, k, v, too_many, np.ones((too_many.shape[1], HV), np.float32))
    assert e.value.status == "CLATTN_ERR_UNSUPPORTED" and "heads (33)" in str(e.value)
    p_l, p_w = mixing(rng)
    with pytest.raises(clattn.Error) as e:
        ctx.talking_heads(q, k, v, p_l, p_w, window=-1)
    assert e.value.status == "CLATTN_ERR_INVALID_ARG" and "window" in str(e.value)


def test_decode_and_append_misuse(ctx, rng):
    p_l, p_w = mixing(rng)
    q = np.zeros((B, HK, DK), np.float32)
    k_cache = np.zeros((B, CAPACITY, HK, DK), np.float32)
    v_cache = np.zeros((B, CAPACITY, HV, DV), np.float32)
    with pytest.raises(ValueError, match="^lens"):
        ctx.talking_heads_decode(q, k_cache, v_cache, p_l, p_w, None)
    with pytest.raises(ValueError, match="^p_w: expected shape"):
        ctx.talking_heads_decode(q, k_cache, v_cache, p_l, p_w.T, np.array([1, 1], np.int32))
    with pytest.raises(ValueError, match="^k_cache: .*pyopencl"):
        ctx.talking_heads_append(k_cache[:, :1], v_cache[:, :1], np.zeros(B, np.int32),
                                 k_cache, v_cache)
    kd = cla.to_device(ctx.queue, k_cache)
    vd = cla.to_device(ctx.queue, v_cache)
    k_new = cla.to_device(ctx.queue, np.ascontiguousarray(k_cache[:, :2]))
    v_new = cla.to_device(ctx.queue, np.ascontiguousarray(v_cache[:, :2]))
    with pytest.raises(ValueError, match="^pos"):
        ctx.talking_heads_append(k_new, v_new, None, kd, vd)
    with pytest.raises(ValueError, match="^v_new: expected shape"):
        ctx.talking_heads_append(k_new, k_new,
                                 cla.to_device(ctx.queue, np.zeros(B, np.int32)), kd, vd)
