"""explain, tune, the model's predictions, the families and the tuning
database from Python, as `clattn explain`, `clattn tune`, `clattn model`
and `clattn families` give them.

The contexts here read a tuning database in a temporary directory (never
the user's), and tune a small decode shape, whose one default candidate is
the program they compile."""

import os

import numpy as np
import pytest

import clattn
from clattn import ffi, lib

SOURCES = {"caller", "override", "tuned", "tuned-nearest", "tuned-arch", "shipped", "model",
           "default"}
DECODE_SHAPE = "batch=1 kv-seq=100 heads=4 kv-heads=2 head-dim=16 layout=bshd"


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tuning") / "tuning.db")


@pytest.fixture(scope="module")
def tctx(ctx, db_path):
    """A context on the session context's queue whose tuning database is
    db_path (not there yet)."""
    context = clattn.Context(queue=ctx.queue, tuning_db=db_path)
    yield context
    context.close()


def decode_arrays():
    q = np.zeros((1, 4, 16), np.float32)
    cache = np.zeros((1, 100, 2, 16), np.float32)
    return q, cache, cache


# ------------------------------------------------------------- families


def test_families():
    fams = {f.name: f for f in clattn.families()}
    assert {"prefill", "decode", "talking-heads", "talking-heads-decode"} <= set(fams)
    prefill = fams["prefill"]
    assert "clattn_attention" in prefill.summary
    assert {"batch", "seq", "heads", "head-dim", "window"} <= set(prefill.shape_keys)
    assert prefill.standard_shapes and all("heads=" in s for s in prefill.standard_shapes)
    tunables = {t.name: t for t in fams["decode"].tunables}
    assert {"variant", "keys", "splits"} <= set(tunables)
    assert 1 <= tunables["splits"].min <= tunables["splits"].max and tunables["splits"].meaning


def test_default_db_path(monkeypatch, tmp_path):
    monkeypatch.setenv("CLATTN_DB", str(tmp_path / "mine.db"))
    assert clattn.default_db_path() == str(tmp_path / "mine.db")
    monkeypatch.delenv("CLATTN_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert clattn.default_db_path() == str(tmp_path / "data" / "clattn" / "tuning.db")


# -------------------------------------------------------------- explain


def test_explain_shape_text_and_keywords(tctx, db_path):
    ch = tctx.explain("decode", DECODE_SHAPE)
    assert ch.source in SOURCES
    # the shape class is the shape's: head dims, group of 2, 2 KV heads
    assert ch.shape_class.startswith("f32 k16 v16 g2 bh2 ")
    assert ch.resolved and "variant=" in ch.resolved
    assert ch.why and ch.why in str(ch)
    # keywords are the same words as the text
    same = tctx.explain("decode", batch=1, kv_seq=100, heads=4, kv_heads=2, head_dim=16,
                        layout="bshd")
    assert same == ch


def test_explain_on_arrays_matches_shape_text(tctx):
    q, k, v = decode_arrays()
    assert tctx.explain_decode(q, k, v) == tctx.explain("decode", DECODE_SHAPE)
    qa = np.zeros((1, 24, 4, 16), np.float32)
    ka = np.zeros((1, 24, 2, 16), np.float32)
    text = "batch=1 seq=24 heads=4 kv-heads=2 head-dim=16 causal=1 window=8"
    via_arrays = tctx.explain_attention(qa, ka, ka, causal=True, window=8)
    assert via_arrays == tctx.explain("prefill", text) == tctx.explain("attention", text)
    assert " w8" in via_arrays.shape_class


def test_explain_caller_params(tctx):
    ch = tctx.explain("decode", DECODE_SHAPE, params="variant=1 keys=64")
    assert ch.source == "caller"
    assert "keys=64" in ch.resolved


def test_explain_refusals_name_the_culprit(tctx):
    with pytest.raises(clattn.Error, match="nonesuch") as e:
        tctx.explain("nonesuch", DECODE_SHAPE)
    assert e.value.status == "CLATTN_ERR_INVALID_ARG"
    with pytest.raises(clattn.Error, match="bogus"):
        tctx.explain("decode", DECODE_SHAPE + " bogus=3")
    with pytest.raises(clattn.Error, match="keys"):
        tctx.explain("decode", DECODE_SHAPE, params="keys=-4")
    with pytest.raises(ValueError, match="^family"):
        tctx.explain(3, DECODE_SHAPE)


# ------------------------------------------------------ tune and database


def test_tune_then_explain_picks_the_tuned_row(tctx, db_path):
    assert not os.path.exists(db_path)
    calls = []
    result = tctx.tune("decode", DECODE_SHAPE, db=db_path, budget=0.2, max_candidates=1,
                       progress=calls.append)
    assert os.path.exists(db_path)
    assert result.best_s > 0 and result.best_params
    assert result.measured + result.reused >= 1
    assert calls and calls[-1]["shape_class"] == result.shape_class
    assert calls[-1]["last"]["status"] in {"ok", "wrong", "failed", "timeout", "slow"}

    ch = tctx.explain("decode", DECODE_SHAPE)
    assert ch.source == "tuned"
    assert ch.shape_class == result.shape_class == ch.entry_class
    assert ch.params == result.best_params
    assert ch.entry_median_s > 0 and ch.shape_class in ch.why
    with clattn.Database(db_path, readonly=True) as db:
        rows = db.rows(kernel="decode", shape_class=result.shape_class)
    assert any(r["params"] == result.best_params and r["status"] == "ok" for r in rows)

    # a call of that shape runs the tuned row
    q, k, v = decode_arrays()
    tctx.decode(q, k, v, np.array([50], np.int32))
    last = tctx.last_choice()
    assert last.source == "tuned" and last.params == result.best_params


def test_tune_progress_stops_and_reraises(tctx, tmp_path):
    path = str(tmp_path / "stopped.db")
    result = tctx.tune("decode", DECODE_SHAPE, db=path, progress=lambda p: True)
    assert result.stopped == "stop"

    def fails(_progress):
        raise RuntimeError("from the progress callback")

    path = str(tmp_path / "raised.db")
    with pytest.raises(RuntimeError, match="from the progress callback"):
        tctx.tune("decode", DECODE_SHAPE, db=path, progress=fails)
    with clattn.Database(path, readonly=True) as db:
        assert db.rows(kernel="decode"), "the measured candidate is stored"


def test_tune_misuse(tctx, tmp_path):
    with pytest.raises(ValueError, match="^strategy"):
        tctx.tune("decode", DECODE_SHAPE, db=str(tmp_path / "x.db"), strategy="greedy")
    with pytest.raises(ValueError, match="^progress"):
        tctx.tune("decode", DECODE_SHAPE, db=str(tmp_path / "x.db"), progress=3)
    with pytest.raises(clattn.Error, match="nonesuch"):
        tctx.tune("nonesuch", DECODE_SHAPE, db=str(tmp_path / "x.db"))


def test_database_files(tmp_path):
    path = tmp_path / "made.db"
    with pytest.raises(clattn.Error, match="made.db") as e:
        clattn.Database(path, readonly=True)
    assert e.value.status == "CLATTN_ERR_NOT_FOUND"
    assert not path.exists()
    with clattn.Database(path) as db:
        assert path.exists() and db.path == str(path)
        assert db.rows() == []
    with pytest.raises(clattn.Error, match="closed"):
        db.rows()
    with clattn.Database(path, readonly=True) as db:
        assert db.readonly and db.rows() == []
    with pytest.raises(clattn.Error, match="missing") as e:
        clattn.Database(tmp_path / "missing" / "x.db")
    assert e.value.status == "CLATTN_ERR_DB"


# ---------------------------------------------------------- predictions


def test_prediction_matches_clattn_model_attention(tctx):
    q = np.zeros((2, 24, 4, 16), np.float32)
    k = np.zeros((2, 40, 2, 16), np.float32)
    kv_lens = np.array([40, 17], np.int32)
    pred = tctx.predict_attention(q, k, k, causal=True, kv_lens=kv_lens, profile="A100")
    total = pred["total"]
    assert total["flops"] > 0 and total["bytes_dram"] > 0 and total["t_pred"] > 0
    assert total["bound"] in {"memory", "compute", "launch"}
    assert pred["kernels"] and pred["profile_source"] == "datasheet"

    # the same desc through the C call itself
    keep = []
    d = tctx.attention_desc(q, k, k, causal=True, keep=keep)
    prof = ffi.new("clattn_profile *")
    prof.size = ffi.sizeof("clattn_profile")
    assert lib.clattn_datasheet_find(b"A100", prof) == lib.CLATTN_OK
    raw = ffi.new("clattn_prediction *")
    raw.size = ffi.sizeof("clattn_prediction")
    lens = ffi.new("int[]", [40, 17])
    assert lib.clattn_model_attention(d, lens, prof, raw) == lib.CLATTN_OK
    assert total["bytes_dram"] == raw.total.bytes_dram
    assert total["bytes_read"] == raw.total.bytes_read
    assert total["flops"] == raw.total.flops
    assert pred["params"] == ffi.string(raw.params).decode()

    # and through the shape text (the full key lengths)
    full = tctx.predict_attention(q, k, k, causal=True, profile="A100")
    text = tctx.predict("prefill", "batch=2 seq=24 kv-seq=40 heads=4 kv-heads=2 head-dim=16 "
                        "causal=1", profile="A100")
    assert text["total"]["bytes_dram"] == full["total"]["bytes_dram"]
    assert text["total"]["flops"] == full["total"]["flops"]


def test_predictions_on_the_device_and_datasheets(tctx):
    q, k, v = decode_arrays()
    on_device = tctx.predict_decode(q, k, v, [60])  # lens as a list, read on the host
    assert on_device["total"]["bytes_dram"] > 0 and on_device["total"]["flops"] > 0
    assert on_device["profile"] == tctx.profile()["name"]
    sheets = clattn.datasheets()
    assert sheets and all(s["source"] == "datasheet" for s in sheets)
    pred = clattn.model("decode", DECODE_SHAPE, profile=sheets[0]["name"])
    assert pred["total"]["t_pred"] > 0 and pred["profile"] == sheets[0]["name"]
    assert clattn.model("decode", DECODE_SHAPE, params="keys=64",
                        profile=sheets[0]["name"])["params"].count("keys=64") == 1


def test_model_refusals():
    with pytest.raises(clattn.Error, match="nonesuch") as e:
        clattn.model("nonesuch", DECODE_SHAPE, profile="A100")
    assert e.value.status == "CLATTN_ERR_INVALID_ARG"
    with pytest.raises(clattn.Error, match="no datasheet profile"):
        clattn.model("decode", DECODE_SHAPE, profile="no such GPU")
    with pytest.raises(ValueError, match="^profile"):
        clattn.model("decode", DECODE_SHAPE, profile="A100", device="0")
