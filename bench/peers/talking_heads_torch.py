#!/usr/bin/env python3
"""talking_heads_torch.py - the PyTorch peer of clattn-bench's talking-heads
section: talking-heads attention on the CPU, written as x-transformers writes
it (x_transformers/attend.py): dot products, the pre-softmax mix of heads,
masked_fill, softmax, the post-softmax mix, einsum with v.  x-transformers
mixes with a 1x1 Conv2d over the head axis, which is this einsum over heads
(its pre and post mixes are square; here P_l [h_k, h] and P_w [h, h_v]).

Prints one JSON line: {"peer": "torch", "version": ..., "threads": ...,
"mode": "prefill" | "decode", "seconds": median time of one call, ...}.
clattn-bench runs it and divides by its own times; run by hand it is the
same figure the bench reads.

Decode (--decode) times one new query against caches of --kv-seq rows,
rotating over enough per-"layer" caches (>= --cold-mib MiB) that no step
finds K/V still in the last-level cache, as the C bench does.
"""
import argparse
import json
import statistics
import sys
import time

from torch_peer import start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--kv-seq", type=int, default=2048)
    ap.add_argument("--heads-k", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--heads-v", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--causal", type=int, default=0)
    ap.add_argument("--decode", action="store_true")
    ap.add_argument("--cold-mib", type=int, default=512)
    a, torch = start(ap, reps=5)
    if torch is None:
        return 1
    b, hk, h, hv, d = a.batch, a.heads_k, a.heads, a.heads_v, a.head_dim
    m = a.kv_seq
    n = 1 if a.decode else a.seq
    scale = d ** -0.5
    p_l = torch.randn(hk, h) / hk ** 0.5
    p_w = torch.randn(h, hv) / h ** 0.5
    mask_value = -torch.finfo(torch.float32).max
    causal = None
    if a.causal and not a.decode:
        # query i sees key t iff t <= m - n + i (the queries are the last n)
        causal = torch.ones(n, m, dtype=torch.bool).triu(m - n + 1)

    def attend(q, k, v):
        sim = torch.einsum("b a i d, b a j d -> b a i j", q, k) * scale
        sim = torch.einsum("b a i j, a c -> b c i j", sim, p_l)
        if causal is not None:
            sim = sim.masked_fill(causal, mask_value)
        attn = sim.softmax(dim=-1)
        attn = torch.einsum("b c i j, c u -> b u i j", attn, p_w)
        return torch.einsum("b u i j, b u j d -> b u i d", attn, v)

    if a.decode:
        layer_bytes = 4 * b * m * (hk + hv) * d
        layers = max(2, -(-(a.cold_mib << 20) // layer_bytes))
    else:
        layers = 1
    ks = [torch.randn(b, hk, m, d) for _ in range(layers)]
    vs = [torch.randn(b, hv, m, d) for _ in range(layers)]
    q = torch.randn(b, hk, n, d)

    times = []
    with torch.inference_mode():
        for r in range(a.reps + 1):  # the first pass warms up
            t0 = time.perf_counter()
            for l in range(layers):
                o = attend(q, ks[l], vs[l])
            t = (time.perf_counter() - t0) / layers
            if r > 0:
                times.append(t)
    print(json.dumps({
        "peer": "torch", "version": torch.__version__,
        "threads": torch.get_num_threads(),
        "mode": "decode" if a.decode else "prefill",
        "layers": layers, "reps": a.reps,
        "seconds": statistics.median(times),
        "finite": bool(torch.isfinite(o).all()),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
