"""Paged and ragged KV caches (clattn.h, "paged and ragged caches"):
clattn.Context's paged_attention, paged_append and varlen_attention, in
FlashAttention-2's layouts."""

import numpy as np

from . import _arrays as A
from ._lib import ffi, lib, params_struct, versioned


def _cache_dtype(q_kind, k_cache, v_cache, k_scale, v_scale):
    """The description's cache_dtype: 0 (the dtype of q) for caches of q's
    dtype, CLATTN_I8 for int8 caches, which need both float32 scale
    arrays."""
    kinds = {np.dtype(k_cache.dtype), np.dtype(v_cache.dtype)}
    if kinds == {np.dtype(np.int8)}:
        for name, s in (("k_scale", k_scale), ("v_scale", v_scale)):
            if s is None:
                raise ValueError("%s: an int8 cache needs its float32 scales "
                                 "[num_blocks, page_size, heads_kv]" % name)
            A.check_array(name, s)
            if np.dtype(s.dtype) != np.float32:
                raise ValueError("%s: expected float32, got %s" % (name, s.dtype))
        return lib.CLATTN_I8
    if np.dtype(np.int8) in kinds:
        raise ValueError("k_cache, v_cache: both int8 or neither, got %s and %s"
                         % (k_cache.dtype, v_cache.dtype))
    A.dtype_code(("k_cache", "v_cache"), (k_cache, v_cache), q_kind)
    for name, s in (("k_scale", k_scale), ("v_scale", v_scale)):
        if s is not None:
            raise ValueError("%s: scales are an int8 cache's; this cache is %s"
                             % (name, k_cache.dtype))
    return 0


def _pool(k_cache, v_cache):
    """The pool's dims, k_cache and v_cache agreeing."""
    names = ("num_blocks", "page_size", "heads_kv", "d")
    ks = A.shape_of("k_cache", k_cache, 4, names)
    vs = A.shape_of("v_cache", v_cache, 4, names)
    for dim in names[:3]:
        A.agree(dim, [("k_cache", ks[dim]), ("v_cache", vs[dim])])
    return ks, vs


class PagedCalls:
    """Mixed into clattn.Context."""

    def paged_desc(self, batch, n_q, heads_q, k_cache, v_cache, block_table, *,
                   dtype_code, cache_dtype, causal=False, scale=None, window=0,
                   softcap=0.0, alibi_slopes=None, sinks=None, unchecked=False,
                   params=None, keep=None):
        """The clattn_paged_desc of a call on this pool and table."""
        keep = [] if keep is None else keep
        ks, vs = _pool(k_cache, v_cache)
        ts = A.shape_of("block_table", block_table, 2, ("batch", "max_blocks"))
        A.agree("batch size", [("the queries", batch), ("block_table", ts["batch"])])
        d = versioned("clattn_paged_desc")
        d.batch, d.n_q, d.heads_q = batch, n_q, heads_q
        d.heads_kv = ks["heads_kv"]
        d.head_dim_k, d.head_dim_v = ks["d"], vs["d"]
        d.num_blocks, d.page_size = ks["num_blocks"], ks["page_size"]
        d.max_blocks = ts["max_blocks"]
        d.dtype, d.cache_dtype = dtype_code, cache_dtype
        d.causal = int(bool(causal))
        d.unchecked = int(bool(unchecked))
        d.params = params_struct(keep, params)
        A.set_options(d, keep, heads_q, scale, window, softcap, alibi_slopes, sinks)
        return d

    def paged_attention(self, q, k_cache, v_cache, block_table, kv_lens, *,
                        k_scale=None, v_scale=None, causal=False, scale=None,
                        dtype=None, window=0, softcap=0.0, alibi_slopes=None,
                        sinks=None, unchecked=False, params=None, out=None,
                        wait_for=None):
        """Attention of n_q new queries per sequence over a paged cache:
        q [batch, n_q, heads_q, dk]; k_cache [num_blocks, page_size,
        heads_kv, dk] and v_cache likewise with dv, in q's dtype or int8
        with k_scale / v_scale float32 [num_blocks, page_size, heads_kv];
        block_table int32 [batch, max_blocks]; kv_lens int32 [batch], the
        lengths including the n_q new positions (query i at kv_lens[b] -
        n_q + i).  n_q == 1 is a decode step.  Returns [batch, n_q,
        heads_q, dv] (NumPy), or the event of a call on pyopencl arrays,
        which writes out=."""
        dt, kind = A.dtype_code(("q",), (q,), dtype)
        qs = A.shape_of("q", q, 4, ("batch", "n_q", "heads", "dk"))
        cache_dtype = _cache_dtype(kind, k_cache, v_cache, k_scale, v_scale)
        keep = []
        d = self.paged_desc(qs["batch"], qs["n_q"], qs["heads"], k_cache, v_cache,
                            block_table, dtype_code=dt, cache_dtype=cache_dtype,
                            causal=causal, scale=scale, window=window,
                            softcap=softcap, alibi_slopes=alibi_slopes, sinks=sinks,
                            unchecked=unchecked, params=params, keep=keep)
        A.agree("key head dim", [("q", qs["dk"]), ("k_cache", d.head_dim_k)])
        scales = (k_scale, v_scale) if cache_dtype else (None, None)
        for name, s in zip(("k_scale", "v_scale"), scales):
            if s is not None:
                A.expect_shape(name, s, (d.num_blocks, d.page_size, d.heads_kv))
        table = A.check_ints("block_table", block_table, (d.batch, d.max_blocks))
        if kv_lens is None:
            raise ValueError("kv_lens: a paged call needs each sequence's length, "
                             "int32 [batch]")
        lens = A.check_lens("kv_lens", kv_lens, d.batch)
        call = A.Call(self, [("q", q), ("k_cache", k_cache), ("v_cache", v_cache),
                             ("k_scale", scales[0]), ("v_scale", scales[1]),
                             ("block_table", A.lengths_kind(table)),
                             ("kv_lens", A.lengths_kind(lens)), ("out", out)], wait_for)
        o = call.output("out", out, (d.batch, d.n_q, d.heads_q, d.head_dim_v), q.dtype)
        args = (call.input("q", q), call.input("k_cache", k_cache),
                call.input("v_cache", v_cache), call.input("k_scale", scales[0]),
                call.input("v_scale", scales[1]), call.input("block_table", table),
                call.input("kv_lens", lens))
        self.check(lib.clattn_paged_attention(self.handle, d, *args, o, call.events()),
                   "paged_attention")
        return A.result(call, out)

    def paged_append(self, k_new, v_new, k_cache, v_cache, block_table, kv_lens, *,
                     k_scale=None, v_scale=None, dtype=None, unchecked=False,
                     wait_for=None):
        """Writes n new rows per sequence into the pages block_table names,
        at positions kv_lens[b] - n .. kv_lens[b] - 1 (kv_lens: the lengths
        after the append): k_new [batch, n, heads_kv, dk], v_new [batch, n,
        heads_kv, dv] (BSHD, float); an int8 pool gets each row quantized
        (its scale in k_scale / v_scale).  The pool (and scales) must be
        pyopencl arrays: it is written in place.  Returns the event."""
        for name, a in (("k_cache", k_cache), ("v_cache", v_cache),
                        ("k_scale", k_scale), ("v_scale", v_scale)):
            if a is not None and not A.is_device_array(a):
                raise ValueError("%s: paged_append writes the pool in place: pass a "
                                 "pyopencl array" % name)
        dt, kind = A.dtype_code(("k_new", "v_new"), (k_new, v_new), dtype)
        ks = A.shape_of("k_new", k_new, 4, ("batch", "n_new", "heads_kv", "dk"))
        vs = A.shape_of("v_new", v_new, 4, ("batch", "n_new", "heads_kv", "dv"))
        n_new = A.agree("new row count", [("k_new", ks["n_new"]), ("v_new", vs["n_new"])])
        batch = A.agree("batch size", [("k_new", ks["batch"]), ("v_new", vs["batch"])])
        cache_dtype = _cache_dtype(kind, k_cache, v_cache, k_scale, v_scale)
        d = self.paged_desc(batch, n_new, ks["heads_kv"], k_cache, v_cache, block_table,
                            dtype_code=dt, cache_dtype=cache_dtype, unchecked=unchecked)
        A.expect_shape("k_new", k_new, (d.batch, n_new, d.heads_kv, d.head_dim_k))
        A.expect_shape("v_new", v_new, (d.batch, n_new, d.heads_kv, d.head_dim_v))
        for name, s in (("k_scale", k_scale), ("v_scale", v_scale)):
            if cache_dtype:
                A.expect_shape(name, s, (d.num_blocks, d.page_size, d.heads_kv))
        table = A.check_ints("block_table", block_table, (d.batch, d.max_blocks))
        if kv_lens is None:
            raise ValueError("kv_lens: paged_append needs each sequence's length after "
                             "the append, int32 [batch]")
        lens = A.check_lens("kv_lens", kv_lens, d.batch)
        call = A.Call(self, [("k_new", k_new), ("v_new", v_new),
                             ("block_table", A.lengths_kind(table)),
                             ("kv_lens", A.lengths_kind(lens)), ("k_cache", k_cache),
                             ("v_cache", v_cache), ("k_scale", k_scale),
                             ("v_scale", v_scale)], wait_for)
        scales = ((call.in_place(k_scale), call.in_place(v_scale)) if cache_dtype
                  else (ffi.NULL, ffi.NULL))
        args = (call.input("k_new", k_new), call.input("v_new", v_new),
                call.input("block_table", table), call.input("kv_lens", lens),
                call.in_place(k_cache), call.in_place(v_cache)) + scales
        self.check(lib.clattn_paged_append(self.handle, d, *args, call.events()),
                   "paged_append")
        written = (k_cache, v_cache) + ((k_scale, v_scale) if cache_dtype else ())
        return call.finish(outputs=written)

    def varlen_attention(self, q, k, v, cu_seqlens_q, cu_seqlens_k, *, causal=False,
                         scale=None, dtype=None, window=0, softcap=0.0,
                         alibi_slopes=None, sinks=None, unchecked=False, params=None,
                         out=None, wait_for=None):
        """Ragged prefill over packed sequences (FlashAttention's varlen
        call): q [total_q, heads_q, dk], k [total_k, heads_kv, dk], v
        [total_k, heads_kv, dv], cu_seqlens_q / cu_seqlens_k int32
        [batch + 1] (sequence b's rows cu[b] .. cu[b+1]-1).  Returns
        [total_q, heads_q, dv] as attention() does."""
        dt, _ = A.dtype_code(("q", "k", "v"), (q, k, v), dtype)
        qs = A.shape_of("q", q, 3, ("total_q", "heads", "dk"))
        ks = A.shape_of("k", k, 3, ("total_k", "heads", "dk"))
        vs = A.shape_of("v", v, 3, ("total_k", "heads", "dv"))
        if not A.is_device_array(cu_seqlens_q):  # a list reads as NumPy
            cu_seqlens_q = np.asarray(cu_seqlens_q)
        cq = A.shape_of("cu_seqlens_q", cu_seqlens_q, 1, ("batch + 1",))["batch + 1"]
        if cq < 2:
            raise ValueError("cu_seqlens_q: expected [batch + 1] with batch >= 1, got "
                             "shape %s" % (tuple(cu_seqlens_q.shape),))
        keep = []
        d = versioned("clattn_varlen_desc")
        d.batch = cq - 1
        d.total_q = qs["total_q"]
        d.total_k = A.agree("key count", [("k", ks["total_k"]), ("v", vs["total_k"])])
        d.heads_q = qs["heads"]
        d.heads_kv = A.agree("KV head count", [("k", ks["heads"]), ("v", vs["heads"])])
        d.head_dim_k = A.agree("key head dim", [("q", qs["dk"]), ("k", ks["dk"])])
        d.head_dim_v = vs["dv"]
        d.dtype = dt
        d.causal = int(bool(causal))
        d.unchecked = int(bool(unchecked))
        d.params = params_struct(keep, params)
        A.set_options(d, keep, d.heads_q, scale, window, softcap, alibi_slopes, sinks)
        cu_q = A.check_ints("cu_seqlens_q", cu_seqlens_q, (d.batch + 1,))
        cu_k = A.check_ints("cu_seqlens_k", cu_seqlens_k, (d.batch + 1,))
        call = A.Call(self, [("q", q), ("k", k), ("v", v),
                             ("cu_seqlens_q", A.lengths_kind(cu_q)),
                             ("cu_seqlens_k", A.lengths_kind(cu_k)), ("out", out)],
                      wait_for)
        o = call.output("out", out, (d.total_q, d.heads_q, d.head_dim_v), q.dtype)
        args = (call.input("q", q), call.input("k", k), call.input("v", v),
                call.input("cu_seqlens_q", cu_q), call.input("cu_seqlens_k", cu_k))
        self.check(lib.clattn_varlen_attention(self.handle, d, *args, o, call.events()),
                   "varlen_attention")
        return A.result(call, out)
