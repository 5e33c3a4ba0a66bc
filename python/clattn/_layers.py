"""Layers (GQA, talking-heads, Optimised, Efficient, Super, SwitchHead)
created from NumPy weights, and their KV caches."""

import weakref

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import _arrays as A
from ._context import Context
from ._lib import Closable, Error, ffi, lib, versioned


def _host_weight(argname, w):
    """A weight as NumPy: a pyopencl array is refused by name."""
    if A.is_device_array(w):
        raise ValueError("%s: weights are NumPy arrays (uploaded once when the layer "
                         "is created), got a pyopencl array" % argname)
    return np.asarray(w)


def _dims(argname, w, names):
    """A weight's shape as a dict of its dimension names (ndim checked)."""
    w = _host_weight(argname, w)
    return A.shape_of(argname, w, len(names), names)


def _count(argname, value, given):
    """A size: given (checked positive), else the inferred value; a given
    size that disagrees with a weight is caught by that weight's shape."""
    if given is None:
        if value is None:
            raise ValueError("%s: required (a positive integer)" % argname)
        return value
    if isinstance(given, bool) or not isinstance(given, (int, np.integer)) or given < 1:
        raise ValueError("%s: expected a positive integer, got %r" % (argname, given))
    return int(given)


def _head_dim(wname, columns, heads, heads_name, dim_name, given):
    """A head dim: given, or the weight's columns / heads (which must then
    divide exactly)."""
    if given is not None:
        return _count(dim_name, None, given)
    if columns % heads:
        raise ValueError("%s: its %d columns are not %s (%d) * %s" % (
            wname, columns, heads_name, heads, dim_name))
    return columns // heads


class KVCache(Closable):
    """A layer's KV cache: batch sequences of at most `capacity` positions,
    on the device, owned by the library.  len(cache) is the positions each
    sequence holds; reset() empties it; close() frees it (idempotent)."""

    def __init__(self, layer, batch, capacity):
        self._cache = ffi.NULL
        # Sizes below 1 are the library's to refuse (CLATTN_ERR_SHAPE).
        self.batch = A.int32("batch", batch)
        self.capacity = A.int32("capacity", capacity)
        # The cache holds its layer, so the layer is destroyed after it.
        self.layer = layer
        out = ffi.new("clattn_kv_cache **")
        layer.context.check(
            lib.clattn_kv_cache_create(layer.handle, self.batch, self.capacity, out),
            "%s.cache(batch=%d, capacity=%d)" % (type(layer).__name__, self.batch,
                                                 self.capacity))
        self._cache = out[0]
        layer._caches.add(self)

    @property
    def handle(self):
        """The clattn_kv_cache * (cffi pointer); Error once closed."""
        if self._cache == ffi.NULL:
            raise Error(lib.CLATTN_ERR_MISUSE, "the KV cache is closed")
        return self._cache

    def __len__(self):
        return int(lib.clattn_kv_cache_len(self._cache)) if self._cache != ffi.NULL else 0

    def __bool__(self):
        # An empty cache is still a cache (`if cache:` must not read its length).
        return True

    def reset(self):
        """Empties every sequence (length 0); the memory is kept."""
        lib.clattn_kv_cache_reset(self.handle)

    def close(self):
        """Frees the cache (idempotent); later calls with it raise Error."""
        if self._cache != ffi.NULL:
            lib.clattn_kv_cache_destroy(self._cache)
            self._cache = ffi.NULL

    def __repr__(self):
        state = "closed" if self._cache == ffi.NULL else "len=%d" % len(self)
        return "clattn.KVCache(batch=%d, capacity=%d, %s)" % (self.batch, self.capacity,
                                                              state)


class _Layer(Closable):
    """What every layer shares: the weights' upload, the C layer's lifetime,
    its caches, prefill and decode.  Subclasses build the description."""

    def _create(self, ctx, weights, create, desc):
        """weights: (name, NumPy array or None, expected shape); create: the
        clattn_layer_create* function, called as create(ctx, desc, *buffers,
        out)."""
        self._layer = ffi.NULL
        self._caches = weakref.WeakSet()
        if not isinstance(ctx, Context):
            raise ValueError("ctx: expected a clattn.Context, got %s" % type(ctx).__name__)
        # The layer holds its context, so the context outlives it.
        self.context = ctx
        host = []
        for name, w, shape in weights:
            if w is None:
                host.append((name, None))
                continue
            w = _host_weight(name, w)
            A.expect_shape(name, w, shape)
            if not np.issubdtype(w.dtype, np.floating):
                raise ValueError("%s: expected floating-point weights (float32 on the "
                                 "device), got dtype %s" % (name, w.dtype))
            host.append((name, np.ascontiguousarray(w, dtype=np.float32)))
        handle = ctx.handle
        # The C layer retains these buffers; holding them too keeps the
        # weights' lifetime plain to read.
        self._weights = {}
        mems = []
        for name, arr in host:
            if arr is None:
                mems.append(ffi.NULL)
                continue
            buf = cl.Buffer(ctx.cl_context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                            hostbuf=arr)
            self._weights[name] = buf
            mems.append(ffi.cast("cl_mem", buf.int_ptr))
        out = ffi.new("clattn_layer **")
        ctx.check(create(handle, desc, *mems, out), type(self).__name__)
        self._layer = out[0]

    # ------------------------------------------------------------ lifetime
    @property
    def handle(self):
        """The clattn_layer * (cffi pointer); Error once the layer or its
        context is closed."""
        if self._layer == ffi.NULL:
            raise Error(lib.CLATTN_ERR_MISUSE, "the %s is closed" % type(self).__name__)
        _ = self.context.handle  # a closed context raises Error here
        return self._layer

    def close(self):
        """Destroys the layer (idempotent), its open caches first."""
        if self._layer == ffi.NULL:
            return
        for cache in list(self._caches):
            cache.close()
        if self.context._ctx != ffi.NULL:
            # Calls still in flight read the layer's scratch buffers.
            self.context.queue.finish()
        lib.clattn_layer_destroy(self._layer)
        self._layer = ffi.NULL
        self._weights = {}

    # --------------------------------------------------------------- calls
    def cache(self, batch, capacity):
        """A KV cache of this layer for `batch` sequences of at most
        `capacity` positions (KVCache)."""
        return KVCache(self, batch, capacity)

    def _check_x(self, x, ndim, names):
        shape = A.shape_of("x", x, ndim, names)
        if np.dtype(x.dtype) != np.float32:
            raise ValueError("x: the layers compute in float32, got dtype %s" % x.dtype)
        if shape["d_model"] != self.d_model:
            raise ValueError("x: expected d_model %d (the weights'), got shape %s"
                             % (self.d_model, tuple(x.shape)))
        return shape

    def _check_cache(self, cache, batch):
        if not isinstance(cache, KVCache):
            raise ValueError("cache: expected a KVCache from this layer's cache(), got %s"
                             % type(cache).__name__)
        if cache.layer is not self:
            raise ValueError("cache: a cache of another layer")
        if batch != cache.batch:
            raise ValueError("x: batch %d, but the cache holds %d sequences"
                             % (batch, cache.batch))
        return cache.handle

    def prefill(self, x, *, cache=None, causal=True, out=None, wait_for=None):
        """The layer over n new positions per sequence: x [batch, n,
        d_model] -> y [batch, n, d_model], float32.  With a cache, their K/V
        are appended after its current length and the queries attend to
        every cached position.  NumPy x: returns y as NumPy.  pyopencl x:
        writes out= and returns the call's pyopencl.Event (after wait_for)."""
        handle = self.handle
        s = self._check_x(x, 3, ("batch", "n", "d_model"))
        c = ffi.NULL if cache is None else self._check_cache(cache, s["batch"])
        call = A.Call(self.context, [("x", x), ("out", out)], wait_for)
        # out first: a refused out= must leave nothing enqueued (a
        # misaligned x is copied when taken).
        y = call.output("out", out, tuple(x.shape), np.float32)
        xb = call.input("x", x)
        self.context.check(lib.clattn_layer_prefill(handle, c, s["batch"], s["n"],
                                                    int(bool(causal)), xb, y, call.events()),
                           "%s.prefill" % type(self).__name__)
        return A.result(call, out)

    def decode(self, x, cache, *, out=None, wait_for=None):
        """One new position per sequence: x [batch, d_model] -> y [batch,
        d_model]; its K/V are appended to the cache (batch sequences) and it
        attends causally to all of it.  Returns as prefill() does."""
        handle = self.handle
        s = self._check_x(x, 2, ("batch", "d_model"))
        if cache is None:
            raise ValueError("cache: decode appends to a KV cache: pass layer.cache(...)")
        c = self._check_cache(cache, s["batch"])
        call = A.Call(self.context, [("x", x), ("out", out)], wait_for)
        # out first: a refused out= must leave nothing enqueued (a
        # misaligned x is copied when taken).
        y = call.output("out", out, tuple(x.shape), np.float32)
        xb = call.input("x", x)
        self.context.check(lib.clattn_layer_decode(handle, c, xb, y, call.events()),
                           "%s.decode" % type(self).__name__)
        return A.result(call, out)

    def __repr__(self):
        state = " closed" if self._layer == ffi.NULL else ""
        return "clattn.%s(d_model=%d%s)" % (type(self).__name__, self.d_model, state)


class PagedPool:
    """A paged KV pool the application owns, for GQALayer.step_paged
    (clattn_paged_pool): k_pool [num_blocks, page_size, heads_kv,
    head_dim_k] and v_pool [num_blocks, page_size, heads_kv, head_dim_v],
    pyopencl arrays of float32, or of int8 with k_scale / v_scale float32
    [num_blocks, page_size, heads_kv].  The steps write the rows they append
    in place; the library never allocates, grows or keeps a pool.
    unchecked: the block tables and lengths are not read back and checked
    (no blocking read per step, no error either)."""

    def __init__(self, k_pool, v_pool, *, k_scale=None, v_scale=None, unchecked=False):
        for name, a in (("k_pool", k_pool), ("v_pool", v_pool), ("k_scale", k_scale),
                        ("v_scale", v_scale)):
            if a is not None and not A.is_device_array(a):
                raise ValueError("%s: a pool lives on the device and is written in place: "
                                 "pass a pyopencl array" % name)
        names = ("num_blocks", "page_size", "heads_kv", "d")
        ks = A.shape_of("k_pool", k_pool, 4, names)
        vs = A.shape_of("v_pool", v_pool, 4, names)
        for dim in names[:3]:
            A.agree(dim, [("k_pool", ks[dim]), ("v_pool", vs[dim])])
        kinds = {np.dtype(k_pool.dtype), np.dtype(v_pool.dtype)}
        if kinds == {np.dtype(np.int8)}:
            for name, sc in (("k_scale", k_scale), ("v_scale", v_scale)):
                if sc is None:
                    raise ValueError("%s: an int8 pool needs its float32 scales "
                                     "[num_blocks, page_size, heads_kv]" % name)
                A.expect_shape(name, sc, (ks["num_blocks"], ks["page_size"], ks["heads_kv"]))
                if np.dtype(sc.dtype) != np.float32:
                    raise ValueError("%s: expected float32, got %s" % (name, sc.dtype))
            self.cache_dtype = lib.CLATTN_I8
        elif kinds == {np.dtype(np.float32)}:
            for name, sc in (("k_scale", k_scale), ("v_scale", v_scale)):
                if sc is not None:
                    raise ValueError("%s: scales are an int8 pool's; this pool is float32"
                                     % name)
            self.cache_dtype = 0
        else:
            raise ValueError("k_pool, v_pool: both float32 or both int8, got %s and %s"
                             % (k_pool.dtype, v_pool.dtype))
        self.k_pool, self.v_pool, self.k_scale, self.v_scale = k_pool, v_pool, k_scale, v_scale
        self.num_blocks, self.page_size = ks["num_blocks"], ks["page_size"]
        self.heads_kv, self.head_dim_k, self.head_dim_v = ks["heads_kv"], ks["d"], vs["d"]
        self.unchecked = bool(unchecked)

    @classmethod
    def zeros(cls, queue, num_blocks, page_size, heads_kv, head_dim_k, head_dim_v=None, *,
              int8=False, unchecked=False):
        """A zeroed pool on queue's device (float32, or int8 with scales)."""
        dv = head_dim_k if head_dim_v is None else head_dim_v
        dt = np.int8 if int8 else np.float32
        k = cla.zeros(queue, (num_blocks, page_size, heads_kv, head_dim_k), dt)
        v = cla.zeros(queue, (num_blocks, page_size, heads_kv, dv), dt)
        scales = ((cla.zeros(queue, (num_blocks, page_size, heads_kv), np.float32),
                   cla.zeros(queue, (num_blocks, page_size, heads_kv), np.float32))
                  if int8 else (None, None))
        return cls(k, v, k_scale=scales[0], v_scale=scales[1], unchecked=unchecked)

    def arrays(self):
        """The pool's pyopencl arrays (its scales only when int8)."""
        return ((self.k_pool, self.v_pool) +
                ((self.k_scale, self.v_scale) if self.cache_dtype else ()))

    def __repr__(self):
        return ("clattn.PagedPool(num_blocks=%d, page_size=%d, heads_kv=%d, head_dims=%d/%d, "
                "%s)" % (self.num_blocks, self.page_size, self.heads_kv, self.head_dim_k,
                         self.head_dim_v, "int8" if self.cache_dtype else "float32"))


class GQALayer(_Layer):
    """y = Attention(x W_q, x W_k, x W_v) W_o over grouped query heads
    (MHA: heads_q == heads_kv; MQA: heads_kv == 1), float32:
    w_q [d_model, heads_q*head_dim_k], w_k [d_model, heads_kv*head_dim_k],
    w_v [d_model, heads_kv*head_dim_v], w_o [heads_q*head_dim_v, d_model]
    (head h: columns h*dim .. h*dim+dim-1).  Head dims are inferred from
    w_q and w_v when not given; scale None means 1/sqrt(head_dim_k)."""

    def __init__(self, ctx, w_q, w_k, w_v, w_o, *, heads_q, heads_kv, head_dim_k=None,
                 head_dim_v=None, scale=None, window=0, softcap=0.0, alibi_slopes=None,
                 sinks=None):
        self._layer = ffi.NULL
        q = _dims("w_q", w_q, ("d_model", "heads_q*head_dim_k"))
        v = _dims("w_v", w_v, ("d_model", "heads_kv*head_dim_v"))
        self.heads_q = _count("heads_q", None, heads_q)
        self.heads_kv = _count("heads_kv", None, heads_kv)
        self.d_model = q["d_model"]
        self.head_dim_k = _head_dim("w_q", q["heads_q*head_dim_k"], self.heads_q, "heads_q",
                                    "head_dim_k", head_dim_k)
        self.head_dim_v = _head_dim("w_v", v["heads_kv*head_dim_v"], self.heads_kv,
                                    "heads_kv", "head_dim_v", head_dim_v)
        D, hq, hkv = self.d_model, self.heads_q, self.heads_kv
        dk, dv = self.head_dim_k, self.head_dim_v
        keep = []
        d = versioned("clattn_layer_desc")
        d.d_model, d.heads_q, d.heads_kv, d.head_dim_k, d.head_dim_v = D, hq, hkv, dk, dv
        A.set_options(d, keep, hq, scale, window, softcap, alibi_slopes, sinks)
        self._create(ctx, [("w_q", w_q, (D, hq * dk)), ("w_k", w_k, (D, hkv * dk)),
                           ("w_v", w_v, (D, hkv * dv)), ("w_o", w_o, (hq * dv, D))],
                     lib.clattn_layer_create, d)

    def step_paged(self, x, pool, block_table, kv_lens, *, causal=True, out=None,
                   wait_for=None):
        """One step over a paged pool the application owns
        (clattn_layer_step_paged): n new positions for each of batch
        sequences, x [batch, n, d_model] -> out [batch, n, d_model] (n == 1
        a decode step, n > 1 a prefill chunk).  pool: a PagedPool of this
        layer's heads; block_table int32 [batch, pool's max_blocks] names
        each sequence's pages; kv_lens int32 [batch] are the lengths after
        the step (query i at kv_lens[b] - n + i).  The K and V rows are
        appended into the pages, then the queries attend.  x, out= and the
        pool are pyopencl arrays (the tables NumPy or pyopencl); returns
        the step's pyopencl.Event."""
        handle = self.handle
        if not isinstance(pool, PagedPool):
            raise ValueError("pool: expected a clattn.PagedPool, got %s" % type(pool).__name__)
        for name, a in (("x", x), ("out", out)):
            if not A.is_device_array(a):
                raise ValueError("%s: a step over a paged pool (on the device) takes "
                                 "pyopencl arrays" % name)
        s = self._check_x(x, 3, ("batch", "n", "d_model"))
        for what, mine, its in (("heads_kv", self.heads_kv, pool.heads_kv),
                                ("head_dim_k", self.head_dim_k, pool.head_dim_k),
                                ("head_dim_v", self.head_dim_v, pool.head_dim_v)):
            if mine != its:
                raise ValueError("pool: %s %d, but the layer's is %d" % (what, its, mine))
        if block_table is None or kv_lens is None:
            raise ValueError("block_table, kv_lens: a paged step needs each sequence's "
                             "pages and its length after the step")
        ts = A.shape_of("block_table", block_table, 2, ("batch", "max_blocks"))
        table = A.check_ints("block_table", block_table, (s["batch"], ts["max_blocks"]))
        lens = A.check_lens("kv_lens", kv_lens, s["batch"])
        p = versioned("clattn_paged_pool")
        p.num_blocks, p.page_size = pool.num_blocks, pool.page_size
        p.max_blocks = ts["max_blocks"]
        p.cache_dtype = pool.cache_dtype
        p.unchecked = int(pool.unchecked)
        named = [("x", x), ("out", out), ("block_table", A.lengths_kind(table)),
                 ("kv_lens", A.lengths_kind(lens))]
        named += [(n, a) for n, a in zip(("k_pool", "v_pool", "k_scale", "v_scale"),
                                         pool.arrays())]
        call = A.Call(self.context, named, wait_for)
        y = call.output("out", out, tuple(x.shape), np.float32)
        mems = [call.in_place(a) for a in pool.arrays()]
        p.k_pool, p.v_pool = mems[0], mems[1]
        if pool.cache_dtype:
            p.k_scale, p.v_scale = mems[2], mems[3]
        xb = call.input("x", x)
        tb, lb = call.input("block_table", table), call.input("kv_lens", lens)
        self.context.check(lib.clattn_layer_step_paged(handle, p, s["batch"], s["n"],
                                                       int(bool(causal)), tb, lb, xb, y,
                                                       call.events()),
                           "GQALayer.step_paged")
        return call.finish(outputs=(out,) + pool.arrays())


class TalkingHeadsLayer(_Layer):
    """y = TH(x W_q, x W_k, x W_v; P_l, P_w) W_o, float32: w_q, w_k
    [d_model, heads_k*head_dim_k], w_v [d_model, heads_v*head_dim_v], w_o
    [heads_v*head_dim_v, d_model], p_l [heads_k, heads] (mixes the logits),
    p_w [heads, heads_v] (mixes the weights).  The head counts are read
    from p_l and p_w, the head dims from w_q and w_v, when not given.  Of
    the attention options the window alone is taken (the library refuses
    the others)."""

    def __init__(self, ctx, w_q, w_k, w_v, w_o, p_l, p_w, *, heads_k=None, heads=None,
                 heads_v=None, head_dim_k=None, head_dim_v=None, scale=None, window=0,
                 softcap=0.0, alibi_slopes=None, sinks=None):
        self._layer = ffi.NULL
        pl = _dims("p_l", p_l, ("heads_k", "heads"))
        pw = _dims("p_w", p_w, ("heads", "heads_v"))
        q = _dims("w_q", w_q, ("d_model", "heads_k*head_dim_k"))
        v = _dims("w_v", w_v, ("d_model", "heads_v*head_dim_v"))
        self.heads_k = _count("heads_k", pl["heads_k"], heads_k)
        self.heads = _count("heads", pl["heads"], heads)
        self.heads_v = _count("heads_v", pw["heads_v"], heads_v)
        self.d_model = q["d_model"]
        self.head_dim_k = _head_dim("w_q", q["heads_k*head_dim_k"], self.heads_k, "heads_k",
                                    "head_dim_k", head_dim_k)
        self.head_dim_v = _head_dim("w_v", v["heads_v*head_dim_v"], self.heads_v, "heads_v",
                                    "head_dim_v", head_dim_v)
        D, hk, h, hv = self.d_model, self.heads_k, self.heads, self.heads_v
        dk, dv = self.head_dim_k, self.head_dim_v
        keep = []
        d = versioned("clattn_th_layer_desc")
        d.d_model, d.heads_k, d.heads, d.heads_v = D, hk, h, hv
        d.head_dim_k, d.head_dim_v = dk, dv
        A.set_options(d, keep, h, scale, window, softcap, alibi_slopes, sinks)
        self._create(ctx, [("w_q", w_q, (D, hk * dk)), ("w_k", w_k, (D, hk * dk)),
                           ("w_v", w_v, (D, hv * dv)), ("w_o", w_o, (hv * dv, D)),
                           ("p_l", p_l, (hk, h)), ("p_w", p_w, (h, hv))],
                     lib.clattn_layer_create_talking_heads, d)


class _HosseiniLayer(_Layer):
    """Hosseini & Hosseini's layers: `heads` heads of width d_model/heads,
    head i reading channel slice i of x; square weights [d_model,
    d_model]."""

    def _hh(self, ctx, weights, heads, max_len, create, scale, window, softcap,
            alibi_slopes, sinks):
        first = weights[0]
        q = _dims(first[0], first[1], ("d_model", "d_model"))
        self.d_model = q["d_model"]
        self.heads = _count("heads", None, heads)
        if self.d_model % self.heads:
            raise ValueError("heads: %d does not divide d_model %d" % (self.heads,
                                                                      self.d_model))
        self.head_dim = self.d_model // self.heads
        keep = []
        d = versioned("clattn_hh_layer_desc")
        d.d_model, d.heads, d.max_len = self.d_model, self.heads, max_len
        A.set_options(d, keep, self.heads, scale, window, softcap, alibi_slopes, sinks)
        self._create(ctx, weights, create, d)


class OptimisedLayer(_HosseiniLayer):
    """Optimised attention: Q = x W_q, K = x W_k, V_i = X_i; y = [H_1 ..
    H_h] W_o.  w_q, w_k, w_o [d_model, d_model]; scale None means
    1/sqrt(d_model/heads)."""

    def __init__(self, ctx, w_q, w_k, w_o, *, heads, scale=None, window=0, softcap=0.0,
                 alibi_slopes=None, sinks=None):
        self._layer = ffi.NULL
        D = _dims("w_q", w_q, ("d_model", "d_model"))["d_model"]
        self._hh(ctx, [("w_q", w_q, (D, D)), ("w_k", w_k, (D, D)), ("w_o", w_o, (D, D))],
                 heads, 0, lib.clattn_layer_create_optimised, scale, window, softcap,
                 alibi_slopes, sinks)


class EfficientLayer(_HosseiniLayer):
    """Efficient attention: Q = x W_q, K_i = V_i = X_i; y = [H_1 .. H_h]
    W_o.  w_q, w_o [d_model, d_model]."""

    def __init__(self, ctx, w_q, w_o, *, heads, scale=None, window=0, softcap=0.0,
                 alibi_slopes=None, sinks=None):
        self._layer = ffi.NULL
        D = _dims("w_q", w_q, ("d_model", "d_model"))["d_model"]
        self._hh(ctx, [("w_q", w_q, (D, D)), ("w_o", w_o, (D, D))], heads, 0,
                 lib.clattn_layer_create_efficient, scale, window, softcap, alibi_slopes,
                 sinks)


class SuperLayer(_HosseiniLayer):
    """Super attention: Q = x W_q, K_i = X_i, V_i = W_a X_i (W_a mixes
    positions, shared by the heads: V'[t] = sum_s W_a[t, s] X[s], s <= t
    when causal); y = [H_1 .. H_h] W_o.  w_q, w_o [d_model, d_model], w_a
    [max_len, max_len] (max_len, the longest sequence, read from w_a when
    not given)."""

    def __init__(self, ctx, w_q, w_a, w_o, *, heads, max_len=None, scale=None, window=0,
                 softcap=0.0, alibi_slopes=None, sinks=None):
        self._layer = ffi.NULL
        D = _dims("w_q", w_q, ("d_model", "d_model"))["d_model"]
        a = _dims("w_a", w_a, ("max_len", "max_len"))
        self.max_len = _count("max_len", a["max_len"], max_len)
        L = self.max_len
        self._hh(ctx, [("w_q", w_q, (D, D)), ("w_a", w_a, (L, L)), ("w_o", w_o, (D, D))],
                 heads, L, lib.clattn_layer_create_super, scale, window, softcap,
                 alibi_slopes, sinks)


class SwitchHeadLayer(_Layer):
    """SwitchHead: attention whose value and output projections mix
    `experts` experts per head, the top-k by sigmoid gates, float32:
    w_q, w_k [d_model, heads*head_dim], w_v [heads, experts, d_model,
    head_dim], w_o [heads, experts, head_dim, d_model], w_s, w_d [d_model,
    heads*experts] (column h*experts + e; w_s may be None with one expert).
    heads, head_dim and experts are read from w_v when not given."""

    def __init__(self, ctx, w_q, w_k, w_v, w_o, w_s, w_d, *, topk, heads=None,
                 head_dim=None, experts=None, scale=None, window=0, softcap=0.0,
                 alibi_slopes=None, sinks=None):
        self._layer = ffi.NULL
        v = _dims("w_v", w_v, ("heads", "experts", "d_model", "head_dim"))
        self.heads = _count("heads", v["heads"], heads)
        self.experts = _count("experts", v["experts"], experts)
        self.head_dim = _count("head_dim", v["head_dim"], head_dim)
        self.d_model = v["d_model"]
        self.topk = _count("topk", None, topk)
        if self.topk > self.experts:
            raise ValueError("topk: %d is more than the %d experts" % (self.topk,
                                                                      self.experts))
        if w_s is None and self.experts != 1:
            raise ValueError("w_s: the value gates are needed with %d experts"
                             % self.experts)
        D, H, E, dh = self.d_model, self.heads, self.experts, self.head_dim
        keep = []
        d = versioned("clattn_switchhead_layer_desc")
        d.d_model, d.heads, d.head_dim, d.experts, d.topk = D, H, dh, E, self.topk
        A.set_options(d, keep, H, scale, window, softcap, alibi_slopes, sinks)
        self._create(ctx, [("w_q", w_q, (D, H * dh)), ("w_k", w_k, (D, H * dh)),
                           ("w_v", w_v, (H, E, D, dh)), ("w_o", w_o, (H, E, dh, D)),
                           ("w_s", w_s, (D, H * E)), ("w_d", w_d, (D, H * E))],
                     lib.clattn_layer_create_switchhead, d)
