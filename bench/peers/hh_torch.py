#!/usr/bin/env python3
"""hh_torch.py - the PyTorch peer of clattn-bench's hh section: Hosseini &
Hosseini's Optimised, Efficient and Super attention layers and multi-head
attention (MHA) on the CPU, prefill without a cache, f32, written as
NMesaC/pay-better-attention-pytorch-keras writes them
(pytorch_implementation/pytorch_attention_shared_wa.py), with the heads
batched instead of looped and no biases (clattn's Decision 7):

  MHA        Q = x W_q, K = x W_k, V = x W_v
  Optimised  Q = x W_q, K = x W_k, V_i = X_i
  Efficient  Q = x W_q, K_i = V_i = X_i
  Super      Q = x W_q, K_i = X_i, V = W_a[:n, :n] X  (its lower triangle
             when causal: one W_a shared by the heads, from the left)

head i reading the channel slice X_i of width D/h, the heads' outputs
concatenated and projected by W_o; the core is
F.scaled_dot_product_attention.

Prints one JSON line: {"peer": "torch", "version": ..., "threads": ...,
"mha_seconds": ..., "optimised_seconds": ..., "efficient_seconds": ...,
"super_seconds": ...}, each the median time of one layer call.  The four
layers are timed alternately round by round, each timing a batch of calls
of at least --min-seconds, so that drift hits all of them alike.
"""
import argparse
import json
import sys

from torch_peer import start, time_alternating

VARIANTS = ("mha", "optimised", "efficient", "super")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--max-len", type=int, default=512)
    ap.add_argument("--causal", type=int, default=1)
    a, torch = start(ap, reps=7, min_seconds=0.02)
    if torch is None:
        return 1
    import torch.nn.functional as F
    D, h, n, ml = a.d_model, a.heads, a.seq, a.max_len
    if D % h != 0 or n > ml:
        print(json.dumps({"peer": "torch",
                          "error": "heads must divide d_model, seq <= max-len"}))
        return 1
    dh = D // h
    causal = bool(a.causal)
    amp = D ** -0.5
    w = {name: (torch.rand(D, D) * 2 - 1) * amp
         for name in ("q", "k", "v", "o")}
    w_a = (torch.rand(ml, ml) * 2 - 1) * ml ** -0.5
    x = torch.rand(1, n, D) * 2 - 1

    def heads(t):  # [b, n, D] -> [b, h, n, D/h]: head i is slice i
        return t.view(t.shape[0], t.shape[1], h, dh).transpose(1, 2)

    def merge(o):  # [b, h, n, D/h] -> [b, n, D]
        return o.transpose(1, 2).reshape(o.shape[0], o.shape[2], D)

    def core(q, k, v):
        return F.scaled_dot_product_attention(heads(q), heads(k), heads(v),
                                              is_causal=causal)

    def mha(x):
        return merge(core(x @ w["q"], x @ w["k"], x @ w["v"])) @ w["o"]

    def optimised(x):
        return merge(core(x @ w["q"], x @ w["k"], x)) @ w["o"]

    def efficient(x):
        return merge(core(x @ w["q"], x, x)) @ w["o"]

    def super_(x):
        mix = w_a[:n, :n]
        if causal:
            mix = mix.tril()
        return merge(core(x @ w["q"], x, mix @ x)) @ w["o"]

    layers = {"mha": mha, "optimised": optimised, "efficient": efficient,
              "super": super_}
    with torch.inference_mode():
        seconds, y = time_alternating(
            {v: (lambda f=layers[v]: f(x)) for v in VARIANTS}, a.reps,
            a.min_seconds)
    out = {"peer": "torch", "version": torch.__version__,
           "threads": torch.get_num_threads(), "d_model": D, "heads": h,
           "seq": n, "max_len": ml, "causal": int(causal), "reps": a.reps,
           "finite": all(bool(torch.isfinite(o).all()) for o in y.values())}
    for v in VARIANTS:
        out[v + "_seconds"] = seconds[v]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
