"""Talking-heads attention calls of clattn.Context (prefill, decode,
append)."""

import numpy as np

from . import _arrays as A
from ._lib import lib, params_struct, versioned


def _mixing_dtype(name, a):
    # NumPy weights of any real float dtype are converted to float32 as
    # they are uploaded; a device array is passed as it is, so it must be
    # float32 already.
    dt = np.dtype(a.dtype)
    if A.is_device_array(a):
        if dt != np.float32:
            raise ValueError("%s: a pyopencl mixing matrix must be float32, got %s"
                             % (name, dt))
    elif dt.kind != "f":
        raise ValueError("%s: expected a float32 matrix, got dtype %s" % (name, dt))


def _mixing(p_l, p_w, heads_k, heads_v):
    """The logit heads the mixing matrices give, their shapes and dtypes
    checked: p_l [heads_k, heads], p_w [heads, heads_v]."""
    ls = A.shape_of("p_l", p_l, 2, ("heads_k", "heads"))
    A.shape_of("p_w", p_w, 2, ("heads", "heads_v"))
    _mixing_dtype("p_l", p_l)
    _mixing_dtype("p_w", p_w)
    A.expect_shape("p_l", p_l, (heads_k, ls["heads"]))
    A.expect_shape("p_w", p_w, (ls["heads"], heads_v))
    return ls["heads"]


class TalkingHeadsCalls:
    """Mixed into clattn.Context.

    Talking-heads calls take the window alone of the attention options
    (clattn.h): softcap, ALiBi and sinks act on a head's logits, which here
    are mixed across heads, so the library refuses them and they are no
    keywords here."""

    # ------------------------------------------------------------ prefill
    def talking_heads_desc(self, q, k, v, p_l, p_w, *, causal=False, scale=None,
                           q_layout="bshd", kv_layout="bshd", dtype=None, window=0,
                           params=None, keep=None):
        """The clattn_th_desc of a talking-heads call on these arrays (their
        shapes and dtypes checked)."""
        keep = [] if keep is None else keep
        s = A.qkv_shapes(q, k, v, q_layout, kv_layout, dtype)
        d = versioned("clattn_th_desc")
        d.batch, d.n_kv = s["batch"], s["n_kv"]
        d.n_q = s["q"]["n_q"]
        d.heads_k = A.agree("query and key head count",
                            [("q", s["q"]["heads"]), ("k", s["k"]["heads"])])
        d.heads_v = s["v"]["heads"]
        d.heads = _mixing(p_l, p_w, d.heads_k, d.heads_v)
        d.head_dim_k, d.head_dim_v = s["head_dim_k"], s["head_dim_v"]
        d.dtype, d.q_layout, d.kv_layout = s["dtype"], s["q_layout"], s["kv_layout"]
        d.causal = int(bool(causal))
        d.params = params_struct(keep, params)
        # The window alone: the library refuses the other options here.
        A.set_options(d, keep, d.heads, scale, window, 0.0, None, None)
        return d

    def talking_heads(self, q, k, v, p_l, p_w, *, causal=False, scale=None, kv_lens=None,
                      q_layout="bshd", kv_layout="bshd", dtype=None, window=0, params=None,
                      out=None, wait_for=None):
        """Talking-heads attention (Shazeer et al. 2020): q [batch, n_q,
        heads_k, dk], k [batch, n_kv, heads_k, dk], v [batch, n_kv, heads_v,
        dv] (BSHD; 'bhsd' swaps the middle two), p_l float32 [heads_k,
        heads] mixing the logits into the softmax heads, p_w float32 [heads,
        heads_v] mixing the weights into the value heads, kv_lens int32
        [batch] or None.  NumPy arrays: returns [batch, n_q, heads_v, dv] as
        NumPy.  pyopencl arrays: writes out= and returns the call's
        pyopencl.Event (after wait_for)."""
        keep = []
        d = self.talking_heads_desc(q, k, v, p_l, p_w, causal=causal, scale=scale,
                                    q_layout=q_layout, kv_layout=kv_layout, dtype=dtype,
                                    window=window, params=params, keep=keep)
        if d.q_layout == lib.CLATTN_BHSD:
            oshape = (d.batch, d.heads_v, d.n_q, d.head_dim_v)
        else:
            oshape = (d.batch, d.n_q, d.heads_v, d.head_dim_v)
        kv_lens = A.check_lens("kv_lens", kv_lens, d.batch)
        call = A.Call(self, [("q", q), ("k", k), ("v", v), ("p_l", p_l), ("p_w", p_w),
                             ("kv_lens", A.lengths_kind(kv_lens)), ("out", out)], wait_for)
        o = call.output("out", out, oshape, q.dtype)
        args = (call.input("q", q), call.input("k", k), call.input("v", v),
                call.input("p_l", p_l, np.float32), call.input("p_w", p_w, np.float32),
                call.input("kv_lens", kv_lens))
        self.check(lib.clattn_talking_heads(self.handle, d, *args, o, call.events()),
                   "talking_heads")
        return A.result(call, out)

    # ------------------------------------------------------------- decode
    def talking_heads_decode_desc(self, q, k_cache, v_cache, p_l, p_w, *, scale=None,
                                  cache_layout="bshd", dtype=None, window=0, params=None,
                                  keep=None):
        """The clattn_th_decode_desc of a talking-heads decode on these
        arrays."""
        return self._th_cache_desc(q, k_cache, v_cache,
                                   lambda hk, hv: _mixing(p_l, p_w, hk, hv), scale=scale,
                                   cache_layout=cache_layout, dtype=dtype, window=window,
                                   params=params, keep=keep)

    def _th_cache_desc(self, q, k_cache, v_cache, logit_heads, *, scale=None,
                       cache_layout="bshd", dtype=None, window=0, params=None, keep=None):
        # logit_heads(heads_k, heads_v): the decode's mixing matrices give
        # them; an append, which takes none, gives them as a number.
        keep = [] if keep is None else keep
        s = A.cache_shapes(q, k_cache, v_cache, cache_layout, dtype)
        d = versioned("clattn_th_decode_desc")
        d.batch, d.capacity = s["batch"], s["capacity"]
        d.heads_k = A.agree("query and key head count", [("q", s["q"]["heads"]),
                                                         ("k_cache", s["k"]["heads"])])
        d.heads_v = s["v"]["heads"]
        d.heads = logit_heads(d.heads_k, d.heads_v)
        d.head_dim_k, d.head_dim_v = s["head_dim_k"], s["head_dim_v"]
        d.dtype, d.cache_layout = s["dtype"], s["cache_layout"]
        d.params = params_struct(keep, params)
        # The window alone: the library refuses the other options here.
        A.set_options(d, keep, d.heads, scale, window, 0.0, None, None)
        return d

    def talking_heads_decode(self, q, k_cache, v_cache, p_l, p_w, lens, *, scale=None,
                             cache_layout="bshd", dtype=None, window=0, params=None,
                             out=None, wait_for=None):
        """One query per sequence against a talking-heads KV cache (split-KV,
        exact): q [batch, heads_k, dk], k_cache [batch, capacity, heads_k,
        dk], v_cache [batch, capacity, heads_v, dv] ('bhsd': heads before
        capacity), p_l [heads_k, heads], p_w [heads, heads_v], lens int32
        [batch] (valid rows; the query sits at the last).  Returns [batch,
        heads_v, dv] as talking_heads() does."""
        keep = []
        d = self.talking_heads_decode_desc(q, k_cache, v_cache, p_l, p_w, scale=scale,
                                           cache_layout=cache_layout, dtype=dtype,
                                           window=window, params=params, keep=keep)
        if lens is None:
            raise ValueError("lens: decode needs each sequence's valid cache rows, int32 [batch]")
        lens = A.check_lens("lens", lens, d.batch)
        call = A.Call(self, [("q", q), ("k_cache", k_cache), ("v_cache", v_cache),
                             ("p_l", p_l), ("p_w", p_w), ("lens", A.lengths_kind(lens)), ("out", out)],
                      wait_for)
        o = call.output("out", out, (d.batch, d.heads_v, d.head_dim_v), q.dtype)
        args = (call.input("q", q), call.input("k_cache", k_cache),
                call.input("v_cache", v_cache), call.input("p_l", p_l, np.float32),
                call.input("p_w", p_w, np.float32), call.input("lens", lens))
        self.check(lib.clattn_talking_heads_decode(self.handle, d, *args, o, call.events()),
                   "talking_heads_decode")
        return A.result(call, out)

    def talking_heads_append(self, k_new, v_new, pos, k_cache, v_cache, *,
                             cache_layout="bshd", dtype=None, heads=None, wait_for=None):
        """Writes n_new rows per sequence into a talking-heads cache in
        place, at rows pos[b] .. pos[b] + n_new - 1: k_new [batch, n_new,
        heads_k, dk], v_new [batch, n_new, heads_v, dv] (BSHD, the caches'
        dtype), pos int32 [batch].  heads: the logit heads of the decode
        that reads the cache (the description is checked as that decode's;
        default heads_k).  The caches must be pyopencl arrays; returns the
        call's pyopencl.Event."""
        n_new, kc = A.append_rows("talking_heads_append", k_new, v_new, k_cache, v_cache,
                                  cache_layout, "heads_k", "heads_v")
        q_stub = A.Shape((kc["batch"], kc["heads"], kc["d"]), k_cache.dtype)
        d = self._th_cache_desc(q_stub, k_cache, v_cache,
                                lambda hk, hv: hk if heads is None else A.int32("heads", heads, 1),
                                cache_layout=cache_layout, dtype=dtype)
        A.expect_shape("k_new", k_new, (d.batch, n_new, d.heads_k, d.head_dim_k))
        A.expect_shape("v_new", v_new, (d.batch, n_new, d.heads_v, d.head_dim_v))
        A.dtype_code(("k_new", "v_new", "k_cache"), (k_new, v_new, k_cache), dtype)
        if pos is None:
            raise ValueError("pos: talking_heads_append needs each sequence's first row, "
                             "int32 [batch]")
        pos = A.check_lens("pos", pos, d.batch)
        call = A.Call(self, [("k_new", k_new), ("v_new", v_new), ("pos", A.lengths_kind(pos)),
                             ("k_cache", k_cache), ("v_cache", v_cache)], wait_for)
        args = (call.input("k_new", k_new), call.input("v_new", v_new),
                call.input("pos", pos),
                call.in_place(k_cache),
                call.in_place(v_cache))
        self.check(lib.clattn_talking_heads_append(self.handle, d, n_new, *args,
                                                   call.events()),
                   "talking_heads_append")
        return call.finish(outputs=(k_cache, v_cache))
