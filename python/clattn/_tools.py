"""Explain, tune, the model's predictions and the tuning database, as
methods of clattn.Context and module functions: what `clattn explain`,
`clattn tune`, `clattn model` and `clattn families` print, as values."""

import dataclasses
import os

from . import _arrays as A
from ._lib import Closable, Error, cstr, ffi, lib, params_struct, text, versioned

# ------------------------------------------------------------ C records


def _chars(array):
    return ffi.string(array).decode("utf-8", "replace")


# Enumerators as the words the command line prints ("memory", "measured").
_ENUM_PREFIXES = {"clattn_bound": "CLATTN_BOUND_",
                  "clattn_profile_source": "CLATTN_PROFILE_"}


def _record(obj, ctype):
    """A C record as a dict of its fields (size left out): text as str,
    nested records as dicts, arrays as lists, enums as their words."""
    ctype = ffi.typeof(ctype) if isinstance(ctype, str) else ctype
    out = {}
    for name, field in ctype.fields:
        if name == "size":
            continue
        t, value = field.type, getattr(obj, name)
        if t.kind == "array" and t.item.cname == "char":
            out[name] = _chars(value)
        elif t.kind == "array" and t.item.kind == "struct":
            out[name] = [_record(x, t.item) for x in value]
        elif t.kind == "array":
            out[name] = list(value)
        elif t.kind == "struct":
            out[name] = _record(value, t)
        elif t.kind == "pointer" and t.item.cname == "char":
            out[name] = text(value)
        elif t.kind in ("pointer", "function"):
            continue
        elif t.kind == "enum" and t.cname in _ENUM_PREFIXES:
            word = t.elements.get(int(value), str(int(value)))
            out[name] = word[len(_ENUM_PREFIXES[t.cname]):].lower()
        else:
            out[name] = value
    return out


def _pick(cls, values):
    return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class Choice:
    """How a call's parameters are chosen (clattn_choice): source
    ("caller", "override", "tuned", "tuned-nearest", "tuned-arch",
    "shipped", "model", "default"), params as chosen ('' automatic),
    resolved as the kernels run them, the call's shape class, the tuning
    entry used (its class, device and time; '' and 0 for none) and why."""
    source: str
    params: str
    resolved: str
    shape_class: str
    entry_class: str
    entry_device: str
    entry_median_s: float
    why: str

    def __str__(self):
        lines = ["shape class  %s" % self.shape_class,
                 "source       %s" % self.source,
                 "params       %s" % (self.params or "(automatic)"),
                 "resolved     %s" % self.resolved]
        if self.entry_class:
            lines.append("entry        %s on %s, %.4f ms" % (
                self.entry_class, self.entry_device, self.entry_median_s * 1e3))
        lines.append("why          %s" % self.why)
        return "\n".join(lines)


def _choice(ch):
    values = _record(ch, "clattn_choice")
    values["source"] = text(lib.clattn_choice_source_str(ch.source))
    return _pick(Choice, values)


@dataclasses.dataclass(frozen=True)
class TuneResult:
    """The outcome of a tuning run for one shape class
    (clattn_tune_result): candidates in the space, pruned, measured now,
    reused from the database, stale, rejected and verified; the best
    params and median (best_s 0: none), the default's median, the model's
    roofline time, and why it stopped ("done", "budget", "max",
    "roofline", "stop")."""
    shape_class: str
    space: int
    pruned: int
    measured: int
    reused: int
    stale: int
    rejected: int
    verified: int
    best_params: str
    best_s: float
    default_s: float
    roofline_s: float
    refreshes: int
    stopped: str
    elapsed_s: float


@dataclasses.dataclass(frozen=True)
class Tunable:
    """A tunable of a family: its name in params text, the values it
    takes besides 0 (automatic), what automatic chooses, what it means."""
    name: str
    min: int
    max: int
    automatic: str
    meaning: str


@dataclasses.dataclass(frozen=True)
class Family:
    """A kernel family of the registry (`clattn families`): its name (the
    word of explain, tune and model), what it computes, the shape keys its
    shape text takes, the shapes tune runs without one, its tunables."""
    name: str
    summary: str
    shape_keys: tuple
    standard_shapes: tuple
    tunables: tuple


def families():
    """The kernel families, as Family records ('prefill', 'decode', ...)."""
    found = []
    for i in range(lib.clattn_family_count()):
        shapes = []
        while lib.clattn_family_standard_shape(i, len(shapes)) != ffi.NULL:
            shapes.append(text(lib.clattn_family_standard_shape(i, len(shapes))))
        tunables = []
        while True:
            t = versioned("clattn_tunable")
            if lib.clattn_family_tunable(i, len(tunables), t) != lib.CLATTN_OK:
                break
            tunables.append(_pick(Tunable, _record(t, "clattn_tunable")))
        found.append(Family(text(lib.clattn_family_name(i)), text(lib.clattn_family_summary(i)),
                            tuple(text(lib.clattn_family_shape_keys(i)).split()),
                            tuple(shapes), tuple(tunables)))
    return found


def datasheets():
    """The datasheet profiles shipped with the library (`clattn model
    profiles`), each a dict of clattn_profile's fields."""
    out = []
    for i in range(lib.clattn_datasheet_count()):
        p = versioned("clattn_profile")
        if lib.clattn_datasheet(i, p) == lib.CLATTN_OK:
            out.append(_record(p, "clattn_profile"))
    return out


# ----------------------------------------------------------- arguments


def _family(family):
    if not isinstance(family, str):
        raise ValueError("family: expected a family's name (clattn.families()), got %r"
                         % (family,))
    # The public call's name, a word of the command line too (clattn tune).
    return "prefill" if family == "attention" else family


def _shape_text(shape, keys):
    """Shape text as `clattn explain` takes it: the text given, then each
    keyword as a key=value word (kv_seq=4096 is kv-seq=4096, True is 1);
    the library reads and checks it."""
    if shape is not None and not isinstance(shape, str):
        raise ValueError("shape: expected shape text such as 'batch=1 seq=512 heads=8 "
                         "head-dim=64', got %r" % (shape,))
    words = [shape] if shape else []
    for key, value in keys.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = int(value)
        words.append("%s=%s" % (key.replace("_", "-"), value))
    return " ".join(words)


def _path(path):
    return None if path is None else os.fspath(path)


def _db_error(status, db, what):
    message = text(lib.clattn_db_errmsg(db)) or text(lib.clattn_status_str(status))
    return Error(status, "%s: %s" % (what, message))


# ------------------------------------------------------------ database


class Database(Closable):
    """The tuning database (SQLite): Database(path=None, readonly=False).

    path None: $CLATTN_DB, else the default path (default_db_path()).
    Writable: the file is created (a path given must be in a directory
    that exists).  readonly: nothing is created; a missing file raises
    Error (CLATTN_ERR_NOT_FOUND).  close() or a with block ends it."""

    def __init__(self, path=None, readonly=False):
        self._db = ffi.NULL
        keep = []
        out = ffi.new("clattn_db **")
        open_ = lib.clattn_db_open_readonly if readonly else lib.clattn_db_open
        status = open_(cstr(keep, _path(path)), out)
        if status != lib.CLATTN_OK:
            raise _db_error(status, ffi.NULL, "clattn.Database(%r)" % (_path(path),))
        self._db = out[0]
        self.readonly = bool(readonly)

    @property
    def handle(self):
        """The clattn_db * (cffi pointer); Error once closed."""
        if self._db == ffi.NULL:
            raise Error(lib.CLATTN_ERR_MISUSE, "the clattn.Database is closed")
        return self._db

    @property
    def path(self):
        return text(lib.clattn_db_path(self.handle))

    def rows(self, kernel=None, shape_class=None, fingerprint=None):
        """The tuning rows matching the filters given (`clattn db list`), each
        a dict of clattn_tune_entry's fields."""
        keep = []
        out = ffi.new("clattn_tune_entry **")
        n = ffi.new("int *")
        status = lib.clattn_db_list_tune(self.handle, cstr(keep, fingerprint),
                                         cstr(keep, kernel), cstr(keep, shape_class),
                                         ffi.sizeof("clattn_tune_entry"), out, n)
        if status != lib.CLATTN_OK:
            raise _db_error(status, self._db, "rows")
        try:
            return [_record(out[0][i], "clattn_tune_entry") for i in range(n[0])]
        finally:
            lib.clattn_free(out[0])

    def close(self):
        """Closes the database (idempotent)."""
        if self._db != ffi.NULL:
            lib.clattn_db_close(self._db)
            self._db = ffi.NULL

    def __repr__(self):
        if self._db == ffi.NULL:
            return "clattn.Database(closed)"
        return "clattn.Database(%r%s)" % (self.path, ", readonly=True" if self.readonly else "")


Database.__module__ = "clattn"


def default_db_path():
    """The path that Database(None) and a Context without tuning_db use
    ($CLATTN_DB, else $XDG_DATA_HOME/clattn/tuning.db, else
    ~/.local/share/clattn/tuning.db), whether or not the file exists."""
    cap = 4096
    while True:
        buf = ffi.new("char[]", cap)
        status = lib.clattn_db_default_path(buf, cap)
        if status == lib.CLATTN_ERR_BUFFER_TOO_SMALL and cap < 1 << 20:
            cap *= 16
            continue
        if status == lib.CLATTN_ERR_DB:
            raise Error(status, "default_db_path: $CLATTN_DB, $XDG_DATA_HOME and $HOME "
                                "are all unset or empty")
        if status != lib.CLATTN_OK:
            raise Error(status, "default_db_path: %s" % text(lib.clattn_status_str(status)))
        return text(buf)


class _DbArg:
    """A database argument for one call: a Database as it is, else a path
    (None: `default`) opened for the call and closed after it."""

    def __init__(self, db, readonly, default=None, missing_ok=False):
        self.owned = None
        if isinstance(db, Database):
            self.db = db
            return
        path = _path(db) if db is not None else default
        try:
            self.owned = self.db = Database(path, readonly=readonly)
        except Error as e:
            # A profile falls back to what the device reports when no
            # database of the default path exists (as `clattn model`).
            if not (missing_ok and db is None and e.code == lib.CLATTN_ERR_NOT_FOUND):
                raise
            self.db = None

    @property
    def handle(self):
        return ffi.NULL if self.db is None else self.db.handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.owned is not None:
            self.owned.close()


# ---------------------------------------------------------- predictions


def _datasheet(name):
    p = versioned("clattn_profile")
    status = lib.clattn_datasheet_find(str(name).encode("utf-8"), p)
    if status != lib.CLATTN_OK:
        raise Error(status, "profile: no datasheet profile matches %r (clattn.datasheets())"
                    % (name,))
    return p


def _prediction(status, pr, prof, what):
    """The prediction as a dict: the kernels' costs and their total (each
    clattn_cost's fields), the ridge, the params the call resolves to and
    the profile used; a failure raises Error with the model's reason."""
    if status != lib.CLATTN_OK:
        raise Error(status, "%s: %s" % (what, _chars(pr.errmsg)))
    values = _record(pr, "clattn_prediction")
    return {"kernels": values["kernel"][:pr.n_kernels], "total": values["total"],
            "ridge": values["ridge"], "params": values["params"],
            "profile": _chars(prof.name),
            "profile_source": _record(prof, "clattn_profile")["source"]}


def _model_shape(family, shape, params, prof):
    keep = []
    pr = versioned("clattn_prediction")
    status = lib.clattn_model_shape(cstr(keep, _family(family)), cstr(keep, shape),
                                    params_struct(keep, params), prof, pr)
    return _prediction(status, pr, prof, "model %s" % family)


def model(family, shape=None, *, profile=None, device=None, db=None, params=None, **keys):
    """The roofline model's prediction for a family's call given as shape
    text or keywords (`clattn model FAMILY`): on a datasheet GPU
    (profile="A100", clattn.datasheets()) or a present device (device=, as
    clattn.Context takes it; its measured profile in db, else its datasheet,
    else what it reports).  params: the caller's "name=value ..."
    (default: the library's choice on that profile).  Returns a dict:
    kernels and total (clattn_cost's fields: flops, bytes_dram, t_pred,
    bound, ...), ridge, params, profile, profile_source."""
    if profile is not None and device is not None:
        raise ValueError("profile: give a datasheet profile or a device, not both")
    text_ = _shape_text(shape, keys)
    if profile is not None:
        return _model_shape(family, text_, params, _datasheet(profile))
    from ._context import Context  # noqa: PLC0415 - _context imports this module

    with Context(device) as ctx:
        return ctx.predict(family, text_, params=params, db=db)


# ---------------------------------------------------------------- tuning

_STRATEGIES = {text(lib.clattn_tune_strategy_str(s)): s
               for s in range(lib.CLATTN_TUNE_MODEL + 1)}


class _TuneRun:
    """The clattn_tune_opts of one run, with the progress callback that
    also catches Ctrl-C (raised in Python code, which the callback is) and
    stops the run after the running candidate, every result kept."""

    def __init__(self, strategy, budget, timeout, max_candidates, repeats, seed,
                 stop_fraction, fresh, replace, progress):
        if strategy not in _STRATEGIES:
            raise ValueError("strategy: %r is not one of %s" % (strategy, sorted(_STRATEGIES)))
        if progress is not None and not callable(progress):
            raise ValueError("progress: expected a callable taking a dict, got %r"
                             % (progress,))
        o = versioned("clattn_tune_opts")
        o.strategy = _STRATEGIES[strategy]
        o.budget_s = float(budget or 0.0)
        o.timeout_s = float(timeout or 0.0)
        o.max_candidates = int(max_candidates)
        o.repeats = int(repeats)
        o.seed = int(seed)
        o.stop_fraction = float(stop_fraction)
        o.fresh = int(bool(fresh or replace))  # replace measures again too
        o.replace = int(bool(replace))
        self.stop = ffi.new("sig_atomic_t *")
        o.stop = self.stop
        self.user_progress = progress
        self.error = None
        self.callback = ffi.callback("void(const clattn_tune_progress *, void *)",
                                     self._progress, onerror=self._failed)
        o.progress = self.callback
        self.opts = o

    def _progress(self, p, _user):
        if self.user_progress is None:
            return
        values = _record(p, "clattn_tune_progress")
        values["last"] = None if p.last == ffi.NULL else _record(p.last, "clattn_tune_entry")
        if self.user_progress(values):
            self.stop[0] = 1

    def _failed(self, _type, value, _traceback):
        # The exception is raised again once the run has stopped.
        if self.error is None:
            self.error = value
        self.stop[0] = 1
        return None

    def result(self, ctx, status, res, what):
        if self.error is not None:
            raise self.error
        ctx.check(status, what)
        return _pick(TuneResult, _record(res, "clattn_tune_result"))


_TUNE_DOC = """
        db: a Database, or a path opened for the run (None: the context's
        tuning database, so that its later calls use the rows).  strategy:
        'auto', 'exhaustive', 'random', 'anneal' or 'model'; budget: seconds
        for the whole run (None: none); timeout: seconds a candidate (None:
        10); max_candidates (0: the strategy's), repeats (0: 7), seed,
        stop_fraction (0: 0.95); fresh: measure again what db has (the better
        row kept); replace: measure again and overwrite.  progress: called
        with a dict after every candidate (done, total, space, best_s,
        best_params, elapsed_s, budget_s, last: the candidate's row); a true
        return stops the run after the running candidate, and so does an
        exception (Ctrl-C included), raised again when the run has stopped
        with every measured row stored.  Returns a TuneResult."""


# ------------------------------------------------------------- methods


class ToolCalls:
    """Mixed into clattn.Context."""

    def _tuning_db_path(self):
        # The tuning database the context reads its choices from
        # (Context(tuning_db=)); None is the default path for both.
        return self.tuning_db

    # ------------------------------------------------------------ explain
    def explain_attention(self, q, k, v, **options):
        """What attention(q, k, v, **options) would run and why, nothing
        enqueued: a Choice.  options: attention's keywords that describe
        the call (causal, scale, layouts, dtype, window, softcap,
        alibi_slopes, sinks, params)."""
        keep = []
        d = self.attention_desc(q, k, v, keep=keep, **options)
        ch = versioned("clattn_choice")
        self.check(lib.clattn_explain_attention(self.handle, d, ch), "explain_attention")
        return _choice(ch)

    def explain_decode(self, q, k_cache, v_cache, **options):
        """What decode(q, k_cache, v_cache, lens, **options) would run and
        why: a Choice."""
        keep = []
        d = self.decode_desc(q, k_cache, v_cache, keep=keep, **options)
        ch = versioned("clattn_choice")
        self.check(lib.clattn_explain_decode(self.handle, d, ch), "explain_decode")
        return _choice(ch)

    def explain(self, family, shape=None, *, params=None, **keys):
        """`clattn explain FAMILY SHAPE`: the parameters a family's call of
        that shape would use on this device and why, as a Choice.  shape:
        the family's shape text ("batch=1 kv-seq=4096 heads=8 head-dim=64"),
        keywords add words (kv_seq=4096 is kv-seq=4096; keys:
        clattn.families()); params: the caller's "name=value ..."."""
        keep = []
        ch = versioned("clattn_choice")
        status = lib.clattn_explain_shape(self.handle, cstr(keep, _family(family)),
                                          cstr(keep, _shape_text(shape, keys)),
                                          params_struct(keep, params), ch)
        self.check(status, "explain %s" % family)
        return _choice(ch)

    def last_choice(self):
        """The Choice of this thread's last kernel call on the context
        (Error CLATTN_ERR_NOT_FOUND before the first)."""
        ch = versioned("clattn_choice")
        self.check(lib.clattn_ctx_last_choice(self.handle, ch), "last_choice")
        return _choice(ch)

    def explain_gemm(self):
        """One line: what the layers' projection GEMMs use on this context,
        and why."""
        cap = 1024
        while True:
            buf = ffi.new("char[]", cap)
            status = lib.clattn_explain_gemm(self.handle, buf, cap)
            if status == lib.CLATTN_ERR_BUFFER_TOO_SMALL and cap < 1 << 20:
                cap *= 8
                continue
            self.check(status, "explain_gemm")
            return text(buf)

    def set_params(self, spec):
        """Overrides the parameters of later calls that pass none, as
        $CLATTN_PARAMS does: "prefill: variant=2 wg=64; decode: splits=16"
        (None or '' removes every override)."""
        keep = []
        self.check(lib.clattn_ctx_set_params(self.handle, cstr(keep, spec)), "set_params")

    def reload_tuning(self):
        """Reads the tuning database again at the next call (rows stored
        meanwhile by another context or process)."""
        self.check(lib.clattn_ctx_reload_tuning(self.handle), "reload_tuning")

    # --------------------------------------------------------------- tune
    def tune(self, family, shape=None, *, db=None, strategy="auto", budget=None, timeout=None,
             max_candidates=0, repeats=0, seed=0, stop_fraction=0.0, fresh=False,
             replace=False, progress=None, **keys):
        """`clattn tune FAMILY SHAPE`: searches the family's parameters for
        that shape on this device and stores every measured candidate in
        the tuning database; a rerun resumes.  shape and keywords as
        explain() takes them (the standard shapes: clattn.families())."""
        run = _TuneRun(strategy, budget, timeout, max_candidates, repeats, seed,
                       stop_fraction, fresh, replace, progress)
        keep = []
        res = versioned("clattn_tune_result")
        with _DbArg(db, readonly=False, default=self._tuning_db_path()) as d:
            status = lib.clattn_tune_shape(self.handle, d.handle, cstr(keep, _family(family)),
                                           cstr(keep, _shape_text(shape, keys)), run.opts, res)
        return run.result(self, status, res, "tune %s" % family)

    def tune_gemm(self, m, n, k, *, db=None, strategy="auto", budget=None, timeout=None,
                  max_candidates=0, repeats=0, seed=0, stop_fraction=0.0, fresh=False,
                  replace=False, progress=None):
        """`clattn tune gemm --m M --n N --k K`: tunes CLBlast's Xgemm for
        row-major C[m, n] = A[m, k] B[k, n] (the layers' projections;
        process-wide, see clattn_tune_gemm)."""
        run = _TuneRun(strategy, budget, timeout, max_candidates, repeats, seed,
                       stop_fraction, fresh, replace, progress)
        res = versioned("clattn_tune_result")
        with _DbArg(db, readonly=False, default=self._tuning_db_path()) as d:
            status = lib.clattn_tune_gemm(self.handle, d.handle, int(m), int(n), int(k),
                                          run.opts, res)
        return run.result(self, status, res, "tune_gemm")

    if tune.__doc__:  # None under python -OO
        tune.__doc__ += _TUNE_DOC
        tune_gemm.__doc__ += _TUNE_DOC

    # ------------------------------------------------------------- model
    def profile(self, db=None):
        """The device's profile as the model sees it (clattn_profile_for):
        the measured one in db (a Database or path; None: the context's
        tuning database, if it exists), else a datasheet of its name, else
        what it reports (no ceilings: predicted times 0).  A dict."""
        return _record(self._profile(None, db), "clattn_profile")

    def _profile(self, profile, db):
        if profile is not None:
            return _datasheet(profile)
        p = versioned("clattn_profile")
        with _DbArg(db, readonly=True, default=self._tuning_db_path(), missing_ok=True) as d:
            self.check(lib.clattn_profile_for(self.handle, d.handle, p), "profile")
        return p

    def predict(self, family, shape=None, *, params=None, profile=None, db=None, **keys):
        """The model's prediction for a family's call (shape text and
        keywords as explain() takes them) on this device's profile (see
        profile()), or on a datasheet's (profile="A100"); as clattn.model()
        returns it."""
        return _model_shape(family, _shape_text(shape, keys), params,
                            self._profile(profile, db))

    def predict_attention(self, q, k, v, *, kv_lens=None, profile=None, db=None, **options):
        """The model's prediction for attention(q, k, v, kv_lens=kv_lens,
        **options) (clattn_model_attention), as predict() returns it.  The
        arrays give shapes and dtypes only; kv_lens is read on the host."""
        keep = []
        d = self.attention_desc(q, k, v, keep=keep, **options)
        return self._predict_call(lib.clattn_model_attention, d, "kv_lens", kv_lens, keep,
                                  profile, db, "predict_attention")

    def predict_decode(self, q, k_cache, v_cache, lens=None, *, profile=None, db=None,
                       **options):
        """The model's prediction for decode(q, k_cache, v_cache, lens,
        **options) (clattn_model_decode; lens None: full caches)."""
        keep = []
        d = self.decode_desc(q, k_cache, v_cache, keep=keep, **options)
        return self._predict_call(lib.clattn_model_decode, d, "lens", lens, keep, profile,
                                  db, "predict_decode")

    def _predict_call(self, model, d, lens_name, lens, keep, profile, db, what):
        """model(d, lens, profile, prediction) with lens read on the host
        (a pyopencl array is read back; NULL for None)."""
        host = ffi.NULL
        if lens is not None:
            values = lens.get() if A.is_device_array(lens) else lens
            arr = A.check_lens(lens_name, values, d.batch)  # int32, contiguous
            keep.append(arr)
            host = ffi.cast("const int *", ffi.from_buffer(arr))
        prof = self._profile(profile, db)
        pr = versioned("clattn_prediction")
        return _prediction(model(d, host, prof, pr), pr, prof, what)


for _cls in (Choice, TuneResult, Tunable, Family):
    _cls.__module__ = "clattn"
