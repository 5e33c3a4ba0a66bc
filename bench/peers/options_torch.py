#!/usr/bin/env python3
"""options_torch.py - the PyTorch peer of clattn-bench's options section:
a causal prefill through F.scaled_dot_product_attention on the CPU, f32,
q, k, v [batch, heads, seq, head_dim], three ways:

  causal       is_causal=True (no mask tensor)
  causal_mask  an explicit boolean mask, key j visible to query i iff j <= i
  window_mask  an explicit boolean sliding-window mask: j <= i and
               i - W < j (Hugging Face's sliding_window, clattn's window)

PyTorch has no window argument: a model with a sliding window passes such
a mask, so the window's skipped work is work torch still does.

Prints one JSON line: {"peer": "torch", "version": ..., "threads": ...,
"causal_seconds": ..., "causal_mask_seconds": ...,
"window_mask_seconds": ..., "window_max_diff": ...}, each time the median
of one call; the three are timed alternately round by round, each timing
a batch of calls of at least --min-seconds.  window_max_diff: the largest
difference between the windowed output and one computed densely from the
same mask (softmax of the masked logits), a check that the mask is the
window.
"""
import argparse
import json
import sys

from torch_peer import start, time_alternating


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--window", type=int, default=512)
    a, torch = start(ap, reps=7, min_seconds=0.05)
    if torch is None:
        return 1
    import torch.nn.functional as F
    b, h, n, d, w = a.batch, a.heads, a.seq, a.head_dim, a.window
    if w < 1:
        print(json.dumps({"peer": "torch", "error": "--window must be >= 1"}))
        return 1
    q, k, v = (torch.rand(b, h, n, d) * 2 - 1 for _ in range(3))
    i = torch.arange(n).unsqueeze(1)
    j = torch.arange(n).unsqueeze(0)
    causal_mask = j <= i
    window_mask = causal_mask & (j > i - w)

    calls = {
        "causal": lambda: F.scaled_dot_product_attention(q, k, v,
                                                         is_causal=True),
        "causal_mask": lambda: F.scaled_dot_product_attention(
            q, k, v, attn_mask=causal_mask),
        "window_mask": lambda: F.scaled_dot_product_attention(
            q, k, v, attn_mask=window_mask),
    }
    with torch.inference_mode():
        seconds, out = time_alternating(calls, a.reps, a.min_seconds)
        # the window checked on the first head only (the dense logits of
        # every head would be heads * seq^2 floats)
        s = (q[:1, :1] @ k[:1, :1].transpose(-1, -2)) * d ** -0.5
        s = s.masked_fill(~window_mask, float("-inf"))
        dense = s.softmax(dim=-1) @ v[:1, :1]
        diff = float((out["window_mask"][:1, :1] - dense).abs().max())
    res = {"peer": "torch", "version": torch.__version__,
           "threads": torch.get_num_threads(), "batch": b, "heads": h,
           "seq": n, "head_dim": d, "window": w, "reps": a.reps,
           "window_max_diff": diff,
           "finite": all(bool(torch.isfinite(o).all()) for o in out.values())}
    for name in calls:
        res[name + "_seconds"] = seconds[name]
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
