"""NumPy float64 reference of talking-heads attention, written from the
definition in clattn.h (clattn_talking_heads), not from the kernels."""

import numpy as np

import reference


def talking_heads(q, k, v, p_l, p_w, *, causal=False, scale=None, kv_lens=None, window=0):
    """q [B, n_q, Hk, dk], k [B, n_kv, Hk, dk], v [B, n_kv, Hv, dv] (BSHD),
    p_l [Hk, H], p_w [H, Hv] -> [B, n_q, Hv, dv], float64.

    L[c] = sum_a scale q_a.k_a P_l[a, c]; the masks (kv_lens, causal,
    window) apply to L; U[u] = sum_c softmax(L[c]) P_w[c, u]; o[u] =
    sum_t U[u](t) v[t, u]; a query that sees no key gets zeros."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    p_l, p_w = np.asarray(p_l, np.float64), np.asarray(p_w, np.float64)
    batch, n_q, _, dk = q.shape
    n_kv = k.shape[1]
    scale = 1.0 / np.sqrt(dk) if scale is None else scale
    out = np.zeros((batch, n_q, v.shape[2], v.shape[3]))
    for b in range(batch):
        visible, _, _ = reference.mask(kv_lens, b, n_q, n_kv, causal, window)
        # logits of the key heads [Hk, n_q, n_kv], mixed into the softmax heads
        s = np.einsum("iad,tad->ait", q[b] * scale, k[b])
        mixed = np.einsum("ait,ac->cit", s, p_l)
        mixed = np.where(visible[None], mixed, -np.inf)
        m = mixed.max(axis=2, keepdims=True)
        e = np.where(visible[None], np.exp(mixed - np.where(np.isfinite(m), m, 0.0)), 0.0)
        den = e.sum(axis=2, keepdims=True)
        weights = e / np.where(den > 0, den, 1.0)
        u = np.einsum("cit,cu->uit", weights, p_w)
        o = np.einsum("uit,tud->iud", u, v[b])
        out[b] = np.where(visible.any(axis=1)[:, None, None], o, 0.0)
    return out


def talking_heads_decode(q, k_cache, v_cache, p_l, p_w, lens, *, scale=None, window=0):
    """q [B, Hk, dk], caches [B, capacity, H*, d] (BSHD), lens [B]: the
    query sits at position lens[b] - 1 and sees every valid row."""
    out = talking_heads(np.asarray(q)[:, None], k_cache, v_cache, p_l, p_w, scale=scale,
                        kv_lens=lens, window=window)
    return out[:, 0]
