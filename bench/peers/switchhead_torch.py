#!/usr/bin/env python3
"""switchhead_torch.py - the PyTorch peer of clattn-bench's switchhead
section: a SwitchHead layer (Csordas et al., arXiv 2312.07987) and its
parameter-matched multi-head attention (MHA) layer on the CPU, f32, no
biases, as RobertCsordas/switchhead's SwitchHeadCore computes them without
its Triton kernel: the (position, head, slot) selections sorted by
(head, expert), one matmul per expert over its gathered rows, and the
results added back at their positions (the value side per head, the output
side summed over heads and experts):

  s_v = sigmoid(x W_s), s_o = sigmoid(x W_d)       top-k per head, raw gates
  V_h = sum over top-k e of s_v[., h, e] x W_v[h, e]
  y   = sum over h and top-k e of s_o[., h, e] (A_h V_h) W_o[h, e]

with A_h = softmax(Q_h K_h^T / sqrt(d_h)) (F.scaled_dot_product_attention).

Two calls per layer: a causal prefill of --seq positions without a cache,
and a decode step (one position) over a cache of --seq - 1 positions that
holds K and the mixed V.  Prints one JSON line with the median seconds of
each: {"peer": "torch", ..., "sh_prefill_seconds", "mha_prefill_seconds",
"sh_decode_seconds", "mha_decode_seconds"}.  The calls are timed
alternately round by round, each timing a batch of calls of at least
--min-seconds, so that drift hits all of them alike.
"""
import argparse
import json
import sys

from torch_peer import start, time_alternating


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d-model", type=int, default=412)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=76)
    ap.add_argument("--experts", type=int, default=5)
    ap.add_argument("--topk", type=int, default=3)
    ap.add_argument("--dense-heads", type=int, default=10)
    ap.add_argument("--dense-head-dim", type=int, default=41)
    ap.add_argument("--seq", type=int, default=256)
    a, torch = start(ap, reps=7, min_seconds=0.02)
    if torch is None:
        return 1
    import torch.nn.functional as F
    D, H, dh, E, k = a.d_model, a.heads, a.head_dim, a.experts, a.topk
    Hd, dhd, T = a.dense_heads, a.dense_head_dim, a.seq
    if not 1 <= k <= E or T < 2:
        print(json.dumps({"peer": "torch", "error": "need 1 <= topk <= "
                          "experts and seq >= 2"}))
        return 1

    def uniform(*shape, fan_in):
        return (torch.rand(*shape) * 2 - 1) * fan_in ** -0.5

    w_q, w_k = uniform(D, H * dh, fan_in=D), uniform(D, H * dh, fan_in=D)
    w_v = uniform(H * E, D, dh, fan_in=D)
    w_o = uniform(H * E, dh, D, fan_in=H * dh)
    w_s, w_d = uniform(D, H * E, fan_in=D), uniform(D, H * E, fan_in=D)
    m_w = {n: uniform(D, Hd * dhd, fan_in=D) for n in ("q", "k", "v")}
    m_w["o"] = uniform(Hd * dhd, D, fan_in=Hd * dhd)
    x = torch.rand(T, D) * 2 - 1

    def select(src, w):
        """The (row, head, slot) selections: their row, their bucket
        h*E + e, their gate; sorted by bucket as cvmm_prepare_sel does."""
        s = torch.sigmoid(src @ w).view(-1, H, E)
        gate, idx = s.topk(k, dim=-1, sorted=False)
        bucket = (idx + torch.arange(H).view(1, H, 1) * E).flatten()
        order = bucket.argsort()
        rows = torch.arange(src.shape[0]).repeat_interleave(H * k)
        heads = torch.arange(H).repeat_interleave(k).repeat(src.shape[0])
        return (rows[order], heads[order], bucket[order],
                gate.flatten()[order])

    def expert_matmuls(sel, inp, w, out, out_col):
        """out[row, out_col(head)] += gate * inp(row, head) @ w[bucket],
        one matmul per non-empty bucket."""
        rows, heads, bucket, gate = sel
        counts = torch.bincount(bucket, minlength=H * E).tolist()
        start = 0
        for b, c in enumerate(counts):
            if c == 0:
                continue
            r, h, g = (rows[start:start + c], heads[start:start + c],
                       gate[start:start + c])
            part = (inp(r, h) @ w[b]) * g.unsqueeze(-1)
            out.index_add_(0, out_col(r, h), part)
            start += c

    def sh_values(src):
        v = torch.zeros(src.shape[0] * H, dh)
        expert_matmuls(select(src, w_s), lambda r, h: src[r], w_v, v,
                       lambda r, h: r * H + h)
        return v.view(-1, H, dh)

    def sh_output(att, dst):
        y = torch.zeros(dst.shape[0], D)
        expert_matmuls(select(dst, w_d), lambda r, h: att[r, h], w_o, y,
                       lambda r, h: r)
        return y

    def attend(q, kk, v, heads, causal):
        # [n, heads, d] -> [1, heads, n, d]
        o = F.scaled_dot_product_attention(
            q.transpose(0, 1).unsqueeze(0), kk.transpose(0, 1).unsqueeze(0),
            v.transpose(0, 1).unsqueeze(0), is_causal=causal)
        return o.squeeze(0).transpose(0, 1)

    def sh_prefill(x):
        q, kk = (x @ w_q).view(-1, H, dh), (x @ w_k).view(-1, H, dh)
        return sh_output(attend(q, kk, sh_values(x), H, True), x)

    def mha_prefill(x):
        q, kk, v = ((x @ m_w[n]).view(-1, Hd, dhd) for n in ("q", "k", "v"))
        return attend(q, kk, v, Hd, True).reshape(-1, Hd * dhd) @ m_w["o"]

    # The caches of the decode steps: T - 1 positions of K and (mixed) V,
    # the new one written at row T - 1 by every step.
    with torch.inference_mode():
        sh_k = torch.cat([(x[:-1] @ w_k).view(-1, H, dh), torch.zeros(1, H, dh)])
        sh_v = torch.cat([sh_values(x[:-1]), torch.zeros(1, H, dh)])
        m_k = torch.cat([(x[:-1] @ m_w["k"]).view(-1, Hd, dhd),
                         torch.zeros(1, Hd, dhd)])
        m_v = torch.cat([(x[:-1] @ m_w["v"]).view(-1, Hd, dhd),
                         torch.zeros(1, Hd, dhd)])
    x_new = x[-1:]

    def sh_decode(x1):
        sh_k[-1] = (x1 @ w_k).view(H, dh)
        sh_v[-1] = sh_values(x1)[0]
        q = (x1 @ w_q).view(1, H, dh)
        return sh_output(attend(q, sh_k, sh_v, H, False), x1)

    def mha_decode(x1):
        m_k[-1] = (x1 @ m_w["k"]).view(Hd, dhd)
        m_v[-1] = (x1 @ m_w["v"]).view(Hd, dhd)
        q = (x1 @ m_w["q"]).view(1, Hd, dhd)
        return attend(q, m_k, m_v, Hd, False).reshape(1, -1) @ m_w["o"]

    calls = {"sh_prefill": lambda: sh_prefill(x),
             "mha_prefill": lambda: mha_prefill(x),
             "sh_decode": lambda: sh_decode(x_new),
             "mha_decode": lambda: mha_decode(x_new)}
    with torch.inference_mode():
        seconds, y = time_alternating(calls, a.reps, a.min_seconds)
    finite = all(bool(torch.isfinite(o).all()) for o in y.values())
    out = {"peer": "torch", "version": torch.__version__,
           "threads": torch.get_num_threads(), "d_model": D, "heads": H,
           "head_dim": dh, "experts": E, "topk": k, "dense_heads": Hd,
           "dense_head_dim": dhd, "seq": T, "reps": a.reps, "finite": finite}
    for n in calls:
        out[n + "_seconds"] = seconds[n]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
