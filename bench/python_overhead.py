#!/usr/bin/env python3
"""bench/python_overhead.py - a PyOpenCL-array ctx.attention call's host
time against the same clattn_attention call from C, in one run (issue 38).

The shape is small (batch 1, n 16, 4 heads of 32, float32, causal: the
attention shape of clattn-bench-overhead), so that the host dominates.
Both sides time each call alone, as bench/call_host_time.c does: a marker
that waits for a user event heads the queue (nothing runs on the device
while the call enqueues), the call is timed, then the event is set and the
queue drained outside the timing.  In each round the C program
(clattn-bench-call, built in BUILD/bench) runs its calls, then this
process times its own, alternating call by call: ctx.attention(qd, kd,
vd, causal=True, out=od) on pyopencl arrays, and the raw cffi call
lib.clattn_attention with a description made once (what the binding adds
over cffi alone).  It prints
each round's medians and, over the rounds, the medians of the C and Python
times, their difference and their ratio.  --profile runs cProfile over the
Python calls and prints where their time goes.  Nothing passes or fails.

    BUILD/python-venv/bin/python bench/python_overhead.py --c-program BUILD/bench/clattn-bench-call

(the clattn package installed in that interpreter, e.g. by tests/python.sh)."""

import argparse
import cProfile
import os
import pstats
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clattn
from clattn import ffi, lib

SHAPE = dict(batch=1, n=16, heads=4, dim=32)


def gated(ctx, call, reset=None):
    """The host seconds of call(), the device held back behind a gate;
    reset() runs first, outside the timing."""
    if reset is not None:
        reset()
    gate = cl.UserEvent(ctx.cl_context)
    cl.enqueue_marker(ctx.queue, wait_for=[gate])
    t0 = time.perf_counter()
    result = call()
    t = time.perf_counter() - t0
    gate.set_status(cl.command_execution_status.COMPLETE)
    ctx.queue.finish()
    del result  # a returned event released outside the timing
    return t


def c_median(program, device, calls):
    args = [program, "--calls", str(calls), "--batch", str(SHAPE["batch"]),
            "--n", str(SHAPE["n"]), "--heads", str(SHAPE["heads"]),
            "--dim", str(SHAPE["dim"]), "--causal", "1"]
    if device is not None:
        args += ["--device", device]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    found = re.search(r"median ([0-9.]+) us", out)
    if not found:
        sys.exit("python_overhead.py: no median in %s's output: %r" % (program, out))
    return float(found.group(1)) * 1e-6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--c-program", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bench", "clattn-bench-call"))
    ap.add_argument("--device", default=os.environ.get("CLATTN_TEST_DEVICE", "pthread"),
                    help="a clattn device spec (default $CLATTN_TEST_DEVICE, else pthread)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--profile", action="store_true",
                    help="cProfile the Python calls after the rounds")
    args = ap.parse_args()
    if args.rounds < 1 or args.calls < 1:
        ap.error("--rounds and --calls must be >= 1")
    if not os.access(args.c_program, os.X_OK):
        ap.error("--c-program: %s is not an executable (ninja -C build "
                 "bench/clattn-bench-call)" % args.c_program)

    ctx = clattn.Context(args.device)
    b, n, h, d = SHAPE["batch"], SHAPE["n"], SHAPE["heads"], SHAPE["dim"]
    arrays = [cla.zeros(ctx.queue, (b, n, h, d), np.float32) for _ in range(4)]
    qd, kd, vd, od = arrays
    ctx.queue.finish()
    for a in arrays:
        a.events.clear()

    def python_call():
        return ctx.attention(qd, kd, vd, causal=True, out=od)

    # A fresh out.events before each call: the C call waits for nothing
    # either (a loop that never waits lets pyopencl keep up to 12 events
    # there, which the next call then waits for).
    reset = od.events.clear

    desc = ctx.attention_desc(qd, kd, vd, causal=True)
    bufs = [ffi.cast("cl_mem", a.base_data.int_ptr) for a in arrays]

    def cffi_call():
        return ctx.check(lib.clattn_attention(ctx.handle, desc, bufs[0], bufs[1], bufs[2],
                                              ffi.NULL, bufs[3], ffi.NULL))

    for _ in range(50):  # the programs, the memo, the caches
        gated(ctx, python_call, reset)
        gated(ctx, cffi_call)

    print("ctx.attention on pyopencl arrays against clattn_attention from C: "
          "b=%d n=%d heads=%d d=%d f32 causal, %s, %d rounds of %d calls "
          "(host time a call, median)" % (b, n, h, d, ctx.device_name, args.rounds, args.calls))
    print("%5s %9s %9s %9s %9s %7s" % ("round", "C us", "cffi us", "py us", "py-C us", "py/C"))
    rows = []
    for r in range(args.rounds):
        c = c_median(args.c_program, args.device, args.calls)
        # The two in-process sides alternate call by call, so that a change
        # of the machine's pace hits both alike.
        raw_t, py_t = [], []
        for _ in range(args.calls):
            raw_t.append(gated(ctx, cffi_call))
            py_t.append(gated(ctx, python_call, reset))
        raw, py = statistics.median(raw_t), statistics.median(py_t)
        rows.append((c, raw, py))
        print("%5d %9.2f %9.2f %9.2f %9.2f %6.1fx" % (r + 1, 1e6 * c, 1e6 * raw, 1e6 * py,
                                                     1e6 * (py - c), py / c))
    c, raw, py = (statistics.median(col) for col in zip(*rows))
    ratio = statistics.median(p / cc for cc, _, p in rows)
    print("median: C %.2f us, cffi alone %.2f us, ctx.attention %.2f us: "
          "%.2f us over C (%.2f us over cffi alone), %.1fx C"
          % (1e6 * c, 1e6 * raw, 1e6 * py, 1e6 * (py - c), 1e6 * (py - raw), ratio))

    if args.profile:
        profiler = cProfile.Profile()
        for _ in range(args.calls):
            reset()
            gate = cl.UserEvent(ctx.cl_context)
            cl.enqueue_marker(ctx.queue, wait_for=[gate])
            profiler.enable()
            python_call()
            profiler.disable()
            gate.set_status(cl.command_execution_status.COMPLETE)
            ctx.queue.finish()
            del event
        print("\ncProfile of %d ctx.attention calls (the gate outside it), by own time:"
              % args.calls)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    ctx.close()


if __name__ == "__main__":
    main()
