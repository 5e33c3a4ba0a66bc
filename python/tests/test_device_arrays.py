"""Calls on pyopencl arrays: zero copy, offsets, events, wait_for, and an
application's own OpenCL context."""

import gc

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import clattn
import reference
from conftest import assert_close, poison

B, NQ, NKV, HQ, HKV, DK, DV = 2, 7, 33, 6, 2, 24, 16
OUT_SHAPE = (B, NQ, HQ, DV)


def host_qkv(rng):
    return [rng.standard_normal(s).astype(np.float32)
            for s in ((B, NQ, HQ, DK), (B, NKV, HKV, DK), (B, NKV, HKV, DV))]


def want(q, k, v):
    return reference.attention(q, k, v, causal=True)


def to_device(queue, *arrays):
    return [cla.to_device(queue, a) for a in arrays]


def read_buffer(queue, buf, shape, offset_bytes=0):
    """The bytes of a buffer, read on its own (not through an Array)."""
    host = np.empty(shape, np.float32)
    cl.enqueue_copy(queue, host, buf, src_offset=offset_bytes, is_blocking=True)
    return host


def test_zero_copy_writes_out(ctx, rng):
    q, k, v = host_qkv(rng)
    out = poison(cla.empty(ctx.queue, OUT_SHAPE, np.float32))
    buffer = out.base_data
    ev = ctx.attention(*to_device(ctx.queue, q, k, v), causal=True, out=out)
    assert isinstance(ev, cl.Event)
    assert ev in out.events
    ev.wait()
    assert out.base_data is buffer
    # The result is in out's own buffer: no copy was made elsewhere.
    assert_close(read_buffer(ctx.queue, buffer, OUT_SHAPE), want(q, k, v), "f32")


GUARD = 4321.0


def guarded(queue, host, offset):
    """host placed `offset` elements into a buffer whose other elements
    hold GUARD; returns (view, whole)."""
    whole = cla.to_device(queue, np.full(host.size + offset + 67, GUARD, np.float32))
    view = whole[offset:offset + host.size].reshape(host.shape)
    view.set(np.ascontiguousarray(host))
    return view, whole


def guards_intact(whole, view):
    host = whole.get()
    start = view.offset // 4
    return bool((host[:start] == GUARD).all() and (host[start + view.size:] == GUARD).all())


# An aligned offset becomes a sub-buffer; a misaligned one a temporary copy.
@pytest.mark.parametrize("where", ["inputs", "out", "both"])
@pytest.mark.parametrize("alignment", ["aligned", "misaligned"])
def test_offsets(ctx, rng, where, alignment):
    offset = ctx.base_align // 4 if alignment == "aligned" else 1
    q, k, v = host_qkv(rng)
    queue = ctx.queue
    in_offset = offset if where in ("inputs", "both") else 0
    out_offset = offset if where in ("out", "both") else 0
    placed = [guarded(queue, a, in_offset) for a in (q, k, v)]
    out, out_whole = guarded(queue, np.full(OUT_SHAPE, np.nan, np.float32), out_offset)
    assert out.offset == 4 * out_offset and placed[0][0].offset == 4 * in_offset
    ev = ctx.attention(*(view for view, _ in placed), causal=True, out=out)
    ev.wait()
    assert_close(out.get(), want(q, k, v), "f32")
    assert guards_intact(out_whole, out)
    for (view, whole), host in zip(placed, (q, k, v)):
        assert guards_intact(whole, view)
        np.testing.assert_array_equal(view.get(), host)


@pytest.mark.parametrize("alignment", ["aligned", "misaligned"])
def test_pool_allocated_arrays_at_offsets(ctx, rng, alignment):
    # A MemoryPool hands out PooledBuffers, which have no get_sub_region.
    import pyopencl.tools as cltools

    pool = cltools.MemoryPool(cltools.ImmediateAllocator(ctx.queue))
    offset = ctx.base_align // 4 if alignment == "aligned" else 1
    q, k, v = host_qkv(rng)
    views = []
    for host in (q, k, v, np.full(OUT_SHAPE, np.nan, np.float32)):
        whole = cla.empty(ctx.queue, host.size + offset, np.float32, allocator=pool)
        view = whole[offset:].reshape(host.shape)
        view.set(np.ascontiguousarray(host))
        views.append(view)
    ctx.attention(*views[:3], causal=True, out=views[3]).wait()
    assert_close(views[3].get(), want(q, k, v), "f32")


def test_event_owned(ctx, rng, monkeypatch):
    """The call's event is the reference the C call gave, taken without a
    second retain, and outlives every Python-side temporary."""
    seen = {}
    original = cl.Event.from_int_ptr

    def spy(ptr, retain=True):
        # Count once the command is complete, so the runtime's own
        # references have settled, then wrap as the package does.
        probe = original(ptr, retain=True)
        probe.wait()
        ctx.queue.finish()
        seen["given"] = probe.get_info(cl.event_info.REFERENCE_COUNT) - 1
        seen["retain"] = retain
        event = original(ptr, retain=retain)
        seen["held"] = event.get_info(cl.event_info.REFERENCE_COUNT) - 1  # probe still alive
        return event

    def run():
        q, k, v = host_qkv(rng)
        out = poison(cla.empty(ctx.queue, OUT_SHAPE, np.float32))
        # A misaligned input makes temporaries too.
        qv, _ = guarded(ctx.queue, q, 1)
        monkeypatch.setattr(cl.Event, "from_int_ptr", spy)
        ev = ctx.attention(qv, *to_device(ctx.queue, k, v), causal=True, out=out)
        monkeypatch.undo()
        return ev

    ev = run()
    gc.collect()
    assert seen["retain"] is False
    assert seen["held"] == seen["given"], "the event was retained again (a leak)"
    ev.wait()
    ev.wait()
    assert ev.command_execution_status == cl.command_execution_status.COMPLETE
    # Dropping the last Python handle releases exactly one reference.
    probe = cl.Event.from_int_ptr(ev.int_ptr, retain=True)
    before = probe.get_info(cl.event_info.REFERENCE_COUNT)
    del ev
    gc.collect()
    assert probe.get_info(cl.event_info.REFERENCE_COUNT) == before - 1


def test_wait_for_user_event(ctx, rng):
    q, k, v = host_qkv(rng)
    args = to_device(ctx.queue, q, k, v)
    out = poison(cla.empty(ctx.queue, OUT_SHAPE, np.float32))
    gate = cl.UserEvent(ctx.cl_context)
    ev = ctx.attention(*args, causal=True, out=out, wait_for=[gate])
    # Read on a queue of its own: the call's queue is held by the gate.
    side = cl.CommandQueue(ctx.cl_context, ctx.device)
    assert np.isnan(read_buffer(side, out.base_data, OUT_SHAPE)).all()
    assert ev.command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    ev.wait()
    assert_close(out.get(), want(q, k, v), "f32")


def test_application_queue(ctx, rng):
    app_context = cl.Context([ctx.device])
    app_queue = cl.CommandQueue(app_context)
    q, k, v = host_qkv(rng)
    with clattn.Context(queue=app_queue) as shared:
        assert shared.cl_context.int_ptr == app_context.int_ptr
        assert shared.queue.int_ptr == app_queue.int_ptr
        out = poison(cla.empty(app_queue, OUT_SHAPE, np.float32))
        shared.attention(*to_device(app_queue, q, k, v), causal=True, out=out).wait()
        assert_close(out.get(), want(q, k, v), "f32")
        # An array of another OpenCL context (the session's) is refused by name.
        foreign = cla.to_device(ctx.queue, q)
        with pytest.raises(ValueError, match=r"^q: .*another OpenCL context"):
            shared.attention(foreign, *to_device(app_queue, k, v), out=out)


def test_host_lengths_in_a_device_call(ctx, rng):
    # kv_lens as a list or NumPy array beside pyopencl q, k, v: uploaded.
    queue = ctx.queue
    q, k, v = host_qkv(rng)
    qd, kd, vd = to_device(queue, q, k, v)
    for lens in ([33, 5], np.array([9, 33], np.int64)):
        out = poison(cla.empty(queue, (B, NQ, HQ, DV), np.float32))
        ctx.attention(qd, kd, vd, causal=True, kv_lens=lens, out=out).wait()
        assert_close(out.get(), reference.attention(q, k, v, causal=True, kv_lens=lens), "f32")
