"""Misuse: a ValueError naming the argument before anything is enqueued,
or clattn.Error with the library's status name; never a crash."""

import re

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import clattn
from conftest import _device_spec, is_poisoned, poison

B, NQ, NKV, HQ, HKV, DK, DV = 2, 5, 9, 6, 2, 24, 16


@pytest.fixture
def arrays(rng):
    return {
        "q": rng.standard_normal((B, NQ, HQ, DK)).astype(np.float32),
        "k": rng.standard_normal((B, NKV, HKV, DK)).astype(np.float32),
        "v": rng.standard_normal((B, NKV, HKV, DV)).astype(np.float32),
    }


def with_(arrays, **changes):
    a = dict(arrays)
    a.update(changes)
    return a


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (case, arguments changed, keywords, the message's start): NumPy calls.
def numpy_cases(rng, a):
    return [
        ("q ndim", {"q": a["q"][0]}, {}, r"^q: expected 4 dimensions"),
        ("k not an array", {"k": a["k"].tolist()}, {}, r"^k: expected a NumPy array"),
        ("batch", {"k": f32(rng, 3, NKV, HKV, DK)}, {}, r"^k: batch size 3, but q's is 2"),
        ("kv heads", {"v": f32(rng, B, NKV, 3, DV)}, {}, r"^v: KV head count 3, but k's is 2"),
        ("key dims", {"k": f32(rng, B, NKV, HKV, 16)}, {}, r"^k: key head dim 16, but q's is 24"),
        ("key counts", {"v": f32(rng, B, NKV + 1, HKV, DV)}, {}, r"^v: key count 10, but k's is 9"),
        ("float64", {"q": a["q"].astype(np.float64)}, {}, r"^q: dtype float64"),
        ("uint16 without bf16", {"q": a["q"].view(np.uint16)[..., :DK]}, {}, r"^q: dtype uint16"),
        ("mixed dtypes", {"k": a["k"].astype(np.float16)}, {}, r"^q, k, v: the arrays must share"),
        ("dtype disagrees", {}, {"dtype": "bf16"}, r"^dtype: 'bf16' given, but the arrays are f32"),
        ("dtype unknown", {}, {"dtype": "f64"}, r"^dtype: 'f64' is not one of"),
        ("kv_lens length", {}, {"kv_lens": [1, 2, 3]}, r"^kv_lens: expected shape \(2,\)"),
        ("kv_lens floats", {}, {"kv_lens": [1.0, 2.0]}, r"^kv_lens: expected integers"),
        ("kv_lens past int32", {}, {"kv_lens": np.array([1, 2**40])}, r"^kv_lens: values outside int32"),
        ("alibi length", {}, {"alibi_slopes": [0.5] * (HQ - 1)}, r"^alibi_slopes: expected 6 values"),
        ("sinks length", {}, {"sinks": [0.5] * (HQ + 1)}, r"^sinks: expected 6 values"),
        ("q layout", {}, {"q_layout": "bsdh"}, r"^q_layout: 'bsdh' is not one of"),
        ("kv layout", {}, {"kv_layout": 3}, r"^kv_layout: 3 is not one of"),
        ("out shape", {}, {"out": np.empty((B, NQ, HQ, DK), np.float32)}, r"^out: expected shape"),
        ("out dtype", {}, {"out": np.empty((B, NQ, HQ, DV), np.float16)}, r"^out: expected a writable"),
        ("wait_for", {}, {"wait_for": []}, r"^wait_for: only calls on pyopencl arrays"),
        ("empty", {"q": f32(rng, B, 0, HQ, DK)}, {}, r"^q: empty array"),
        ("out not an array", {}, {"out": [0]}, r"^out: expected a NumPy array"),
        ("scale a list", {}, {"scale": [1.0]}, r"^scale: expected a number"),
        ("scale text", {}, {"scale": "a"}, r"^scale: expected a number"),
        ("softcap None", {}, {"softcap": None}, r"^softcap: expected a number"),
        ("alibi text", {}, {"alibi_slopes": "abc"}, r"^alibi_slopes: expected 6 numbers"),
        ("window past int32", {}, {"window": 2**40}, r"^window: expected an integer"),
        ("window a bool", {}, {"window": True}, r"^window: expected an integer"),
        ("sinks 2-D", {}, {"sinks": [[0.0] * 3] * 2}, r"^sinks: expected 6 values"),
    ]


def expect_value_error(case, message, call):
    try:
        call()
    except ValueError as e:
        assert re.search(message, str(e)), "%s: %r does not match %r" % (case, str(e), message)
    else:
        pytest.fail("%s: no ValueError" % case)


def test_numpy_value_errors(ctx, rng, arrays):
    for case, changes, kw, message in numpy_cases(rng, arrays):
        a = with_(arrays, **changes)
        expect_value_error(case, message, lambda: ctx.attention(a["q"], a["k"], a["v"], **kw))


def test_decode_value_errors(ctx, rng):
    q = f32(rng, B, HQ, DK)
    kc, vc = f32(rng, B, 11, HKV, DK), f32(rng, B, 11, HKV, DV)
    cases = [
        ((q[None], kc, vc, [1, 2]), {}, r"^q: expected 3 dimensions"),
        ((q, kc, vc, None), {}, r"^lens: decode needs"),
        ((q, kc, vc, [1]), {}, r"^lens: expected shape \(2,\)"),
        ((q, kc, f32(rng, B, 12, HKV, DV), [1, 2]), {}, r"^v_cache: cache capacity 12, but k_cache's is 11"),
        ((q, kc, vc, [1, 2]), {"cache_layout": "sbhd"}, r"^cache_layout: 'sbhd'"),
        ((q, kc, vc, [1, 2]), {"sinks": [0.0]}, r"^sinks: expected 6 values"),
    ]
    for args, kw, message in cases:
        expect_value_error(message, message, lambda: ctx.decode(*args, **kw))


def test_device_value_errors_enqueue_nothing(ctx, rng, arrays):
    queue = ctx.queue
    q, k, v = (cla.to_device(queue, arrays[n]) for n in ("q", "k", "v"))
    out = poison(cla.empty(queue, (B, NQ, HQ, DV), np.float32))
    # A misaligned q would be copied: the copy must not be enqueued either.
    whole = cla.empty(queue, q.size + 1, np.float32)
    q_misaligned = whole[1:].reshape(q.shape)
    q_misaligned.set(arrays["q"])
    strided = cla.to_device(queue, np.repeat(arrays["k"], 2, axis=1))[:, ::2]
    assert not strided.flags.c_contiguous
    cases = [
        ((q, k, arrays["v"]), {"out": out}, r"^q, k, v, out: pass all NumPy arrays or all"),
        ((q, strided, v), {"out": out}, r"^k: a strided pyopencl array is not taken"),
        ((q, k, v), {}, r"^out: a call on pyopencl arrays writes into out="),
        ((q_misaligned, k, v), {"out": cla.empty(queue, (B, NQ, HQ, DK), np.float32)},
         r"^out: expected shape"),
        ((q_misaligned, k, v), {"out": cla.empty(queue, (B, NQ, HQ, DV), np.float16)},
         r"^out: dtype float16"),
        ((q, k, v), {"out": out, "kv_lens": cla.to_device(queue, np.array([1, 2], np.int64))},
         r"^kv_lens: expected a pyopencl array of int32"),
        ((q, k, v), {"out": out, "wait_for": [None]}, r"^wait_for: expected pyopencl events"),
    ]
    for args, kw, message in cases:
        expect_value_error(message, message, lambda: ctx.attention(*args, **kw))
        queue.finish()
        assert is_poisoned(out), message
    with pytest.raises(ValueError, match=r"^k_cache: kv_append writes a device cache"):
        ctx.kv_append(k, v, [0, 0], arrays["k"], v)
    k_new = cla.to_device(queue, arrays["k"][:1])
    v_new = cla.to_device(queue, arrays["v"][:1])
    pos = cla.to_device(queue, np.zeros(B, np.int32))
    with pytest.raises(ValueError, match=r"^k_new: expected shape \(2, 9, 2, 24\), got \(1,"):
        ctx.kv_append(k_new, v_new, pos, k, v)
    with pytest.raises(ValueError, match=r"^pos: expected shape \(2,\)"):
        ctx.kv_append(k, v, pos[:1], k, v)


@pytest.mark.parametrize("kw,status,names", [
    ({"window": -1}, "CLATTN_ERR_INVALID_ARG", "window"),
    ({"softcap": -2.0}, "CLATTN_ERR_INVALID_ARG", "softcap"),
    ({"sinks": [0.0, np.nan, 0.0, 0.0, 0.0, 0.0]}, "CLATTN_ERR_INVALID_ARG", "sink"),
    ({"alibi_slopes": [0.0, np.inf, 0.0, 0.0, 0.0, 0.0]}, "CLATTN_ERR_INVALID_ARG", "slope"),
    ({"params": "variant=7"}, "CLATTN_ERR_INVALID_ARG", "variant"),
    ({"params": "no_such_tunable=1"}, "CLATTN_ERR_INVALID_ARG", "no_such_tunable"),
])
def test_library_errors(ctx, arrays, kw, status, names):
    queue = ctx.queue
    q, k, v = (cla.to_device(queue, arrays[n]) for n in ("q", "k", "v"))
    out = poison(cla.empty(queue, (B, NQ, HQ, DV), np.float32))
    with pytest.raises(clattn.Error) as info:
        ctx.attention(q, k, v, out=out, **kw)
    assert info.value.status == status
    assert info.value.code == getattr(clattn.lib, status)
    assert names in str(info.value)
    queue.finish()
    assert is_poisoned(out)


def test_heads_not_a_multiple(ctx, rng):
    q, k = f32(rng, 1, 3, 3, 8), f32(rng, 1, 4, 2, 8)
    with pytest.raises(clattn.Error) as info:
        ctx.attention(q, k, k)
    assert info.value.status == "CLATTN_ERR_SHAPE"


def test_no_such_device():
    with pytest.raises(clattn.Error) as info:
        clattn.Context("no-such-device-anywhere")
    assert info.value.status == "CLATTN_ERR_NO_DEVICE"


def test_context_arguments(ctx):
    with pytest.raises(ValueError, match=r"^device: give a device or a queue, not both"):
        clattn.Context(_device_spec(), queue=ctx.queue)
    with pytest.raises(ValueError, match=r"^queue: expected a pyopencl.CommandQueue"):
        clattn.Context(queue=ctx.cl_context)
    with pytest.raises(ValueError, match=r"^device: expected an index or a name"):
        clattn.Context(device=1.5)


def test_closed_context(rng, arrays):
    closed = clattn.Context(_device_spec())
    queue = closed.queue
    q, k, v = (cla.to_device(queue, arrays[n]) for n in ("q", "k", "v"))
    out = poison(cla.empty(queue, (B, NQ, HQ, DV), np.float32))
    closed.close()
    closed.close()  # idempotent
    for call in (lambda: closed.attention(arrays["q"], arrays["k"], arrays["v"]),
                 lambda: closed.attention(q, k, v, out=out)):
        with pytest.raises(clattn.Error) as info:
            call()
        assert info.value.status == "CLATTN_ERR_MISUSE"
    queue.finish()
    assert is_poisoned(out)


def test_device_lengths_in_a_numpy_call(ctx, arrays):
    # Host lengths may join a call on pyopencl arrays (they are uploaded),
    # but device lengths do not join a NumPy call.
    lens = cla.to_device(ctx.queue, np.array([1, 2], np.int32))
    with pytest.raises(ValueError, match=r"^q, k, v, kv_lens: pass all NumPy arrays or all"):
        ctx.attention(arrays["q"], arrays["k"], arrays["v"], kv_lens=lens)


def test_a_repeated_call_is_checked_as_a_first_one(ctx, arrays):
    # The binding reuses a call's description by its arguments
    # (Context._described): arguments equal to an accepted call's under ==
    # (True == 1) or by their bytes (a 2-D sinks array) must still be
    # refused as they would be on a fresh context.
    q, k, v = arrays["q"], arrays["k"], arrays["v"]
    ctx.attention(q, k, v, window=1)
    with pytest.raises(ValueError, match=r"^window: expected an integer"):
        ctx.attention(q, k, v, window=True)
    sinks = np.arange(HQ, dtype=np.float32)
    ctx.attention(q, k, v, sinks=sinks)
    with pytest.raises(ValueError, match=r"^sinks: expected 6 values"):
        ctx.attention(q, k, v, sinks=sinks.reshape(2, 3))


def test_description_owners_outlive_the_memo(ctx):
    # What a description points at (params text, per-head arrays) lives in
    # the keep list _described returns, which the call holds until the C
    # call returns: neither an unhashable key (no memo) nor the memo's
    # clearing when full may free it first.
    import gc
    import weakref

    owners = []

    def build(keep):
        owner = np.ones(4, np.float32)
        keep.append(owner)
        owners.append(weakref.ref(owner))
        return object()

    _, keep = ctx._described(("unhashable", [1]), build)
    gc.collect()
    assert owners[-1]() is not None
    del keep
    gc.collect()
    assert owners[-1]() is None
    _, keep = ctx._described(("first",), build)
    first = owners[-1]
    for i in range(2 * ctx._DESCS_KEPT):
        ctx._described(("filler", i), build)
    gc.collect()
    assert first() is not None, "the memo's clearing freed a held description's owner"
    del keep


def test_device_misuse_named(ctx, arrays):
    queue = ctx.queue
    q, k, v = (cla.to_device(queue, arrays[n]) for n in ("q", "k", "v"))
    out = cla.empty(queue, (B, NQ, HQ, DV), np.float32)
    event = cl.UserEvent(ctx.cl_context)
    with pytest.raises(ValueError, match=r"^wait_for: expected a list of pyopencl events"):
        ctx.attention(q, k, v, out=out, wait_for=event)
    event.set_status(cl.command_execution_status.COMPLETE)
    pos = cla.to_device(queue, np.zeros(B, np.int32))
    with pytest.raises(ValueError, match=r"^heads_q: expected an integer in \[1,"):
        ctx.kv_append(k, v, pos, k, v, heads_q=0)
    with pytest.raises(ValueError, match=r"^heads_q: expected an integer in \[1,"):
        ctx.kv_append(k, v, pos, k, v, heads_q="a")
