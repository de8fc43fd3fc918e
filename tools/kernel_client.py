"""Shared helpers of the jupyter_client test scripts (kernel_client_test.py, notebook_client_test.py)."""
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
failures = []


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
