"""Arguments as the C API takes them: NumPy arrays uploaded and read back,
PyOpenCL arrays passed as their buffers, and every shape and dtype checked
before anything is enqueued."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ._lib import ffi, lib

DTYPES = {"f32": lib.CLATTN_F32, "f16": lib.CLATTN_F16, "bf16": lib.CLATTN_BF16}
LAYOUTS = {"bshd": lib.CLATTN_BSHD, "bhsd": lib.CLATTN_BHSD}


def is_device_array(a):
    return isinstance(a, cla.Array)


def check_array(argname, a):
    """Refuses what is not an array (a list, a scalar) by name."""
    if any(getattr(a, attr, None) is None for attr in ("ndim", "shape", "dtype")):
        raise ValueError("%s: expected a NumPy array or a pyopencl.array.Array, got %s"
                         % (argname, type(a).__name__))


def dtype_code(name, arrays, dtype):
    """The clattn dtype of the named arrays: float32, float16, or bfloat16
    (ml_dtypes' bfloat16, or uint16 with dtype="bf16"); all alike."""
    kinds = set()
    for argname, a in zip(name, arrays):
        check_array(argname, a)
        dt = np.dtype(a.dtype)
        if dt == np.float32:
            kind = "f32"
        elif dt == np.float16:
            kind = "f16"
        elif dt.name == "bfloat16" or (dt == np.uint16 and dtype == "bf16"):
            kind = "bf16"
        else:
            raise ValueError(
                "%s: dtype %s is not one clattn computes (float32, float16, "
                "or bfloat16 as ml_dtypes.bfloat16 or uint16 with "
                "dtype='bf16')" % (argname, dt))
        kinds.add((kind, argname))
    found = {k for k, _ in kinds}
    if len(found) > 1:
        raise ValueError("%s: the arrays must share one dtype, got %s" % (
            ", ".join(name), ", ".join("%s %s" % (n, k) for k, n in sorted(kinds))))
    kind = found.pop()
    if dtype is not None and dtype != kind:
        if dtype not in DTYPES:
            raise ValueError("dtype: %r is not one of %s" % (dtype, sorted(DTYPES)))
        raise ValueError("dtype: %r given, but the arrays are %s" % (dtype, kind))
    return DTYPES[kind], kind


def layout_code(argname, value):
    try:
        return LAYOUTS[str(value).lower()]
    except KeyError:
        raise ValueError("%s: %r is not one of 'bshd', 'bhsd'" % (argname, value)) from None


def shape_of(argname, a, ndim, names):
    """The array's shape as a dict of the given dimension names."""
    check_array(argname, a)
    if a.ndim != ndim:
        raise ValueError("%s: expected %d dimensions [%s], got shape %s" % (
            argname, ndim, ", ".join(names), tuple(a.shape)))
    return dict(zip(names, (int(s) for s in a.shape)))


def expect_shape(argname, a, want):
    # Both tuples of ints compare equal whatever integer types they hold.
    if tuple(a.shape) != tuple(want):
        raise ValueError("%s: expected shape %s, got %s" % (
            argname, tuple(want), tuple(a.shape)))


def agree(what, values):
    """values: (argname, value) pairs that must be equal; the message names
    the first argument that differs from the first one."""
    first_name, first = values[0]
    for name, v in values[1:]:
        if v != first:
            raise ValueError("%s: %s %s, but %s's is %s" % (name, what, v, first_name, first))
    return first


def qkv_shapes(q, k, v, q_layout, kv_layout, dtype):
    """What the q, k, v of a prefill-shaped call say, checked: their dtype
    code, the two layout codes, each array's dims by name ("batch", "n_q"
    or "n", "heads", "dk" or "d"), and the sizes they must share: batch,
    n_kv, head_dim_k (q with k) and head_dim_v."""
    dt, _ = dtype_code(("q", "k", "v"), (q, k, v), dtype)
    ql = layout_code("q_layout", q_layout)
    kl = layout_code("kv_layout", kv_layout)
    qn = ("batch", "heads", "n_q", "dk") if ql == lib.CLATTN_BHSD else ("batch", "n_q", "heads", "dk")
    kn = ("batch", "heads", "n", "d") if kl == lib.CLATTN_BHSD else ("batch", "n", "heads", "d")
    qs = shape_of("q", q, 4, qn)
    ks = shape_of("k", k, 4, kn)
    vs = shape_of("v", v, 4, kn)
    return dict(
        dtype=dt, q_layout=ql, kv_layout=kl, q=qs, k=ks, v=vs,
        batch=agree("batch size", [("q", qs["batch"]), ("k", ks["batch"]), ("v", vs["batch"])]),
        n_kv=agree("key count", [("k", ks["n"]), ("v", vs["n"])]),
        head_dim_k=agree("key head dim", [("q", qs["dk"]), ("k", ks["d"])]),
        head_dim_v=vs["d"])


def host_floats(argname, values, count):
    """An optional host float32[count] array for an option (cffi pointer,
    owner), NULL for None."""
    if values is None:
        return ffi.NULL, None
    try:
        arr = np.ascontiguousarray(np.asarray(values, dtype=np.float32))
    except (TypeError, ValueError):
        raise ValueError("%s: expected %d numbers (one per query head), got %s"
                         % (argname, count, type(values).__name__)) from None
    if arr.shape != (count,):
        raise ValueError("%s: expected %d values (one per query head), got shape %s"
                         % (argname, count, arr.shape))
    return ffi.cast("const float *", ffi.from_buffer(arr)), arr


# cffi types looked up once: a call's host time is the binding's budget.
_MEM = ffi.typeof("cl_mem")
_EVENT = ffi.typeof("cl_event")
_EVENT_ARRAY = ffi.typeof("cl_event[]")
_EVENT_SLOT = ffi.typeof("cl_event *")
_EVENTS = ffi.typeof("clattn_events *")
_EVENTS_SIZE = ffi.sizeof("clattn_events")


class Call:
    """The buffers of one call: which path (NumPy or PyOpenCL), the events
    to wait for, temporaries that must outlive the enqueue, and the copies
    back into PyOpenCL outputs that could not be passed as they are.

    Every check that can refuse an argument runs before the first enqueue:
    the caller takes outputs (call.output) before inputs, and inputs copy
    into temporaries only once every argument has been accepted."""

    def __init__(self, context, arrays, wait_for):
        self.context = context
        self.queue = context.queue
        context.handle  # a closed Context raises before anything is made
        # One pass over the arguments: a call's host time is the binding's
        # budget (bench/python_overhead.py).
        try:
            self.wait = [] if wait_for is None else list(wait_for)
        except TypeError:
            raise ValueError("wait_for: expected a list of pyopencl events, got %s"
                             % type(wait_for).__name__) from None
        n_given = len(self.wait)
        device = numpy = 0
        context_ptr = None
        for name, a in arrays:
            if a is None:
                continue
            if not isinstance(a, (cla.Array, np.ndarray)):
                check_array(name, a)  # (a duck array passes)
            # OpenCL has no empty buffer, and an empty pyopencl array has none.
            if 0 in a.shape:
                raise ValueError("%s: empty array (shape %s)" % (name, tuple(a.shape)))
            if not isinstance(a, cla.Array):
                numpy += 1
                continue
            device += 1
            if context_ptr is None:
                context_ptr = context.cl_context.int_ptr
            if a.context.int_ptr != context_ptr:
                raise ValueError("%s: the array belongs to another OpenCL context "
                                 "than this clattn.Context's" % name)
            if not a.flags.c_contiguous:
                raise ValueError(
                    "%s: a strided pyopencl array is not taken (the kernels read "
                    "dense rows); pass a C-contiguous array" % name)
            if not isinstance(a.base_data, cl.MemoryObjectHolder):
                raise ValueError("%s: an SVM-backed pyopencl array is not taken; pass one "
                                 "allocated as a buffer" % name)
            self.wait.extend(a.events)
        if device and numpy:
            raise ValueError(
                "%s: pass all NumPy arrays or all pyopencl.array.Array, not a mix"
                % ", ".join(n for n, a in arrays if a is not None))
        self.device = device > 0
        if wait_for is not None:
            if not self.device:
                raise ValueError("wait_for: only calls on pyopencl arrays are asynchronous")
            for e in self.wait[:n_given]:
                if not isinstance(e, cl.Event):
                    raise ValueError("wait_for: expected pyopencl events, got %s"
                                     % type(e).__name__)
        self.keep = []
        self.copy_back = []
        self.read_back = []
        self._slot = None

    def _wait_list(self):
        return [e for e in self.wait if e is not None]

    def input(self, name, a, host_dtype=None):
        """A cl_mem for an input (None: NULL)."""
        if a is None:
            return ffi.NULL
        if self.device and isinstance(a, cla.Array):
            return self._device_buffer(a, output=False)
        # NumPy (in a device call, only host lengths: see lengths_kind).
        arr = np.ascontiguousarray(a if host_dtype is None else np.asarray(a, host_dtype))
        buf = cl.Buffer(self.context.cl_context,
                        cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=arr)
        self.keep.append(buf)
        return ffi.cast(_MEM, buf.int_ptr)

    def check_output(self, name, out, shape, dtype):
        """Refuses an unsuitable out= (ValueError naming it); no enqueue."""
        if self.device:
            if out is None:
                raise ValueError("%s: a call on pyopencl arrays writes into %s=, "
                                 "a pyopencl array of shape %s and dtype %s"
                                 % (name, name, tuple(shape), np.dtype(dtype)))
            expect_shape(name, out, shape)
            if np.dtype(out.dtype) != np.dtype(dtype):
                raise ValueError("%s: dtype %s, expected %s" % (name, out.dtype, np.dtype(dtype)))
        elif out is not None:
            if not isinstance(out, np.ndarray):
                raise ValueError("%s: expected a NumPy array like the inputs" % name)
            expect_shape(name, out, shape)
            if out.dtype != np.dtype(dtype) or not out.flags.c_contiguous or not out.flags.writeable:
                raise ValueError("%s: expected a writable C-contiguous %s array"
                                 % (name, np.dtype(dtype)))

    def output(self, name, out, shape, dtype):
        """A cl_mem for an output: `out` itself (PyOpenCL), else a device
        buffer read back into a NumPy array (out, or a new one) after the
        call's event."""
        self.check_output(name, out, shape, dtype)
        if self.device:
            return self._device_buffer(out, output=True, copy_in=False)
        host = out if out is not None else np.empty(shape, dtype)
        buf = cl.Buffer(self.context.cl_context, cl.mem_flags.READ_WRITE, host.nbytes)
        self.keep.append(buf)
        self.read_back.append((host, buf))
        return ffi.cast(_MEM, buf.int_ptr)

    def in_place(self, a):
        """A cl_mem for a pyopencl array the call reads and writes (a KV
        cache): a misaligned one is copied both ways."""
        return self._device_buffer(a, output=True)

    def _device_buffer(self, a, output, copy_in=True):
        """A cl_mem for a pyopencl array; output: the call writes it;
        copy_in=False: the call writes every element (a misaligned array's
        old contents need not reach its temporary)."""
        base = a.base_data
        self.keep.append(a)
        if a.offset == 0:
            return ffi.cast(_MEM, base.int_ptr)
        if a.offset % self.context.base_align == 0:
            # A sub-buffer is the array's own memory at its offset; the
            # runtime keeps it alive for the commands that use it.
            # A pool's PooledBuffer has no get_sub_region: view its cl_mem.
            region = (base if isinstance(base, cl.Buffer)
                      else cl.Buffer.from_int_ptr(base.int_ptr, retain=True))
            sub = region.get_sub_region(a.offset, a.nbytes)
            self.keep.append(sub)
            return ffi.cast(_MEM, sub.int_ptr)
        # An offset the device cannot start a buffer at: the array is copied
        # into a temporary (and back, for an output) on the same queue; the
        # runtime keeps the temporary alive until those commands complete.
        tmp = cl.Buffer(self.context.cl_context, cl.mem_flags.READ_WRITE, a.nbytes)
        self.keep.append(tmp)
        if output:
            self.copy_back.append((a, tmp))
        if copy_in:
            ev = cl.enqueue_copy(self.queue, tmp, base, byte_count=a.nbytes,
                                 src_offset=a.offset, wait_for=self._wait_list())
            # The copy waited for everything before it; the call waits for it.
            self.wait = [ev]
        return ffi.cast(_MEM, tmp.int_ptr)

    def events(self):
        """A clattn_events waiting for this call's events, with an out slot;
        the cffi objects are kept alive by this Call."""
        ev = ffi.new(_EVENTS)
        ev.size = _EVENTS_SIZE
        waits = self._wait_list()
        if waits:
            arr = ffi.new(_EVENT_ARRAY, [ffi.cast(_EVENT, e.int_ptr) for e in waits])
            self.keep.append(arr)
            ev.num_wait = len(waits)
            ev.wait = arr
        slot = ffi.new(_EVENT_SLOT)
        self.keep.append(slot)
        ev.out = slot
        self.keep.append(ev)
        self._slot = slot
        return ev

    def finish(self, outputs=()):
        """After a successful enqueue: the call's event owned by Python (the
        reference the C call gave us, not retained again); PyOpenCL outputs
        get it (after their copies back) and it is returned; NumPy outputs
        are read back once it completes and returned."""
        event = cl.Event.from_int_ptr(int(ffi.cast("intptr_t", self._slot[0])), retain=False)
        if self.device:
            for a, tmp in self.copy_back:
                event = cl.enqueue_copy(self.queue, a.base_data, tmp, byte_count=a.nbytes,
                                        dst_offset=a.offset, wait_for=[event])
            for a in outputs:
                a.add_event(event)
            return event
        results = []
        for host, buf in self.read_back:
            cl.enqueue_copy(self.queue, host, buf, wait_for=[event], is_blocking=True)
            results.append(host)
        return results


def cache_shapes(q, k_cache, v_cache, cache_layout, dtype):
    """What the q and caches of a decode-shaped call say, checked: the
    dtype and layout codes, each array's dims by name, and the sizes they
    share: batch, capacity, head_dim_k (q with k_cache) and head_dim_v."""
    dt, _ = dtype_code(("q", "k_cache", "v_cache"), (q, k_cache, v_cache), dtype)
    layout = layout_code("cache_layout", cache_layout)
    cn = (("batch", "heads", "capacity", "d") if layout == lib.CLATTN_BHSD
          else ("batch", "capacity", "heads", "d"))
    qs = shape_of("q", q, 3, ("batch", "heads", "dk"))
    ks = shape_of("k_cache", k_cache, 4, cn)
    vs = shape_of("v_cache", v_cache, 4, cn)
    return dict(
        dtype=dt, cache_layout=layout, q=qs, k=ks, v=vs,
        batch=agree("batch size", [("q", qs["batch"]), ("k_cache", ks["batch"]),
                                   ("v_cache", vs["batch"])]),
        capacity=agree("cache capacity", [("k_cache", ks["capacity"]),
                                          ("v_cache", vs["capacity"])]),
        head_dim_k=agree("key head dim", [("q", qs["dk"]), ("k_cache", ks["d"])]),
        head_dim_v=vs["d"])


def append_rows(what, k_new, v_new, k_cache, v_cache, cache_layout, heads_k, heads_v):
    """The checks an append makes before its description: both caches
    pyopencl arrays (it writes them in place), k_new and v_new 4-D with one
    row count (their head dims named heads_k, heads_v).  Returns n_new and
    k_cache's dims by name (batch, heads, capacity, d), from which the
    caller makes the query of the decode that reads the cache, so that a
    mismatch is reported against k_new or v_new, not a query."""
    for name, a in (("k_cache", k_cache), ("v_cache", v_cache)):
        if not is_device_array(a):
            raise ValueError("%s: %s writes a device cache in place: pass a pyopencl array"
                             % (name, what))
    ks = shape_of("k_new", k_new, 4, ("batch", "n_new", heads_k, "dk"))
    vs = shape_of("v_new", v_new, 4, ("batch", "n_new", heads_v, "dv"))
    n_new = agree("new row count", [("k_new", ks["n_new"]), ("v_new", vs["n_new"])])
    bhsd = layout_code("cache_layout", cache_layout) == lib.CLATTN_BHSD
    cs = shape_of("k_cache", k_cache, 4, ("batch", "heads", "capacity", "d") if bhsd
                  else ("batch", "capacity", "heads", "d"))
    return n_new, cs


def int32(argname, value, minimum=-2**31):
    """An integer argument as the C API's int: a bool, a non-integer or a
    value outside [minimum, 2^31) refused by name."""
    if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
            or not minimum <= value < 2**31):
        raise ValueError("%s: expected an integer in [%d, 2^31), got %r"
                         % (argname, minimum, value))
    return int(value)


def _number(argname, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError("%s: expected a number, got %r" % (argname, value)) from None


def set_options(desc, keep, heads, scale, window, softcap, alibi_slopes, sinks):
    """The scale and the attention options of a description (their arrays
    host float32 [heads], kept alive in `keep`).  A window that is not an
    integer is refused here; the values' own rules (a negative window, a
    non-finite slope) are the library's, which names them."""
    desc.window = int32("window", window)
    desc.scale = 0.0 if scale is None else _number("scale", scale)
    desc.softcap = _number("softcap", softcap)
    desc.alibi_slopes, owner = host_floats("alibi_slopes", alibi_slopes, heads)
    keep.append(owner)
    desc.sinks, owner = host_floats("sinks", sinks, heads)
    keep.append(owner)


class Shape:
    """Shape and dtype alone, for a description built without an array."""

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.ndim = len(self.shape)
        self.dtype = dtype


def lengths_kind(lens):
    """Lengths as Call's list of arguments sees them: a pyopencl array
    counts (a device call's own), host lengths do not, since a call on
    pyopencl arrays uploads them (int32 [batch], a few bytes)."""
    return lens if is_device_array(lens) else None


def check_lens(name, lens, batch):
    """Sequence lengths as the C call takes them: NumPy (or a list) becomes
    int32 [batch]; a pyopencl array must already be int32 [batch], since
    converting it would be a hidden device copy.  None stays None."""
    return check_ints(name, lens, (batch,))


def check_ints(name, ints, shape):
    """An int32 table of the given shape (lengths, a block table, offsets),
    as check_lens takes lengths."""
    if ints is None:
        return None
    dims = ", ".join(str(n) for n in shape)
    if is_device_array(ints):
        if np.dtype(ints.dtype) != np.int32:
            raise ValueError("%s: expected a pyopencl array of int32 [%s], got dtype %s"
                             % (name, dims, ints.dtype))
        expect_shape(name, ints, shape)
        return ints
    arr = np.asarray(ints)
    if arr.dtype.kind not in "iu":
        raise ValueError("%s: expected integers [%s], got dtype %s" % (name, dims, arr.dtype))
    expect_shape(name, arr, shape)
    info = np.iinfo(np.int32)
    if arr.size and (arr.min() < info.min or arr.max() > info.max):
        raise ValueError("%s: values outside int32" % name)
    return np.ascontiguousarray(arr, dtype=np.int32)


def result(call, out):
    """A NumPy call's output, or a PyOpenCL call's event."""
    if call.device:
        return call.finish(outputs=(out,))
    return call.finish()[0]
