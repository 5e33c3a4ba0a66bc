"""ctx.paged_attention, ctx.paged_append and ctx.varlen_attention against the
float64 reference of the same sequences laid out contiguously."""

import numpy as np
import pyopencl.array as cla
import pytest

import clattn
import reference
from conftest import assert_close, poison

DK, DV = 24, 16


def pool_of(rng, lens, page_size, heads_kv, dtype="f32", int8=False, spare=3):
    """A pool holding each sequence's keys and values in shuffled pages
    (spare pages no sequence owns, and table entries past each length,
    hold garbage), and the contiguous float64 keys and values the pages
    hold: (k_cache, v_cache, k_scale, v_scale, table, k64, v64)."""
    batch, most = len(lens), max(lens)
    pages = [max(1, -(-n // page_size)) for n in lens]
    num_blocks = sum(pages) + spare
    order = rng.permutation(num_blocks)
    max_blocks = max(pages) + 1
    table = np.full((batch, max_blocks), -7, np.int32)
    k64 = np.zeros((batch, most, heads_kv, DK))
    v64 = np.zeros((batch, most, heads_kv, DV))
    caches, scales = [], []
    for d, c64 in ((DK, k64), (DV, v64)):
        shape = (num_blocks, page_size, heads_kv, d)
        if int8:
            ints = rng.integers(-127, 128, shape).astype(np.int8)
            scale = rng.uniform(0.001, 0.02, shape[:3]).astype(np.float32)
            caches.append(ints)
            scales.append(scale)
            values = ints.astype(np.float64) * scale[..., None].astype(np.float64)
        else:
            stored, values = reference.storage(rng.standard_normal(shape), dtype)
            caches.append(np.ascontiguousarray(stored))
            values = values.reshape(shape)
        for b, n in enumerate(lens):
            for t in range(n):
                page = order[sum(pages[:b]) + t // page_size]
                c64[b, t] = values[page, t % page_size]
    next_page = 0
    for b, n in enumerate(lens):
        table[b, :pages[b]] = order[next_page:next_page + pages[b]]
        next_page += pages[b]
    if not int8 and dtype == "f32":
        for c in caches:  # the pages no one owns: NaN shows if one is read
            c[order[next_page:]] = np.nan
    ks, vs = scales if int8 else (None, None)
    return caches[0], caches[1], ks, vs, table, k64, v64


@pytest.mark.parametrize("n_q", [1, 5])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("page_size", [1, 16])
def test_paged_attention(ctx, rng, n_q, causal, page_size):
    lens = [page_size - 1 or 1, page_size, page_size + 1, 40, n_q]
    heads_q, heads_kv = 6, 2
    kc, vc, _, _, table, k64, v64 = pool_of(rng, lens, page_size, heads_kv)
    q = rng.standard_normal((len(lens), n_q, heads_q, DK)).astype(np.float32)
    out = poison(np.empty((len(lens), n_q, heads_q, DV), np.float32))
    got = ctx.paged_attention(q, kc, vc, table, lens, causal=causal, out=out)
    assert got is out
    want = reference.attention(q, k64, v64, causal=causal, kv_lens=lens)
    assert_close(got, want, "f32")


def test_paged_attention_int8_and_options(ctx, rng):
    lens = [1, 15, 16, 17, 33]
    opts = {"window": 9, "softcap": 3.0, "alibi_slopes": [0.5, 0.25, 0.125, 0.0625],
            "sinks": [-np.inf, 0.5, 1.0, -0.5]}
    kc, vc, ks, vs, table, k64, v64 = pool_of(rng, lens, 16, 1, int8=True)
    q = rng.standard_normal((len(lens), 3, 4, DK)).astype(np.float32)
    got = ctx.paged_attention(q, kc, vc, table, lens, k_scale=ks, v_scale=vs,
                              causal=True, scale=0.7, **opts)
    want = reference.attention(q, k64, v64, causal=True, kv_lens=lens, scale=0.7, **opts)
    assert_close(got, want, "f32")


def test_paged_attention_f16(ctx, rng):
    lens = [3, 20]
    kc, vc, _, _, table, k64, v64 = pool_of(rng, lens, 8, 2, dtype="f16")
    q, q64 = reference.storage(rng.standard_normal((2, 1, 4, DK)), "f16")
    got = ctx.paged_attention(q, kc, vc, table, lens)
    assert_close(got, reference.attention(q64, k64, v64, kv_lens=lens), "f16")


def test_paged_append_then_attend_on_device(ctx, rng):
    # Two steps of a serving loop on pyopencl arrays: a prefill chunk of 5
    # rows, then one decode row, appended through the table and attended.
    queue = ctx.queue
    page_size, heads_kv, heads_q, batch = 4, 2, 4, 2
    num_blocks, max_blocks = 8, 3
    table = np.array([[5, 1, 6], [2, 7, 0]], np.int32)
    pool = [cla.to_device(queue, np.full((num_blocks, page_size, heads_kv, d), np.nan,
                                         np.float32)) for d in (DK, DV)]
    k_all = rng.standard_normal((batch, 6, heads_kv, DK)).astype(np.float32)
    v_all = rng.standard_normal((batch, 6, heads_kv, DV)).astype(np.float32)
    q_all = rng.standard_normal((batch, 6, heads_q, DK)).astype(np.float32)
    for lo, hi in ((0, 5), (5, 6)):
        lens = cla.to_device(queue, np.array([hi, hi], np.int32))
        ctx.paged_append(cla.to_device(queue, k_all[:, lo:hi].copy()),
                         cla.to_device(queue, v_all[:, lo:hi].copy()), *pool, table, lens)
        q = cla.to_device(queue, q_all[:, lo:hi].copy())
        out = poison(cla.empty(queue, (batch, hi - lo, heads_q, DV), np.float32))
        ctx.paged_attention(q, *pool, cla.to_device(queue, table), lens, causal=True,
                            out=out)
        want = reference.attention(q_all[:, :hi], k_all[:, :hi], v_all[:, :hi],
                                   causal=True)[:, lo:hi]
        assert_close(out.get(), want, "f32")
    assert max_blocks * page_size >= 6


def test_paged_append_int8_quantizes_each_row(ctx, rng):
    queue = ctx.queue
    page_size, heads_kv = 4, 2
    table = np.array([[3, 0], [1, 2]], np.int32)
    k_new = rng.standard_normal((2, 3, heads_kv, DK)).astype(np.float32)
    v_new = rng.standard_normal((2, 3, heads_kv, DV)).astype(np.float32)
    k_new[1, 0, 1] = 0.0  # a zero row: scale 0, zeros
    pool = [cla.zeros(queue, (4, page_size, heads_kv, d), np.int8) for d in (DK, DV)]
    scales = [cla.zeros(queue, (4, page_size, heads_kv), np.float32) for _ in range(2)]
    lens = np.array([3, 5], np.int32)
    ctx.paged_append(cla.to_device(queue, k_new), cla.to_device(queue, v_new), pool[0],
                     pool[1], table, lens, k_scale=scales[0], v_scale=scales[1])
    for new, ints, scale in ((k_new, pool[0].get(), scales[0].get()),
                             (v_new, pool[1].get(), scales[1].get())):
        for b, first in ((0, 0), (1, 2)):
            for i in range(3):
                t = first + i
                page, row = table[b, t // page_size], t % page_size
                want_scale = np.abs(new[b, i]).max(axis=-1) / 127
                np.testing.assert_allclose(scale[page, row], want_scale, rtol=1e-6)
                back = ints[page, row].astype(np.float64) * scale[page, row][:, None]
                step = np.where(want_scale > 0, want_scale, 1)[:, None]
                assert (np.abs(back - new[b, i]) <= 0.5 * step + 1e-6).all()
    assert (pool[0].get()[1, 2, 1] == 0).all() and scales[0].get()[1, 2, 1] == 0


def test_paged_refusals(ctx, rng):
    lens = [5, 9]
    kc, vc, ks, vs, table, _, _ = pool_of(rng, lens, 4, 2, int8=True)
    q = rng.standard_normal((2, 1, 2, DK)).astype(np.float32)
    with pytest.raises(ValueError, match="k_scale"):
        ctx.paged_attention(q, kc, vc, table, lens)
    bad = table.copy()
    bad[1, 2] = 1000
    with pytest.raises(clattn.Error, match="block_table"):
        ctx.paged_attention(q, kc, vc, bad, lens, k_scale=ks, v_scale=vs)
    with pytest.raises(clattn.Error, match="kv_lens"):
        ctx.paged_attention(q, kc, vc, table, [5, 4 * table.shape[1] + 1], k_scale=ks,
                            v_scale=vs)
    with pytest.raises(ValueError, match="block_table"):
        ctx.paged_attention(q, kc, vc, table[:1], lens, k_scale=ks, v_scale=vs)


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_attention(ctx, rng, causal):
    lens_q, lens_k = [3, 0, 7, 1, 16], [3, 4, 9, 1, 20]
    heads_q, heads_kv = 4, 2
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    q = rng.standard_normal((cu_q[-1], heads_q, DK)).astype(np.float32)
    k = rng.standard_normal((cu_k[-1], heads_kv, DK)).astype(np.float32)
    v = rng.standard_normal((cu_k[-1], heads_kv, DV)).astype(np.float32)
    out = poison(np.empty((cu_q[-1], heads_q, DV), np.float32))
    got = ctx.varlen_attention(q, k, v, cu_q, cu_k, causal=causal, out=out)
    for b in range(len(lens_q)):
        if lens_q[b] == 0:
            continue
        qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        want = reference.attention(q[None, qs], k[None, ks], v[None, ks], causal=causal)
        assert_close(got[qs], want[0], "f32")


def test_varlen_refusals(ctx, rng):
    q = np.zeros((4, 2, DK), np.float32)
    k = np.zeros((6, 2, DK), np.float32)
    v = np.zeros((6, 2, DV), np.float32)
    with pytest.raises(clattn.Error, match="cu_seqlens_q"):
        ctx.varlen_attention(q, k, v, [0, 3, 2], [0, 3, 6])
    with pytest.raises(clattn.Error, match="cu_seqlens_k"):
        ctx.varlen_attention(q, k, v, [0, 2, 4], [0, 3, 5])


def test_contiguous_int8_cache(ctx, rng):
    # A contiguous BSHD int8 cache [batch, capacity, heads_kv, d] is a pool
    # in order: pages of P rows, sequence b's table row b * capacity / P + j.
    queue = ctx.queue
    batch, capacity, heads_kv, heads_q, page = 3, 24, 2, 4, 8
    blocks = capacity // page
    table = (np.arange(batch)[:, None] * blocks + np.arange(blocks)).astype(np.int32)
    caches = [cla.zeros(queue, (batch, capacity, heads_kv, d), np.int8) for d in (DK, DV)]
    scales = [cla.zeros(queue, (batch, capacity, heads_kv), np.float32) for _ in range(2)]
    pool = [c.reshape(batch * blocks, page, heads_kv, c.shape[3]) for c in caches]
    pool_scales = [s.reshape(batch * blocks, page, heads_kv) for s in scales]
    lens = np.array([5, 24, 13], np.int32)
    k_all = rng.standard_normal((batch, capacity, heads_kv, DK)).astype(np.float32)
    v_all = rng.standard_normal((batch, capacity, heads_kv, DV)).astype(np.float32)
    # each sequence's rows appended as one chunk of its length's rows
    n = int(lens.max())
    k_new = np.zeros((batch, n, heads_kv, DK), np.float32)
    v_new = np.zeros((batch, n, heads_kv, DV), np.float32)
    for b, length in enumerate(lens):
        k_new[b, n - length:] = k_all[b, :length]
        v_new[b, n - length:] = v_all[b, :length]
    # kv_lens - n + i: rows before a sequence's start fall below 0, unwritten
    ctx.paged_append(cla.to_device(queue, k_new), cla.to_device(queue, v_new), *pool,
                     table, lens, k_scale=pool_scales[0], v_scale=pool_scales[1])
    k_back = caches[0].get().astype(np.float64) * scales[0].get()[..., None]
    v_back = caches[1].get().astype(np.float64) * scales[1].get()[..., None]
    for b, length in enumerate(lens):  # the contiguous cache holds the rows
        step = np.abs(k_all[b, :length]).max(axis=-1, keepdims=True) / 127
        assert (np.abs(k_back[b, :length] - k_all[b, :length]) <= 0.5 * step + 1e-6).all()
        assert (caches[0].get()[b, length:] == 0).all()
    q = rng.standard_normal((batch, 1, heads_q, DK)).astype(np.float32)
    out = poison(cla.empty(queue, (batch, 1, heads_q, DV), np.float32))
    ctx.paged_attention(cla.to_device(queue, q), *pool, cla.to_device(queue, table),
                        cla.to_device(queue, lens), k_scale=pool_scales[0],
                        v_scale=pool_scales[1], out=out)
    want = reference.attention(q, k_back, v_back, kv_lens=lens)
    assert_close(out.get(), want, "f32")
