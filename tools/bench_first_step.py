#!/usr/bin/env python3
"""Time to the first training step of a %%train cell, through a real Jupyter client (jupyter_client).

    JUPYTER_PATH=... /usr/bin/python3 tools/bench_first_step.py [--kernel ane4j] [--repeat 3] [--idle 0,10] [--prestart on,off]

For each idle time: start a kernel, wait that long (a user reading the notebook), run

    %%train
    model = tiny
    steps = 20

and measure from the execute request to the first display that shows "step 1/" (the live progress line), and to the
cell's end. Each repeat starts a fresh kernel (and with it a fresh worker JVM). With --prestart on,off the kernels alternate
between the default (the worker starts with the kernel) and -Dane4j.worker.prestart=false (through JAVA_TOOL_OPTIONS),
side by side in one run. Prints one line per run and the median and range per idle time and mode. Not a test: the figures depend on the machine and its load (printed with them).
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


def one(kernel_name, idle, prestart):
    env = dict(os.environ)
    if not prestart:
        env["JAVA_TOOL_OPTIONS"] = (env.get("JAVA_TOOL_OPTIONS", "") + " -Dane4j.worker.prestart=false").strip()
    with kernel(kernel_name, env) as (km, kc):
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
    ap.add_argument("--prestart", default="on", help="on, off or on,off (side by side)")
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at the start; kernel {a.kernel}; cell: {CELL!r}", flush=True)
    modes = [m.strip() == "on" for m in a.prestart.split(",")]
    for idle in [float(x) for x in a.idle.split(",")]:
        firsts = {m: [] for m in modes}
        ends = {m: [] for m in modes}
        for i in range(a.repeat):
            for m in modes:
                first, end, setup = one(a.kernel, idle, m)
                firsts[m].append(first)
                ends[m].append(end)
                print(f"idle {idle:4.0f} s  prestart {'on ' if m else 'off'}  run {i + 1}: first step after {first:.2f} s, "
                      f"cell done after {end:.2f} s; setup: {setup}", flush=True)
        for m in modes:
            f = firsts[m]
            print(f"idle {idle:4.0f} s  prestart {'on ' if m else 'off'}  first step: median {statistics.median(f):.2f} s "
                  f"(range {min(f):.2f}–{max(f):.2f}); cell: median {statistics.median(ends[m]):.2f} s; load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
