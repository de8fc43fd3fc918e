"""Shared helpers of the jupyter_client test scripts (kernel_client_test.py, notebook_client_test.py)."""
import contextlib
import os
import re
import sys
import time

from jupyter_client.manager import start_new_kernel

ANSI = re.compile(r"\x1b\[[0-9;]*m")
failures = []


@contextlib.contextmanager
def kernel(name, env=None):
    """A started kernel of the kernelspec `name` (with `env`, else this environment): (manager, client), shut down when the
    block ends, failed or not."""
    km, kc = start_new_kernel(kernel_name=name, startup_timeout=60, **({"env": env} if env is not None else {}))
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def run(kc, code, timeout=60):
    """Executes one cell; returns (reply content, iopub messages of this cell up to idle)."""
    msg_id = kc.execute(code)
    out = []
    while True:
        m = kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
        out.append(m)
    reply = kc.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=timeout)
    return reply["content"], out


def of(msgs, kind):
    return [m["content"] for m in msgs if m["msg_type"] == kind]


def finish():
    """Exit status 1 with a count when a check failed, else 'all checks passed'."""
    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        sys.exit(1)
    print("all checks passed", flush=True)


# CPU time per thread comes from /proc (Linux); where there is none (macOS) the CPU checks are skipped, said in one line
HAS_PROC = os.path.isdir("/proc/self/task")


def cpu_seconds(pid, seconds=1.0):
    """CPU time (user + system, all threads) the process used over `seconds` of wall time, from /proc/PID/stat;
    None (after the wait) where there is no /proc."""
    if not HAS_PROC:
        time.sleep(seconds)
        return None
    def ticks():
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])   # utime, stime (fields 14 and 15 of proc(5))
    t0 = ticks()
    time.sleep(seconds)
    return (ticks() - t0) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid, name, seconds=1.0):
    """CPU time the threads called `name` (as /proc/PID/task/*/comm shows them) used over `seconds` of wall time;
    None (after the wait) where there is no /proc."""
    if not HAS_PROC:
        time.sleep(seconds)
        return None
    def ticks():
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    if f.read().strip() != name:
                        continue
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except FileNotFoundError:
                pass   # the thread ended
        return total
    t0 = ticks()
    time.sleep(seconds)
    return (ticks() - t0) / os.sysconf("SC_CLK_TCK")


def interrupt_cell(km, kc, code, after=1.5, timeout=30, pid=None):
    """Runs `code`, interrupts it after `after` s; returns (error content or None, interrupt -> idle seconds, cores
    the cell threads of process `pid` used in the last half second before the interrupt, or None)."""
    msg_id = kc.execute(code)
    busy = None
    if pid is None:
        time.sleep(after)
    else:
        time.sleep(after - 0.5)
        cell = thread_cpu_seconds(pid, "ane4j-cell", 0.5)
        busy = None if cell is None else cell / 0.5
    t_int = time.monotonic()
    km.interrupt_kernel()
    err = None
    while True:
        m = kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "error":
            err = m["content"]
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    latency = time.monotonic() - t_int
    reply = kc.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=timeout)
    return err, latency, busy
