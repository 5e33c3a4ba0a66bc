"""ctx.attention against PyTorch's scaled_dot_product_attention, where
torch is importable (else a reported skip)."""

import numpy as np
import pytest

from conftest import TOLERANCE

try:
    import torch
except ImportError:
    torch = None

# A skip of each test rather than of the module, so that the JUnit report
# (tests/python.sh, tests/summary.py) names the reason with each.
pytestmark = pytest.mark.skipif(
    torch is None, reason="torch is not installed: no comparison with "
    "torch.nn.functional.scaled_dot_product_attention")


def sdpa(q, k, v, causal):
    """PyTorch's attention on BSHD NumPy arrays, GQA by repeating KV heads;
    its causal mask is top-left aligned, so a causal call takes n_q == n_kv."""
    tq, tk, tv = (torch.from_numpy(a).transpose(1, 2) for a in (q, k, v))
    group = q.shape[2] // k.shape[2]
    tk, tv = tk.repeat_interleave(group, dim=1), tv.repeat_interleave(group, dim=1)
    return torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal).transpose(1, 2).numpy()


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads_q,heads_kv", [(4, 4), (6, 2), (3, 1)])
def test_matches_sdpa(ctx, rng, causal, heads_q, heads_kv):
    n = 33
    q = rng.standard_normal((2, n, heads_q, 24)).astype(np.float32)
    k = rng.standard_normal((2, n, heads_kv, 24)).astype(np.float32)
    v = rng.standard_normal((2, n, heads_kv, 16)).astype(np.float32)
    got = ctx.attention(q, k, v, causal=causal)
    # Both compute in float32: twice the float32 tolerance against float64.
    tol = 2 * TOLERANCE["f32"]
    np.testing.assert_allclose(got, sdpa(q, k, v, causal), rtol=tol, atol=tol)
