#!/usr/bin/env python3
"""Time to the first training step of a %%train cell, through a real Jupyter client (jupyter_client).

    JUPYTER_PATH=... /usr/bin/python3 tools/bench_first_step.py [--kernel ane4j] [--repeat 3] [--idle 0,10]

For each idle time: start a kernel, wait that long (a user reading the notebook), run

    %%train
    model = tiny
    steps = 20

and measure from the execute request to the first display that shows "step 1/" (the live progress line), and to the
cell's end. Each repeat starts a fresh kernel (and with it a fresh worker JVM). Prints one line per run and the median
and range per idle time. Not a test: the figures depend on the machine and its load (printed with them).
"""
import argparse
import os
import statistics
import time

from kernel_client import kernel

CELL = "%%train\nmodel = tiny\nsteps = 20\n"


def texts(msg):
    c = msg["content"]
    data = c.get("data") or {}
    out = [v for k, v in data.items() if k.startswith("text/") and isinstance(v, str)]
    if msg["msg_type"] == "stream":
        out.append(c.get("text", ""))
    return out


def one(kernel_name, idle):
    with kernel(kernel_name) as (km, kc):
        time.sleep(idle)
        t0 = time.monotonic()
        msg_id = kc.execute(CELL)
        first_step = None
        setup = []
        while True:
            m = kc.get_iopub_msg(timeout=300)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            now = time.monotonic() - t0
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                return first_step, now, setup
            if m["msg_type"] == "error":
                raise SystemExit("the cell failed: " + m["content"].get("evalue", ""))
            for t in texts(m):
                if first_step is None and "step 1/" in t:
                    first_step = now
                elif first_step is None and ("starting" in t or "compiling" in t or "first step" in t):
                    setup.append((round(now, 2), t.strip()[:60]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default="ane4j")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--idle", default="0,10", help="seconds between the kernel's start and the cell, comma-separated")
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at the start; kernel {a.kernel}; cell: {CELL!r}", flush=True)
    for idle in [float(x) for x in a.idle.split(",")]:
        firsts, ends = [], []
        for i in range(a.repeat):
            first, end, setup = one(a.kernel, idle)
            firsts.append(first)
            ends.append(end)
            print(f"idle {idle:4.0f} s  run {i + 1}: first step after {first:.2f} s, cell done after {end:.2f} s; "
                  f"setup lines {len(setup)}: {setup[:3]}", flush=True)
        print(f"idle {idle:4.0f} s  first step: median {statistics.median(firsts):.2f} s (range {min(firsts):.2f}–{max(firsts):.2f}); "
              f"cell: median {statistics.median(ends):.2f} s; load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
