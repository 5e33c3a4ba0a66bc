"""torch_peer.py - what the PyTorch peers share: the arguments
clattn-bench passes every peer, torch set up as the C bench runs its side
(or the JSON error line the bench reads instead), and the alternating
rounds the peers time their calls in."""
import json
import statistics
import time


def start(ap, reps, min_seconds=None):
    """Parse the peer's arguments with those clattn-bench passes every
    peer (--threads: PoCL's worker count; --reps; --min-seconds where the
    peer times batches) and load torch with the threads: (args, torch),
    torch None when it is missing."""
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=reps)
    if min_seconds is not None:
        ap.add_argument("--min-seconds", type=float, default=min_seconds)
    a = ap.parse_args()
    return a, load_torch(a.threads)


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


def time_alternating(calls, reps, min_seconds):
    """The median seconds per call of each of `calls` (name -> a function
    of no arguments), and each one's last output.  The calls are timed
    alternately round by round (the order reversed every other round),
    each timing a batch of calls of at least min_seconds, so that drift
    hits all of them alike, as clattn-bench times its sides.  Each call
    first warms up for a while, since torch's first calls of a shape are
    slow (allocations, kernel selection), and then its batch is sized."""
    names = list(calls)
    times = {n: [] for n in names}
    batch, out = {}, {}
    for n in names:
        t0 = time.perf_counter()
        warm = 0
        while warm < 5 or time.perf_counter() - t0 < 0.2:
            out[n] = calls[n]()
            warm += 1
        t0 = time.perf_counter()
        for _ in range(3):
            calls[n]()
        t = (time.perf_counter() - t0) / 3
        batch[n] = max(1, int(min_seconds / max(t, 1e-6)) + 1)
    for r in range(reps):
        for n in (names if r % 2 == 0 else names[::-1]):
            t0 = time.perf_counter()
            for _ in range(batch[n]):
                out[n] = calls[n]()
            times[n].append((time.perf_counter() - t0) / batch[n])
    return {n: statistics.median(times[n]) for n in names}, out
