"""clattn: vendor-neutral OpenCL attention kernels, from Python.

    import numpy as np, clattn
    ctx = clattn.Context()                       # or Context(queue=your_queue)
    o = ctx.attention(q, k, v, causal=True)      # NumPy in, NumPy out

pyopencl.array.Array arguments are passed as they are (zero copy): the call
is asynchronous, writes out= and returns a pyopencl.Event.  Failures of the
library raise clattn.Error; shape and dtype mistakes raise ValueError
before anything is enqueued.  docs/PYTHON.md has the rest."""

from ._context import Context
from ._layers import (EfficientLayer, GQALayer, KVCache, OptimisedLayer, PagedPool,
                      SuperLayer, SwitchHeadLayer, TalkingHeadsLayer)
from ._lib import Error, ffi, lib, text  # noqa: F401 - ffi, lib: the raw C API
from ._tools import (Choice, Database, Family, TuneResult, Tunable, datasheets,
                     default_db_path, families, model)

__version__ = text(lib.clattn_version())

__all__ = ["Choice", "Context", "Database", "EfficientLayer", "Error", "Family", "GQALayer",
           "KVCache", "OptimisedLayer", "PagedPool", "SuperLayer", "SwitchHeadLayer",
           "TalkingHeadsLayer", "TuneResult", "Tunable", "__version__", "datasheets",
           "default_db_path", "families", "model"]
