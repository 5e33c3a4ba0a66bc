"""The C library through cffi: its declarations, its handle, its errors."""

import os

import cffi

_HERE = os.path.dirname(os.path.abspath(__file__))

ffi = cffi.FFI()
with open(os.path.join(_HERE, "_cdef.h"), encoding="utf-8") as _f:
    ffi.cdef(_f.read())


def _library_path():
    # $CLATTN_PYTHON_LIBRARY lets a developer load a library of their own
    # build; the package's own is the default.
    override = os.environ.get("CLATTN_PYTHON_LIBRARY")
    if override:
        return override
    return os.path.join(_HERE, "libclattn.so")


lib = ffi.dlopen(_library_path())

STATUS_NAMES = {}
for _name in dir(lib):
    if _name.startswith("CLATTN_OK") or _name.startswith("CLATTN_ERR_"):
        STATUS_NAMES[int(getattr(lib, _name))] = _name


class Error(Exception):
    """A clattn call failed: status (its name, e.g. "CLATTN_ERR_SHAPE"),
    code (its number) and the library's message."""

    def __init__(self, code, message):
        self.code = int(code)
        self.status = STATUS_NAMES.get(self.code, "CLATTN_ERR_%d" % self.code)
        self.message = message
        super().__init__("%s: %s" % (self.status, message))


Error.__module__ = "clattn"


def text(cstr):
    """A C string the library owns, as str ('' for NULL)."""
    if cstr == ffi.NULL:
        return ""
    return ffi.string(cstr).decode("utf-8", "replace")


def check(status, ctx=None, what=None):
    """Raise Error for a failed status, with the context's message when
    there is one, else the status's own text."""
    status = int(status)
    if status == lib.CLATTN_OK:
        return
    message = ""
    if ctx is not None and ctx != ffi.NULL:
        message = text(lib.clattn_ctx_errmsg(ctx))
    if not message:
        message = text(lib.clattn_status_str(status))
    if what:
        message = "%s: %s" % (what, message)
    raise Error(status, message)


def cstr(keep, value):
    """A C string kept alive in `keep` (NULL for None)."""
    if value is None:
        return ffi.NULL
    s = ffi.new("char[]", str(value).encode("utf-8"))
    keep.append(s)
    return s


def versioned(ctype):
    """A zeroed versioned struct (clattn.h) with its size field set."""
    obj = ffi.new(ctype + " *")
    obj.size = ffi.sizeof(ctype)
    return obj


def params_struct(keep, params):
    """A clattn_params holding the caller's "name=value ..." text, kept
    alive in `keep` (NULL for None)."""
    if params is None:
        return ffi.NULL
    p = versioned("clattn_params")
    p.text = cstr(keep, params)
    keep.append(p)
    return p


class Closable:
    """A C object's owner: `with` closes it, and so does garbage collection
    (close() must be idempotent)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
