"""NumPy float64 references of the attention calls, written from the
definitions in clattn.h (not from the kernels)."""

import numpy as np


def as_f64(a):
    return np.asarray(a, dtype=np.float64)


def mask(kv_lens, b, n_q, n_kv, causal, window):
    """Which keys t each query of sequence b sees (visible [n_q, n_kv]), and
    the positions: query i at p = L - n_q + i (L its valid keys), key t."""
    length = n_kv if kv_lens is None else int(np.clip(kv_lens[b], 0, n_kv))
    t = np.arange(n_kv)[None, :]
    p = (length - n_q + np.arange(n_q))[:, None]
    visible = t < length
    if causal:
        visible = visible & (t <= p)
    if window:
        visible = visible & (p - window < t)
    return visible, p, t


def attention(q, k, v, *, causal=False, scale=None, kv_lens=None, window=0,
              softcap=0.0, alibi_slopes=None, sinks=None):
    """q [B, n_q, Hq, dk], k [B, n_kv, Hkv, dk], v [B, n_kv, Hkv, dv] (BSHD)
    -> [B, n_q, Hq, dv], float64."""
    q, k, v = as_f64(q), as_f64(k), as_f64(v)
    batch, n_q, heads_q, dk = q.shape
    n_kv, heads_kv = k.shape[1], k.shape[2]
    group = heads_q // heads_kv
    scale = 1.0 / np.sqrt(dk) if scale is None else scale
    out = np.zeros(q.shape[:3] + (v.shape[3],))
    for b in range(batch):
        visible, p, t = mask(kv_lens, b, n_q, n_kv, causal, window)
        for h in range(heads_q):
            g = h // group
            s = (q[b, :, h, :] * scale) @ k[b, :, g, :].T
            if softcap:
                s = softcap * np.tanh(s / softcap)
            if alibi_slopes is not None:
                s = s - float(alibi_slopes[h]) * np.abs(p - t)
            s = np.where(visible, s, -np.inf)
            m = s.max(axis=1, keepdims=True)
            sink = None if sinks is None else float(sinks[h])
            if sink is not None:
                m = np.maximum(m, sink)
            rows_seen = np.isfinite(m[:, 0]) & visible.any(axis=1)
            m = np.where(np.isfinite(m), m, 0.0)
            e = np.where(visible, np.exp(s - m), 0.0)
            den = e.sum(axis=1, keepdims=True)
            if sink is not None:
                den = den + np.exp(sink - m)
            o = (e @ v[b, :, g, :]) / np.where(den > 0, den, 1.0)
            out[b, :, h, :] = np.where(rows_seen[:, None], o, 0.0)
    return out


def decode(q, k_cache, v_cache, lens, **options):
    """q [B, Hq, dk], caches [B, capacity, Hkv, d] (BSHD), lens [B]: the
    query sits at position lens[b] - 1 and sees every valid row."""
    out = attention(np.asarray(q)[:, None], k_cache, v_cache, causal=False,
                    kv_lens=lens, **options)
    return out[:, 0]


def bshd(a, layout):
    """A [B, S, H, D] view of an array stored in `layout` ('bshd'/'bhsd')."""
    return np.swapaxes(a, 1, 2) if layout == "bhsd" else a


def f32_to_bf16(a):
    """float32 -> bfloat16 bits as uint16, rounded to nearest even (as
    PyTorch and ml_dtypes round); NaN stays a quiet NaN."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    return np.where(nan, (bits >> 16) | 0x40, rounded).astype(np.uint16)


def bf16_to_f32(u):
    """bfloat16 bits (uint16) -> float32, exactly."""
    return (np.asarray(u, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def storage(a, dtype):
    """float32 values in a clattn storage dtype ('f32', 'f16', 'bf16': uint16
    bits), and the float64 values the stored array holds (what a reference
    must be given so that input rounding is not counted as error)."""
    a = np.asarray(a, dtype=np.float32)
    if dtype == "f32":
        return a, a.astype(np.float64)
    if dtype == "f16":
        s = a.astype(np.float16)
        return s, s.astype(np.float64)
    s = f32_to_bf16(a)
    return s, bf16_to_f32(s).astype(np.float64)


def values(a, dtype):
    """The float64 values of an array in a clattn storage dtype."""
    return bf16_to_f32(a).astype(np.float64) if dtype == "bf16" else as_f64(a)
