"""NumPy float64 references of the attention calls, written from the
definitions in clattn.h (not from the kernels)."""

import numpy as np


def as_f64(a):
    return np.asarray(a, dtype=np.float64)


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
        length = n_kv if kv_lens is None else int(np.clip(kv_lens[b], 0, n_kv))
        t = np.arange(n_kv)[None, :]
        p = (length - n_q + np.arange(n_q))[:, None]
        visible = t < length
        if causal:
            visible = visible & (t <= p)
        if window:
            visible = visible & (p - window < t)
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
