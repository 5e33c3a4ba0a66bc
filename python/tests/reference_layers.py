"""NumPy float64 references of the layers, written from the definitions in
clattn.h and spec sections 4-7 (not from the kernels).  x [B, n, D] ->
y [B, n, D]: self-attention over the n positions of x, so a prefill into
a cache and the decode steps after it must equal the whole sequence's
causal result."""

import numpy as np

from reference import as_f64, attention


def gqa_layer(x, w_q, w_k, w_v, w_o, *, heads_q, heads_kv, causal=True, **options):
    """y = Attention(x W_q, x W_k, x W_v) W_o; head h of a projection is its
    columns h*dim .. h*dim+dim-1."""
    x = as_f64(x)
    batch, n, _ = x.shape
    q = (x @ as_f64(w_q)).reshape(batch, n, heads_q, -1)
    k = (x @ as_f64(w_k)).reshape(batch, n, heads_kv, -1)
    v = (x @ as_f64(w_v)).reshape(batch, n, heads_kv, -1)
    o = attention(q, k, v, causal=causal, **options)
    return o.reshape(batch, n, -1) @ as_f64(w_o)


def talking_heads_layer(x, w_q, w_k, w_v, w_o, p_l, p_w, *, causal=True, scale=None,
                        window=0):
    """Spec 5.1: logits J_a = scale q_a.k_a per key head a, mixed by P_l
    into L_c (heads), masked after the mix, soft-maxed over keys, the
    weights mixed by P_w into U_u (value heads), O_u = U_u V_u; y = O W_o."""
    x, p_l, p_w = as_f64(x), as_f64(p_l), as_f64(p_w)
    batch, n, _ = x.shape
    heads_k, heads_v = p_l.shape[0], p_w.shape[1]
    q = (x @ as_f64(w_q)).reshape(batch, n, heads_k, -1)
    k = (x @ as_f64(w_k)).reshape(batch, n, heads_k, -1)
    v = (x @ as_f64(w_v)).reshape(batch, n, heads_v, -1)
    scale = 1.0 / np.sqrt(q.shape[3]) if scale is None else scale
    t = np.arange(n)[None, :]
    p = np.arange(n)[:, None]
    visible = np.ones((n, n), bool)
    if causal:
        visible &= t <= p
    if window:
        visible &= p - window < t
    j = np.einsum("bihd,bthd->bith", q * scale, k)          # [B, n, n, heads_k]
    logits = np.einsum("bith,hc->bitc", j, p_l)             # [B, n, n, heads]
    logits = np.where(visible[None, :, :, None], logits, -np.inf)
    w = np.exp(logits - logits.max(axis=2, keepdims=True))
    w = w / w.sum(axis=2, keepdims=True)
    u = np.einsum("bitc,cu->bitu", w, p_w)                  # [B, n, n, heads_v]
    o = np.einsum("bitu,btud->biud", u, v)
    return o.reshape(batch, n, -1) @ as_f64(w_o)


def super_values(x, w_a, causal):
    """Spec 7.1, clattn.h: V'[t] = sum_s W_a[t, s] X[s], s <= t when causal,
    else s over the n positions."""
    x, w_a = as_f64(x), as_f64(w_a)
    n = x.shape[1]
    mix = w_a[:n, :n]
    if causal:
        # Causal calls never read W_a's upper triangle (it may hold NaN).
        mix = np.where(np.tri(n, dtype=bool), mix, 0.0)
    return np.einsum("ts,bsd->btd", mix, x)


def hosseini_layer(variant, x, w_q, w_o, *, heads, w_k=None, w_a=None, causal=True,
                   **options):
    """Spec 7.1: variant 'optimised' (K = x W_k, V_i = X_i), 'efficient'
    (K_i = V_i = X_i) or 'super' (K_i = X_i, V_i = W_a X_i); head i of
    width D/h reads channel slice i; y = [H_1 .. H_h] W_o."""
    x = as_f64(x)
    batch, n, d_model = x.shape
    q = x @ as_f64(w_q)
    k = x @ as_f64(w_k) if variant == "optimised" else x
    v = super_values(x, w_a, causal) if variant == "super" else x
    split = (batch, n, heads, d_model // heads)
    o = attention(q.reshape(split), k.reshape(split), v.reshape(split), causal=causal,
                  **options)
    return o.reshape(batch, n, d_model) @ as_f64(w_o)


def _gates(x, w_sel, heads, experts, topk):
    """[B, n, heads, experts]: each head's top-k sigmoid(x w_sel) values,
    zero elsewhere; a tie goes to the lower expert index."""
    s = 1.0 / (1.0 + np.exp(-(x @ as_f64(w_sel))))
    s = s.reshape(x.shape[0], x.shape[1], heads, experts)
    order = np.argsort(-s, axis=-1, kind="stable")[..., :topk]
    gates = np.zeros_like(s)
    np.put_along_axis(gates, order, np.take_along_axis(s, order, -1), -1)
    return gates


def switchhead_layer(x, w_q, w_k, w_v, w_o, w_s, w_d, *, topk, causal=True, **options):
    """Spec 6 / clattn.h: Q, K dense; V_h[t] = sum over the top-k e of
    s_v[t, h, e] x[t] W_v[h, e] (all experts ungated with one expert);
    y[i] = sum over h and the top-k e of s_o[i, h, e] (A_h V_h)[i] W_o[h, e]."""
    x, w_v, w_o = as_f64(x), as_f64(w_v), as_f64(w_o)
    batch, n, _ = x.shape
    heads, experts, _, head_dim = w_v.shape
    q = (x @ as_f64(w_q)).reshape(batch, n, heads, head_dim)
    k = (x @ as_f64(w_k)).reshape(batch, n, heads, head_dim)
    if experts == 1:
        g_v = np.ones((batch, n, heads, 1))
    else:
        g_v = _gates(x, w_s, heads, experts, topk)
    v = np.einsum("bthe,btd,hedc->bthc", g_v, x, w_v)
    o = attention(q, k, v, causal=causal, **options)       # [B, n, heads, head_dim]
    g_o = _gates(x, w_d, heads, experts, topk)
    return np.einsum("bihe,bihc,hecd->bid", g_o, o, w_o)
