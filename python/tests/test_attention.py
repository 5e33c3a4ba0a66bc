"""ctx.attention on NumPy arrays against the float64 reference.

Each distinct (dtype, head dims, causal, option set, params) is a program
PoCL compiles once, so the cases share a few configurations: float32 with
dk=24, dv=16 (dk != dv, neither a power of two) carries the sizes, head
counts, layouts and options; dk=dv=8 and the half dtypes (dk=dv=16) add a
configuration each."""

import numpy as np
import pytest

import reference
from conftest import assert_close

DK, DV = 24, 16


def qkv(rng, batch, n_q, n_kv, heads_q, heads_kv, dk=DK, dv=DV, dtype="f32"):
    """Random q, k, v in storage dtype, and their stored values (float64)."""
    shapes = ((batch, n_q, heads_q, dk), (batch, n_kv, heads_kv, dk), (batch, n_kv, heads_kv, dv))
    stored = [reference.storage(rng.standard_normal(s), dtype) for s in shapes]
    return [s for s, _ in stored], [v for _, v in stored]


# (heads_q, heads_kv, n_q, n_kv): MHA, GQA (groups of 3), MQA; sizes that
# divide no tile, a single query, a single key.
HEADS_AND_SIZES = [
    (4, 4, 7, 33),
    (6, 2, 33, 7),
    (3, 1, 1, 33),
    (6, 2, 33, 1),
]


@pytest.mark.parametrize("heads_q,heads_kv,n_q,n_kv", HEADS_AND_SIZES)
def test_heads_and_sizes(ctx, rng, heads_q, heads_kv, n_q, n_kv):
    (q, k, v), ref_in = qkv(rng, 2, n_q, n_kv, heads_q, heads_kv)
    out = ctx.attention(q, k, v)
    assert out.shape == (2, n_q, heads_q, DV) and out.dtype == np.float32
    assert_close(out, reference.attention(*ref_in), "f32")


def test_small_equal_head_dims(ctx, rng):
    (q, k, v), ref_in = qkv(rng, 1, 33, 33, 2, 1, dk=8, dv=8)
    assert_close(ctx.attention(q, k, v), reference.attention(*ref_in), "f32")


@pytest.mark.parametrize("n_q,n_kv", [(7, 33), (33, 33), (1, 7), (7, 7)])
def test_causal(ctx, rng, n_q, n_kv):
    # n_q < n_kv: the queries are the last n_q positions (bottom-right).
    (q, k, v), ref_in = qkv(rng, 2, n_q, n_kv, 6, 2)
    assert_close(ctx.attention(q, k, v, causal=True),
                 reference.attention(*ref_in, causal=True), "f32")


@pytest.mark.parametrize("causal", [False, True])
def test_kv_lens(ctx, rng, causal):
    # 0: no visible key (zeros); 40 > n_kv: clamped to n_kv.
    lens = [0, 5, 40, 33]
    (q, k, v), ref_in = qkv(rng, 4, 7, 33, 4, 2)
    want = reference.attention(*ref_in, causal=causal, kv_lens=lens)
    assert np.all(want[0] == 0)
    for given in (np.array(lens, np.int32), np.array(lens, np.int64), lens):
        assert_close(ctx.attention(q, k, v, causal=causal, kv_lens=given), want, "f32")


@pytest.mark.parametrize("q_layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("kv_layout", ["bshd", "BHSD"])
def test_layouts(ctx, rng, q_layout, kv_layout):
    (q, k, v), ref_in = qkv(rng, 2, 7, 33, 6, 2)
    ql, kl = q_layout.lower(), kv_layout.lower()
    args = [np.ascontiguousarray(reference.bshd(a, lay)) for a, lay in ((q, ql), (k, kl), (v, kl))]
    out = ctx.attention(*args, causal=True, kv_lens=[20, 33], q_layout=q_layout,
                        kv_layout=kv_layout)
    want = reference.attention(*ref_in, causal=True, kv_lens=[20, 33])
    assert_close(reference.bshd(out, ql), want, "f32")


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_storage(ctx, rng, dtype):
    (q, k, v), ref_in = qkv(rng, 2, 7, 33, 4, 2, dk=16, dv=16, dtype=dtype)
    lens = [33, 12]
    out = ctx.attention(q, k, v, causal=True, kv_lens=lens,
                        dtype="bf16" if dtype == "bf16" else None)
    assert out.dtype == q.dtype and out.shape == (2, 7, 4, 16)
    assert_close(out, reference.attention(*ref_in, causal=True, kv_lens=lens), dtype)


HEADS_Q = 6
OPTIONS = {
    "window": 5,
    "softcap": 1.5,
    "alibi_slopes": [2.0 ** -(h + 1) for h in range(HEADS_Q)],
    # -inf is "no sink" for that head.
    "sinks": [0.5, -np.inf, 1.0, -1.0, 2.0, 0.0],
}


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_option_alone(ctx, rng, option):
    (q, k, v), ref_in = qkv(rng, 2, 7, 33, HEADS_Q, 2)
    kw = {option: OPTIONS[option]}
    # scale 1 makes the logits large enough for the soft-cap to bend them.
    got = ctx.attention(q, k, v, causal=True, kv_lens=[33, 20], scale=1.0, **kw)
    want = reference.attention(*ref_in, causal=True, kv_lens=[33, 20], scale=1.0, **kw)
    plain = reference.attention(*ref_in, causal=True, kv_lens=[33, 20], scale=1.0)
    assert np.abs(want - plain).max() > 1e-2, "the option changes nothing here"
    assert_close(got, want, "f32")


def test_options_together(ctx, rng):
    (q, k, v), ref_in = qkv(rng, 2, 7, 33, HEADS_Q, 2)
    lens = [33, 9]
    qb, kb, vb = (np.ascontiguousarray(reference.bshd(a, "bhsd")) for a in (q, k, v))
    out = ctx.attention(qb, kb, vb, causal=True, kv_lens=lens, scale=0.7, q_layout="bhsd",
                        kv_layout="bhsd", **OPTIONS)
    want = reference.attention(*ref_in, causal=True, kv_lens=lens, scale=0.7, **OPTIONS)
    assert_close(reference.bshd(out, "bhsd"), want, "f32")


def test_scale(ctx, rng):
    (q, k, v), ref_in = qkv(rng, 2, 7, 33, 4, 4)
    default = ctx.attention(q, k, v)
    scaled = ctx.attention(q, k, v, scale=0.3)
    assert_close(scaled, reference.attention(*ref_in, scale=0.3), "f32")
    assert_close(default, reference.attention(*ref_in, scale=1 / np.sqrt(DK)), "f32")


# The prefill family's tunables (`clattn families`, docs/TUNING.md): both
# variants with tiles that divide none of the sizes.
@pytest.mark.parametrize("params", ["variant=1 rows=2 keys=16", "variant=2 keys=16 wg=32"])
def test_params_select_a_variant(ctx, rng, params):
    (q, k, v), ref_in = qkv(rng, 2, 7, 33, 6, 2)
    auto = ctx.attention(q, k, v, causal=True, kv_lens=[33, 20])
    chosen = ctx.attention(q, k, v, causal=True, kv_lens=[33, 20], params=params)
    want = reference.attention(*ref_in, causal=True, kv_lens=[33, 20])
    assert_close(chosen, want, "f32")
    np.testing.assert_allclose(chosen, auto, rtol=2e-5, atol=2e-5)


def test_numpy_out_is_written(ctx, rng):
    from conftest import poison

    (q, k, v), ref_in = qkv(rng, 2, 7, 33, 4, 2)
    out = poison(np.empty((2, 7, 4, DV), np.float32))
    got = ctx.attention(q, k, v, out=out)
    assert got is out
    assert_close(out, reference.attention(*ref_in), "f32")


def test_repeated_shapes_take_each_calls_options(ctx, rng):
    # The binding reuses a call's description while its shapes, dtypes and
    # options repeat (Context._described): a call that differs only in an
    # option's values, the scale or the mask must still get its own.
    (q, k, v), ref_in = qkv(rng, 2, 7, 33, HEADS_Q, 2)
    sinks = np.array(OPTIONS["sinks"], np.float32)
    calls = [dict(causal=True, sinks=sinks), dict(causal=True, sinks=sinks + 1.5),
             dict(causal=False, sinks=sinks), dict(causal=True, sinks=sinks, scale=0.4),
             dict(causal=True, sinks=sinks)]
    for kw in calls:
        assert_close(ctx.attention(q, k, v, **kw), reference.attention(*ref_in, **kw), "f32")
    sinks[:] = 3.0  # the same array object with new values is a new key
    kw = dict(causal=True, sinks=sinks)
    assert_close(ctx.attention(q, k, v, **kw), reference.attention(*ref_in, **kw), "f32")


def test_threads_share_a_context(ctx, rng):
    # cffi releases the GIL in the C call, so the threads' calls meet in the
    # library (which serialises a context's calls) and in the binding's
    # description cache at once; each must still get its own answer.
    import threading

    cases = []
    for i in range(4):
        (q, k, v), ref_in = qkv(rng, 1 + i % 2, 7, 33, 6, 2)
        cases.append(((q, k, v), reference.attention(*ref_in, causal=bool(i % 2)), bool(i % 2)))
    errors = []

    def run(case):
        (q, k, v), want, causal = case
        try:
            for _ in range(10):
                assert_close(ctx.attention(q, k, v, causal=causal), want, "f32")
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(c,)) for c in cases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
