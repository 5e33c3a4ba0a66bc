"""The layers (GQA, talking-heads, Optimised, Efficient, Super, SwitchHead)
against the NumPy float64 references of reference_layers.py: a prefill
without a cache, a prefill into a cache followed by decode steps (equal to
the whole sequence's causal result), one layer on pyopencl arrays with
offsets and events, and misuse.

Shapes: d_model 32-36, 9 positions (a size that divides no tile), batch
2, head widths 6, 8 and 9, GQA, MQA (with every attention option) and
three distinct talking-heads head counts; one configuration per layer so
PoCL compiles few programs."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import clattn
import reference_layers as R
from conftest import is_poisoned, poison

BATCH, N, PROMPT = 2, 9, 5
TOL = dict(rtol=1e-4, atol=1e-4)


def _weights(rng, *shape, fan_in):
    return (rng.standard_normal(shape) * (1.7 / np.sqrt(fan_in))).astype(np.float32)


def make_gqa(ctx, rng):
    D, hq, hkv, dk, dv = 32, 4, 2, 8, 6
    w = [_weights(rng, D, hq * dk, fan_in=D), _weights(rng, D, hkv * dk, fan_in=D),
         _weights(rng, D, hkv * dv, fan_in=D), _weights(rng, hq * dv, D, fan_in=hq * dv)]
    layer = clattn.GQALayer(ctx, *w, heads_q=hq, heads_kv=hkv)
    return layer, lambda x, causal: R.gqa_layer(x, *w, heads_q=hq, heads_kv=hkv,
                                                causal=causal)


def make_gqa_options(ctx, rng):
    # MQA with every attention option the layer takes, together.
    D, hq, dk = 32, 4, 8
    w = [_weights(rng, D, hq * dk, fan_in=D), _weights(rng, D, dk, fan_in=D),
         _weights(rng, D, dk, fan_in=D), _weights(rng, hq * dk, D, fan_in=hq * dk)]
    opts = dict(scale=0.3, window=4, softcap=2.5,
                alibi_slopes=np.array([0.5, 0.25, 0.125, 0.0625], np.float32),
                sinks=np.array([0.3, -np.inf, 1.0, -0.5], np.float32))
    layer = clattn.GQALayer(ctx, *w, heads_q=hq, heads_kv=1, **opts)
    return layer, lambda x, causal: R.gqa_layer(x, *w, heads_q=hq, heads_kv=1,
                                                causal=causal, **opts)


def make_talking_heads(ctx, rng):
    D, hk, h, hv, dk, dv = 32, 2, 3, 4, 8, 6
    w = [_weights(rng, D, hk * dk, fan_in=D), _weights(rng, D, hk * dk, fan_in=D),
         _weights(rng, D, hv * dv, fan_in=D), _weights(rng, hv * dv, D, fan_in=hv * dv),
         _weights(rng, hk, h, fan_in=hk), _weights(rng, h, hv, fan_in=h)]
    layer = clattn.TalkingHeadsLayer(ctx, *w)  # head counts from p_l and p_w
    return layer, lambda x, causal: R.talking_heads_layer(x, *w, causal=causal)


def make_optimised(ctx, rng):
    D, h = 36, 4
    w_q, w_k, w_o = (_weights(rng, D, D, fan_in=D) for _ in range(3))
    layer = clattn.OptimisedLayer(ctx, w_q, w_k, w_o, heads=h)
    return layer, lambda x, causal: R.hosseini_layer("optimised", x, w_q, w_o, w_k=w_k,
                                                     heads=h, causal=causal)


def make_efficient(ctx, rng):
    D, h = 36, 4
    w_q, w_o = (_weights(rng, D, D, fan_in=D) for _ in range(2))
    layer = clattn.EfficientLayer(ctx, w_q, w_o, heads=h)
    return layer, lambda x, causal: R.hosseini_layer("efficient", x, w_q, w_o, heads=h,
                                                     causal=causal)


def make_super(ctx, rng, causal=True):
    D, h, max_len = 36, 4, 12
    w_q, w_o = (_weights(rng, D, D, fan_in=D) for _ in range(2))
    w_a = _weights(rng, max_len, max_len, fan_in=max_len)
    given_w_a = w_a.copy()
    if causal:
        # Causal calls must never read W_a's upper triangle.
        given_w_a[~np.tri(max_len, dtype=bool)] = np.nan
    layer = clattn.SuperLayer(ctx, w_q, given_w_a, w_o, heads=h)  # max_len from w_a
    return layer, lambda x, causal: R.hosseini_layer("super", x, w_q, w_o, w_a=w_a, heads=h,
                                                     causal=causal)


def make_switchhead(ctx, rng):
    D, H, dh, E, k = 32, 2, 8, 4, 2
    w = [_weights(rng, D, H * dh, fan_in=D), _weights(rng, D, H * dh, fan_in=D),
         _weights(rng, H, E, D, dh, fan_in=D), _weights(rng, H, E, dh, D, fan_in=dh),
         _weights(rng, D, H * E, fan_in=D), _weights(rng, D, H * E, fan_in=D)]
    layer = clattn.SwitchHeadLayer(ctx, *w, topk=k)  # heads, experts, head_dim from w_v
    return layer, lambda x, causal: R.switchhead_layer(x, *w, topk=k, causal=causal)


MAKERS = {"gqa": make_gqa, "gqa_options": make_gqa_options,
          "talking_heads": make_talking_heads, "optimised": make_optimised,
          "efficient": make_efficient, "super": make_super, "switchhead": make_switchhead}


def _x(rng, layer, n=N, batch=BATCH):
    return rng.standard_normal((batch, n, layer.d_model)).astype(np.float32)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_prefill_without_cache(ctx, rng, name):
    """One causal prefill over the n positions against the reference."""
    layer, ref = MAKERS[name](ctx, rng)
    with layer:
        x = _x(rng, layer)
        out = poison(np.empty_like(x))
        y = layer.prefill(x, out=out)
        assert y is out
        np.testing.assert_allclose(y, ref(x, True), **TOL)


@pytest.mark.parametrize("name", ["gqa", "super"])
def test_prefill_not_causal(ctx, rng, name):
    """A non-causal prefill: every position sees all n (Super mixes all n
    rows of W_a's first n columns)."""
    layer, ref = MAKERS[name](ctx, rng) if name == "gqa" else make_super(ctx, rng, False)
    with layer:
        x = _x(rng, layer)
        y = layer.prefill(x, causal=False, out=poison(np.empty_like(x)))
        np.testing.assert_allclose(y, ref(x, False), **TOL)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_cache_prefill_then_decode(ctx, rng, name):
    """A prompt prefilled into a cache, then one decode step per remaining
    position, equals the whole sequence's causal prefill; after reset(), one
    prefill of the whole sequence through the cache does too."""
    layer, ref = MAKERS[name](ctx, rng)
    with layer:
        x = _x(rng, layer)
        want = ref(x, True)
        cache = layer.cache(BATCH, N)
        assert len(cache) == 0
        y = layer.prefill(x[:, :PROMPT], cache=cache)
        np.testing.assert_allclose(y, want[:, :PROMPT], **TOL, err_msg="prompt")
        assert len(cache) == PROMPT
        for t in range(PROMPT, N):
            y = layer.decode(x[:, t], cache, out=poison(np.empty((BATCH, layer.d_model),
                                                                 np.float32)))
            np.testing.assert_allclose(y, want[:, t], **TOL, err_msg="decode step %d" % t)
            assert len(cache) == t + 1
        cache.reset()
        assert len(cache) == 0
        np.testing.assert_allclose(layer.prefill(x, cache=cache), want, **TOL,
                                   err_msg="after reset")
        cache.close()


def test_pyopencl_arrays_with_offsets_and_events(ctx, rng):
    """The GQA layer on pyopencl arrays: prefill and decode write out= and
    return their owned events; decode rows are views at offsets of one
    array; a call waits for its wait_for (a user event holds it back)."""
    layer, ref = make_gqa(ctx, rng)
    q = ctx.queue
    x = _x(rng, layer)
    want = ref(x, True)
    steps = N - PROMPT
    with layer, layer.cache(BATCH, N) as cache:
        x_pre = cla.to_device(q, np.ascontiguousarray(x[:, :PROMPT]))
        y_pre = cla.to_device(q, poison(np.empty((BATCH, PROMPT, layer.d_model), np.float32)))
        gate = cl.UserEvent(ctx.cl_context)
        ev = layer.prefill(x_pre, cache=cache, out=y_pre, wait_for=[gate])
        assert isinstance(ev, cl.Event) and ev in y_pre.events
        assert ev.command_execution_status != cl.command_execution_status.COMPLETE
        gate.set_status(cl.command_execution_status.COMPLETE)
        x_dec = cla.to_device(q, np.ascontiguousarray(x[:, PROMPT:].transpose(1, 0, 2)))
        y_dec = cla.to_device(q, poison(np.empty((steps, BATCH, layer.d_model), np.float32)))
        for i in range(steps):
            ev = layer.decode(x_dec[i], cache, out=y_dec[i], wait_for=[ev])
            assert isinstance(ev, cl.Event)
        ev.wait()
        assert len(cache) == N
        np.testing.assert_allclose(y_pre.get(), want[:, :PROMPT], **TOL)
        np.testing.assert_allclose(y_dec.get().transpose(1, 0, 2), want[:, PROMPT:], **TOL)
        with pytest.raises(ValueError, match="^out:"):
            layer.decode(x_dec[0], cache)


# ------------------------------------------------------------- paged pool
@pytest.mark.parametrize("int8", [False, True])
def test_step_paged_serving(ctx, rng, int8):
    """The GQA layer over a paged pool the test owns: sequence A's prompt
    alone, then A and a new B together, then decode steps with the rows
    swapped; A finishes and C reuses its pages.  Each y row equals the
    whole sequence's causal reference (an int8 pool's quantized K and V
    within 3e-2 of the outputs' largest value: test_paged_layer.c has the
    argument).  Pages are shuffled, the spare ones and the table's entries
    past each length garbage."""
    layer, ref = make_gqa(ctx, rng)
    q = ctx.queue
    page, num_blocks, max_blocks = 4, 10, 4
    pool = clattn.PagedPool.zeros(q, num_blocks, page, layer.heads_kv, layer.head_dim_k,
                                  layer.head_dim_v, int8=int8)
    if not int8:
        pool.k_pool.fill(np.nan)
        pool.v_pool.fill(np.nan)
    free = list(rng.permutation(num_blocks))
    streams = {name: rng.standard_normal((12, layer.d_model)).astype(np.float32)
               for name in "ABC"}
    want = {name: ref(x[None], True)[0] for name, x in streams.items()}
    pages = {name: [] for name in "ABC"}
    lens = {name: 0 for name in "ABC"}
    tol = dict(rtol=0, atol=3e-2 * max(np.abs(w).max() for w in want.values())) if int8 \
        else TOL

    def step(names, n):
        table = np.full((len(names), max_blocks), -1, np.int32)
        table[:, 1::2] = 1 << 30
        for b, name in enumerate(names):
            while len(pages[name]) * page < lens[name] + n:
                pages[name].append(free.pop())
            table[b, :len(pages[name])] = pages[name]
        new_lens = np.array([lens[name] + n for name in names], np.int32)
        x = np.stack([streams[name][lens[name]:lens[name] + n] for name in names])
        out = poison(cla.empty(q, x.shape, np.float32))
        ev = layer.step_paged(cla.to_device(q, x), pool, table, new_lens, out=out)
        assert isinstance(ev, cl.Event) and ev in out.events
        y = out.get()
        for b, name in enumerate(names):
            np.testing.assert_allclose(y[b], want[name][lens[name]:lens[name] + n], **tol,
                                       err_msg="%s positions %d.." % (name, lens[name]))
            lens[name] += n

    with layer:
        step("A", 5)
        step("AB", 3)
        for _ in range(2):
            step("BA", 1)
        freed = pages.pop("A")
        free.extend(freed)
        step("C", 6)
        assert set(pages["C"]) <= set(freed)
        step("BC", 1)


def test_step_paged_unchecked_waits_for_its_events(ctx, rng):
    """An unchecked pool (no table read back, so nothing blocks): the step
    waits for wait_for (a user event holds it back) and returns its event;
    device tables are taken as they are."""
    layer, ref = make_gqa(ctx, rng)
    q = ctx.queue
    with layer:
        pool = clattn.PagedPool.zeros(q, 6, 2, layer.heads_kv, layer.head_dim_k,
                                      layer.head_dim_v, unchecked=True)
        x = _x(rng, layer, n=3, batch=2)
        table = cla.to_device(q, np.array([[4, 0], [5, 2]], np.int32))
        lens = cla.to_device(q, np.array([3, 3], np.int32))
        out = poison(cla.empty(q, x.shape, np.float32))
        gate = cl.UserEvent(ctx.cl_context)
        ev = layer.step_paged(cla.to_device(q, x), pool, table, lens, out=out,
                              wait_for=[gate])
        assert ev.command_execution_status != cl.command_execution_status.COMPLETE
        gate.set_status(cl.command_execution_status.COMPLETE)
        ev.wait()
        np.testing.assert_allclose(out.get(), ref(x, True), **TOL)


def test_step_paged_refusals(ctx, rng):
    """Pools and tables the binding or the library refuses, by name."""
    layer, _ = make_gqa(ctx, rng)
    q = ctx.queue
    with layer:
        pool = clattn.PagedPool.zeros(q, 4, 4, layer.heads_kv, layer.head_dim_k,
                                      layer.head_dim_v)
        x = cla.to_device(q, _x(rng, layer, n=2, batch=1))
        out = poison(cla.empty(q, x.shape, np.float32))
        table, lens = np.array([[0, 1]], np.int32), np.array([6], np.int32)
        with pytest.raises(ValueError, match="^k_pool: a pool lives on the device"):
            clattn.PagedPool(pool.k_pool.get(), pool.v_pool)
        with pytest.raises(ValueError, match="^k_scale: an int8 pool needs"):
            clattn.PagedPool(cla.zeros(q, (4, 4, 2, 8), np.int8),
                             cla.zeros(q, (4, 4, 2, 6), np.int8))
        other = clattn.PagedPool.zeros(q, 4, 4, layer.heads_kv, layer.head_dim_k + 1,
                                       layer.head_dim_v)
        with pytest.raises(ValueError, match="^pool: head_dim_k 9, but the layer's is 8"):
            layer.step_paged(x, other, table, lens, out=out)
        with pytest.raises(ValueError, match="^x: a step over a paged pool"):
            layer.step_paged(x.get(), pool, table, lens, out=out)
        with pytest.raises(clattn.Error, match="CLATTN_ERR_SHAPE.*block_table"):
            layer.step_paged(x, pool, np.array([[0, 7]], np.int32), lens, out=out)
        with pytest.raises(clattn.Error, match="CLATTN_ERR_SHAPE.*kv_lens"):
            layer.step_paged(x, pool, table, np.array([9], np.int32), out=out)
        assert is_poisoned(out)
        layer.step_paged(x, pool, table, lens, out=out).wait()
        assert not np.isnan(out.get()).any()


# ------------------------------------------------------------------ misuse
def test_wrong_weight_shapes_name_the_weight(ctx, rng):
    """Each layer checks every weight's shape before creating anything."""
    D = 32
    sq = _weights(rng, D, D, fan_in=D)
    with pytest.raises(ValueError, match=r"^w_k: expected shape \(32, 16\), got \(16, 32\)"):
        clattn.GQALayer(ctx, _weights(rng, D, 32, fan_in=D), _weights(rng, 16, D, fan_in=D),
                        _weights(rng, D, 16, fan_in=D), _weights(rng, 32, D, fan_in=D),
                        heads_q=4, heads_kv=2)
    with pytest.raises(ValueError, match=r"^w_q: its 30 columns are not heads_q \(4\)"):
        clattn.GQALayer(ctx, _weights(rng, D, 30, fan_in=D), sq, sq, sq, heads_q=4,
                        heads_kv=2)
    with pytest.raises(ValueError, match=r"^p_w: expected shape \(3, 4\), got \(4, 3\)"):
        clattn.TalkingHeadsLayer(ctx, sq, sq, sq, sq, np.ones((2, 3), np.float32),
                                 np.ones((4, 3), np.float32), heads_v=4)
    with pytest.raises(ValueError, match=r"^w_k: expected shape \(32, 32\), got \(32, 31\)"):
        clattn.OptimisedLayer(ctx, sq, sq[:, :31], sq, heads=4)
    with pytest.raises(ValueError, match=r"^w_o: expected shape \(32, 32\), got \(32,\)"):
        clattn.EfficientLayer(ctx, sq, sq[0], heads=4)
    with pytest.raises(ValueError, match=r"^w_a: expected 2 dimensions"):
        clattn.SuperLayer(ctx, sq, np.ones(8, np.float32), sq, heads=4)
    with pytest.raises(ValueError, match=r"^heads: 5 does not divide d_model 32"):
        clattn.EfficientLayer(ctx, sq, sq, heads=5)
    w_v = np.zeros((2, 4, D, 8), np.float32)
    with pytest.raises(ValueError, match=r"^w_o: expected shape \(2, 4, 8, 32\), got "):
        clattn.SwitchHeadLayer(ctx, sq[:, :16], sq[:, :16], w_v,
                               np.zeros((2, 4, D, 8), np.float32), sq[:, :8], sq[:, :8], topk=2)
    with pytest.raises(ValueError, match=r"^topk: 5 is more than the 4 experts"):
        clattn.SwitchHeadLayer(ctx, sq[:, :16], sq[:, :16], w_v,
                               np.zeros((2, 4, 8, D), np.float32), sq[:, :8], sq[:, :8], topk=5)
    with pytest.raises(ValueError, match=r"^w_s: the value gates are needed with 4 experts"):
        clattn.SwitchHeadLayer(ctx, sq[:, :16], sq[:, :16], w_v,
                               np.zeros((2, 4, 8, D), np.float32), None, sq[:, :8], topk=2)
    with pytest.raises(ValueError, match=r"^w_q: expected floating-point weights"):
        clattn.EfficientLayer(ctx, np.ones((D, D), np.int32), sq, heads=4)


def test_misuse_of_calls_and_caches(ctx, rng):
    """Bad x and caches are ValueErrors before anything is enqueued; a
    cache overflow is the library's CLATTN_ERR_CAPACITY; closed objects
    are clattn.Error."""
    layer, _ = make_gqa(ctx, rng)
    other, _ = make_gqa(ctx, rng)
    x = _x(rng, layer, n=4, batch=1)
    cache = layer.cache(1, 4)
    with pytest.raises(ValueError, match="^x: batch 2, but the cache holds 1 sequences"):
        layer.decode(_x(rng, layer, n=1)[:, 0], cache)
    with pytest.raises(ValueError, match="^x: batch 2, but the cache holds 1"):
        layer.prefill(_x(rng, layer, n=2), cache=cache)
    with pytest.raises(ValueError, match="^cache: a cache of another layer"):
        other.prefill(x, cache=cache)
    with pytest.raises(ValueError, match="^x: expected d_model 32"):
        layer.prefill(np.zeros((1, 4, 16), np.float32))
    with pytest.raises(ValueError, match="^x: the layers compute in float32"):
        layer.prefill(x.astype(np.float64))
    with pytest.raises(ValueError, match="^x: expected 2 dimensions"):
        layer.decode(x, cache)
    with pytest.raises(ValueError, match="^cache: decode appends"):
        layer.decode(x[:, 0], None)

    with pytest.raises(clattn.Error) as err:
        layer.prefill(_x(rng, layer, n=5, batch=1), cache=cache)
    assert err.value.status == "CLATTN_ERR_CAPACITY"
    assert len(cache) == 0
    layer.prefill(x, cache=cache)
    assert len(cache) == 4
    with pytest.raises(clattn.Error) as err:
        layer.decode(x[:, 0], cache)
    assert err.value.status == "CLATTN_ERR_CAPACITY"
    assert len(cache) == 4

    # A layer closes its open caches first; closed objects refuse calls.
    other_cache = layer.cache(1, 2)
    cache.close()
    with pytest.raises(clattn.Error) as err:
        layer.decode(x[:, 0], cache)
    assert err.value.status == "CLATTN_ERR_MISUSE"
    layer.close()
    assert len(other_cache) == 0
    with pytest.raises(clattn.Error, match="closed"):
        other_cache.reset()
    with pytest.raises(clattn.Error, match="GQALayer is closed"):
        layer.prefill(x)
    with pytest.raises(clattn.Error, match="closed"):
        layer.cache(1, 2)
    layer.close()  # idempotent
    other.close()


def test_layer_keeps_its_context(rng):
    """A layer holds its Context: dropping every other reference neither
    closes the context nor breaks the layer; a closed context is an Error."""
    import gc

    from conftest import _device_spec

    context = clattn.Context(_device_spec())
    layer, _ = make_efficient(context, rng)
    del context
    gc.collect()
    cache = layer.cache(1, 3)
    ctx_of_layer = layer.context
    ctx_of_layer.close()
    with pytest.raises(clattn.Error, match="Context is closed"):
        layer.prefill(_x(rng, layer, n=2, batch=1), cache=cache)
    del ctx_of_layer
    layer.close()
