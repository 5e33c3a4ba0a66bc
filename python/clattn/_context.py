"""clattn.Context: a clattn context on its own device or an application's
PyOpenCL queue, and the attention calls on it."""

import os

import numpy as np
import pyopencl as cl

from . import _arrays as A
from ._lib import Closable, Error, check, cstr, ffi, lib, params_struct, versioned
from ._paged import PagedCalls
from ._talking_heads import TalkingHeadsCalls
from ._tools import ToolCalls


class Context(TalkingHeadsCalls, PagedCalls, ToolCalls, Closable):
    """A clattn context.

    Context(device=None, queue=None, *, cache_dir=None, tuning_db=None,
    no_tuning=False, no_disk_cache=False, profiling=False)

    device: a device index ("P:D", or an int over all devices) or a
    case-insensitive part of its platform's or its own name; None takes
    $CLATTN_DEVICE, else the first device.  queue: an application's
    in-order pyopencl.CommandQueue, whose context the calls then share
    (device must be None)."""

    def __init__(self, device=None, queue=None, *, cache_dir=None, tuning_db=None,
                 no_tuning=False, no_disk_cache=False, profiling=False):
        self._ctx = ffi.NULL
        if queue is not None and device is not None:
            raise ValueError("device: give a device or a queue, not both")
        if queue is not None and not isinstance(queue, cl.CommandQueue):
            raise ValueError("queue: expected a pyopencl.CommandQueue, got %s"
                             % type(queue).__name__)
        keep = []
        opts = versioned("clattn_ctx_opts")
        if queue is not None:
            opts.queue = ffi.cast("cl_command_queue", queue.int_ptr)
        if device is not None:
            if isinstance(device, bool) or not isinstance(device, (int, str)):
                raise ValueError("device: expected an index or a name, got %r" % (device,))
            opts.device = cstr(keep, device)
        opts.cache_dir = cstr(keep, cache_dir)
        opts.tuning_db = cstr(keep, tuning_db)
        opts.no_tuning = int(bool(no_tuning))
        opts.no_disk_cache = int(bool(no_disk_cache))
        opts.profiling = int(bool(profiling))
        out = ffi.new("clattn_ctx **")
        status = lib.clattn_ctx_create(opts, out)
        if status != lib.CLATTN_OK:
            # No context to ask: the status names the failure.
            check(status, what="clattn.Context(device=%r)" % (device,))
        self._ctx = out[0]
        if queue is not None:
            self.queue = queue
            self.cl_context = queue.context
        else:
            self.cl_context = cl.Context.from_int_ptr(
                int(ffi.cast("intptr_t", lib.clattn_ctx_cl_context(self._ctx))), retain=True)
            self.queue = cl.CommandQueue.from_int_ptr(
                int(ffi.cast("intptr_t", lib.clattn_ctx_queue(self._ctx))), retain=True)
        self.device = self.queue.device
        self.base_align = max(1, self.device.mem_base_addr_align // 8)
        self._descs = {}
        # tune() and profile() write to and read the database the calls read.
        self.tuning_db = None if tuning_db is None else os.fspath(tuning_db)

    # ------------------------------------------------------------ lifetime
    def close(self):
        """Destroys the C context (idempotent); later calls raise Error."""
        if self._ctx != ffi.NULL:
            self.queue.finish()
            lib.clattn_ctx_destroy(self._ctx)
            self._ctx = ffi.NULL

    @property
    def handle(self):
        """The clattn_ctx * (cffi pointer) for the calls; Error once closed."""
        if self._ctx == ffi.NULL:
            raise Error(lib.CLATTN_ERR_MISUSE, "the clattn.Context is closed")
        return self._ctx

    def check(self, status, what=None):
        check(status, self._ctx, what)

    @property
    def device_name(self):
        return self.device.name.strip()

    def __repr__(self):
        return "clattn.Context(%r)" % (self.device_name,)

    # --------------------------------------------------------- parameters
    _DESCS_KEPT = 256

    def _described(self, key, build):
        """The description build(keep) makes, reused while a call's shapes,
        dtypes and options repeat: building one costs the host several times
        the C call it describes.  The library reads a description only
        during the call, so one object serves every call with its key."""
        try:
            hit = self._descs.get(key)
        except TypeError:  # an unhashable argument: built each time
            keep = []
            return build(keep), keep
        if hit is None:
            keep = []
            hit = (build(keep), keep)
            if len(self._descs) >= self._DESCS_KEPT:
                self._descs.clear()
            self._descs[key] = hit
        # (description, keep): the caller holds keep until the C call has
        # returned, whatever another thread does to the memo meanwhile.
        return hit

    # ---------------------------------------------------------- attention
    def attention_desc(self, q, k, v, *, causal=False, scale=None, q_layout="bshd",
                       kv_layout="bshd", dtype=None, window=0, softcap=0.0,
                       alibi_slopes=None, sinks=None, params=None, keep=None):
        """The clattn_attn_desc of an attention call on these arrays (their
        shapes and dtypes checked); also what explain takes."""
        keep = [] if keep is None else keep
        s = A.qkv_shapes(q, k, v, q_layout, kv_layout, dtype)
        d = versioned("clattn_attn_desc")
        d.batch, d.n_kv = s["batch"], s["n_kv"]
        d.n_q = s["q"]["n_q"]
        d.heads_q = s["q"]["heads"]
        d.heads_kv = A.agree("KV head count", [("k", s["k"]["heads"]), ("v", s["v"]["heads"])])
        d.head_dim_k, d.head_dim_v = s["head_dim_k"], s["head_dim_v"]
        d.dtype, d.q_layout, d.kv_layout = s["dtype"], s["q_layout"], s["kv_layout"]
        d.causal = int(bool(causal))
        d.params = params_struct(keep, params)
        A.set_options(d, keep, d.heads_q, scale, window, softcap, alibi_slopes, sinks)
        return d

    def attention(self, q, k, v, *, causal=False, scale=None, kv_lens=None,
                  q_layout="bshd", kv_layout="bshd", dtype=None, window=0, softcap=0.0,
                  alibi_slopes=None, sinks=None, params=None, out=None, wait_for=None):
        """Fused scaled-dot-product attention (GQA; MHA and MQA by the head
        counts): q [batch, n_q, heads_q, dk], k [batch, n_kv, heads_kv, dk],
        v [batch, n_kv, heads_kv, dv] (BSHD; 'bhsd' layouts swap the middle
        two), kv_lens int32 [batch] or None.  NumPy arrays: returns the
        output [batch, n_q, heads_q, dv] as NumPy.  pyopencl arrays: writes
        out= and returns the call's pyopencl.Event (after wait_for)."""
        d, _keep = self._described(
            ("attention", _signature(q), _signature(k), _signature(v), causal, scale,
             q_layout, kv_layout, dtype, type(window), window, softcap, _values(alibi_slopes),
             _values(sinks), params),
            lambda keep: self.attention_desc(
                q, k, v, causal=causal, scale=scale, q_layout=q_layout,
                kv_layout=kv_layout, dtype=dtype, window=window, softcap=softcap,
                alibi_slopes=alibi_slopes, sinks=sinks, params=params, keep=keep))
        if d.q_layout == lib.CLATTN_BHSD:
            oshape = (d.batch, d.heads_q, d.n_q, d.head_dim_v)
        else:
            oshape = (d.batch, d.n_q, d.heads_q, d.head_dim_v)
        kv_lens = A.check_lens("kv_lens", kv_lens, d.batch)
        call = A.Call(self, [("q", q), ("k", k), ("v", v), ("kv_lens", A.lengths_kind(kv_lens)), ("out", out)],
                      wait_for)
        o = call.output("out", out, oshape, q.dtype)
        args = (call.input("q", q), call.input("k", k), call.input("v", v),
                call.input("kv_lens", kv_lens))
        self.check(lib.clattn_attention(self.handle, d, *args, o, call.events()), "attention")
        return A.result(call, out)

    # ------------------------------------------------------------- decode
    def decode_desc(self, q, k_cache, v_cache, *, scale=None, cache_layout="bshd",
                    dtype=None, window=0, softcap=0.0, alibi_slopes=None, sinks=None,
                    params=None, keep=None):
        """The clattn_decode_desc of a decode call on these arrays."""
        keep = [] if keep is None else keep
        s = A.cache_shapes(q, k_cache, v_cache, cache_layout, dtype)
        d = versioned("clattn_decode_desc")
        d.batch, d.capacity = s["batch"], s["capacity"]
        d.heads_q = s["q"]["heads"]
        d.heads_kv = A.agree("KV head count", [("k_cache", s["k"]["heads"]),
                                               ("v_cache", s["v"]["heads"])])
        d.head_dim_k, d.head_dim_v = s["head_dim_k"], s["head_dim_v"]
        d.dtype, d.cache_layout = s["dtype"], s["cache_layout"]
        d.params = params_struct(keep, params)
        A.set_options(d, keep, d.heads_q, scale, window, softcap, alibi_slopes, sinks)
        return d

    def decode(self, q, k_cache, v_cache, lens, *, scale=None, cache_layout="bshd",
               dtype=None, window=0, softcap=0.0, alibi_slopes=None, sinks=None,
               params=None, out=None, wait_for=None):
        """One query per sequence against a KV cache (split-KV decode):
        q [batch, heads_q, dk], k_cache [batch, capacity, heads_kv, dk],
        v_cache likewise with dv ('bhsd': [batch, heads_kv, capacity, d]),
        lens int32 [batch] (valid rows).  Returns [batch, heads_q, dv] as
        attention() does."""
        d, _keep = self._described(
            ("decode", _signature(q), _signature(k_cache), _signature(v_cache), scale,
             cache_layout, dtype, type(window), window, softcap, _values(alibi_slopes), _values(sinks),
             params),
            lambda keep: self.decode_desc(
                q, k_cache, v_cache, scale=scale, cache_layout=cache_layout, dtype=dtype,
                window=window, softcap=softcap, alibi_slopes=alibi_slopes, sinks=sinks,
                params=params, keep=keep))
        if lens is None:
            raise ValueError("lens: decode needs each sequence's valid cache rows, int32 [batch]")
        lens = A.check_lens("lens", lens, d.batch)
        call = A.Call(self, [("q", q), ("k_cache", k_cache), ("v_cache", v_cache),
                             ("lens", A.lengths_kind(lens)), ("out", out)], wait_for)
        o = call.output("out", out, (d.batch, d.heads_q, d.head_dim_v), q.dtype)
        args = (call.input("q", q), call.input("k_cache", k_cache),
                call.input("v_cache", v_cache), call.input("lens", lens))
        self.check(lib.clattn_decode(self.handle, d, *args, o, call.events()), "decode")
        return A.result(call, out)

    def kv_append(self, k_new, v_new, pos, k_cache, v_cache, *, cache_layout="bshd",
                  dtype=None, heads_q=None, wait_for=None):
        """Writes n_new rows per sequence into the caches in place, at rows
        pos[b] .. pos[b] + n_new - 1: k_new [batch, n_new, heads_kv, dk],
        v_new [batch, n_new, heads_kv, dv] (BSHD, the caches' dtype), pos
        int32 [batch].  The caches must be pyopencl arrays (the cache lives
        on the device); returns the call's pyopencl.Event."""
        n_new, cs = A.append_rows("kv_append", k_new, v_new, k_cache, v_cache, cache_layout,
                                  "heads", "heads")
        heads_q = cs["heads"] if heads_q is None else A.int32("heads_q", heads_q, 1)
        q_stub = A.Shape((cs["batch"], heads_q, cs["d"]), k_cache.dtype)
        d = self.decode_desc(q_stub, k_cache, v_cache, cache_layout=cache_layout, dtype=dtype)
        A.expect_shape("k_new", k_new, (d.batch, n_new, d.heads_kv, d.head_dim_k))
        A.expect_shape("v_new", v_new, (d.batch, n_new, d.heads_kv, d.head_dim_v))
        A.dtype_code(("k_new", "v_new", "k_cache"), (k_new, v_new, k_cache), dtype)
        if pos is None:
            raise ValueError("pos: kv_append needs each sequence's first row, int32 [batch]")
        pos = A.check_lens("pos", pos, d.batch)
        call = A.Call(self, [("k_new", k_new), ("v_new", v_new), ("pos", A.lengths_kind(pos)),
                             ("k_cache", k_cache), ("v_cache", v_cache)], wait_for)
        args = (call.input("k_new", k_new), call.input("v_new", v_new),
                call.input("pos", pos), call.in_place(k_cache), call.in_place(v_cache))
        self.check(lib.clattn_kv_append(self.handle, d, n_new, *args, call.events()),
                   "kv_append")
        return call.finish(outputs=(k_cache, v_cache))


def _signature(a):
    """What of an array a description depends on (its kind, shape and
    dtype); anything else is checked when the description is built."""
    return (type(a), getattr(a, "shape", None), getattr(a, "dtype", None))


def _values(values):
    """An option's per-head array as a key: its float32 bytes (None: none;
    something that is not numbers keys nothing alike, and is refused by name
    when the description is built)."""
    if values is None:
        return None
    try:
        a = np.asarray(values, dtype=np.float32)
        return a.shape, a.tobytes()
    except (TypeError, ValueError):
        return object()
