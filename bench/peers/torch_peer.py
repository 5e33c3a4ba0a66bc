"""torch_peer.py - what the PyTorch peers share: torch set up as the C
bench runs its side, or the JSON error line the bench reads instead."""
import json


def load_torch(threads):
    """torch with `threads` intra-op threads, one inter-op thread and seed
    0; None, after printing the error line, when torch is missing."""
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"peer": "torch", "error": str(e)}))
        return None
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.manual_seed(0)
    return torch
