#!/usr/bin/python3
"""`%train stop` typed in another cell stops a running `%%train` (and `Ane.train`) at once, over ZMQ as a notebook sends it.

    JUPYTER_PATH=... /usr/bin/python3 tools/kernel_stop_test.py [KERNEL_NAME]   (default: ane4j)

Sends a long %%train, then (queued behind it) an ordinary cell, then `%train stop`, then another ordinary cell, the
way a frontend does: every execute_request at once on the shell channel. Checks that the stop cell is answered while
the run runs, that the run ends early with its summary, a "stopped by %train stop (cell N)" line and a checkpoint of
its last step, that the ordinary cells run after it in order, and that the progress line said "starting worker…" and
"compiling kernel k/10 (…)…" before the first step line. Then the same stop for Ane.train(...) in a Java cell.
Run by ane4j.notebook.JupyterClientTest (mvn test); needs Debian's python3-jupyter-client.
"""
import os
import queue
import re
import sys
import tempfile
import time


from kernel_client import check, finish, kernel, run

KERNEL = sys.argv[1] if len(sys.argv) > 1 else "ane4j"
STOPPED = re.compile(r"stopped by %train stop \(cell (\d+)\) at step (\d+)/(\d+); checkpoint (\S+); %train resume continues")


class Cells:
    """Execute requests sent at once; their iopub messages and replies gathered by msg_id, in arrival order."""

    def __init__(self, kc):
        self.kc = kc
        self.iopub = {}     # msg_id -> messages
        self.idle = set()
        self.replies = {}   # msg_id -> reply content
        self.reply_order = []
        self.statuses = []  # (parent msg_id, state) in order

    def send(self, code):
        msg_id = self.kc.execute(code)
        self.iopub[msg_id] = []
        return msg_id

    def pump(self, timeout=0.1):
        """Reads what arrives on iopub and shell for `timeout` s."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                m = self.kc.get_iopub_msg(timeout=0.02)
                pid = m["parent_header"].get("msg_id")
                if m["msg_type"] == "status":
                    self.statuses.append((pid, m["content"]["execution_state"]))
                    if m["content"]["execution_state"] == "idle":
                        self.idle.add(pid)
                elif pid in self.iopub:
                    self.iopub[pid].append(m)
            except queue.Empty:
                pass
            while True:
                try:
                    r = self.kc.get_shell_msg(timeout=0)
                except queue.Empty:
                    break
                pid = r["parent_header"].get("msg_id")
                self.replies[pid] = r["content"]
                self.reply_order.append(pid)

    def wait(self, cond, timeout, what):
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError(what)
            self.pump(0.1)

    def done(self, msg_id):
        return msg_id in self.replies and msg_id in self.idle

    def texts(self, msg_id):
        """Everything a cell showed as text: streams, results, displays and their updates, in order."""
        out = []
        for m in self.iopub[msg_id]:
            c = m["content"]
            if m["msg_type"] == "stream":
                out.append(c["text"])
            elif m["msg_type"] in ("execute_result", "display_data", "update_display_data"):
                out.append(c["data"].get("text/plain", ""))
        return out

    def progress(self, msg_id):
        """The live progress line's states: the first text display and its updates, consecutive repeats folded."""
        first = None
        shown = []
        for m in self.iopub[msg_id]:
            if m["msg_type"] not in ("display_data", "update_display_data"):
                continue
            did = m["content"].get("transient", {}).get("display_id")
            text = m["content"]["data"].get("text/plain", "")
            if first is None and m["msg_type"] == "display_data" and text.startswith("step "):
                first = did
            if did == first and (not shown or shown[-1] != text):
                shown.append(text)
        return shown


def answered_first(cells, first, running):
    """Whether `first` was answered before `running` (which may not have replied yet). Not `not done(running)`: a run
    stopped after a 2 ms step can reply within the same read of the channel as the stop cell."""
    order = cells.reply_order
    return first in order and (running not in order or order.index(first) < order.index(running))


def main():
    runs = tempfile.mkdtemp(prefix="ane4j-stop-")
    with kernel(KERNEL) as (km, kc):
        cells = Cells(kc)
        train = cells.send(f"%%train\nbackend = ref\nsteps = 3000\nseed = 3\nrunDir = {runs}/long\n")
        # wait for a few steps so the stop lands mid-run (the worker starts and compiles first)
        cells.wait(lambda: any(re.match(r"step ([3-9]|\d\d+)/3000", t) for t in cells.progress(train)), 180, "the run's third step")
        status = cells.send("%train status")
        cells.wait(lambda: cells.done(status), 30, "the status cell's reply")
        status_text = "".join(cells.texts(status))
        check(not cells.done(train) and "· running" in status_text and "run dir" in status_text,
              "%train status is answered while the run runs: " + status_text)
        queued = cells.send("int afterTrain = 41;")
        stop = cells.send("%train stop")
        after = cells.send("afterTrain + 1")
        cells.wait(lambda: cells.done(stop), 30, "the stop cell's reply")
        check(answered_first(cells, stop, train), "the %train stop cell is answered while the %%train cell still runs")
        stop_reply = cells.replies[stop]
        stop_text = "".join(cells.texts(stop))
        check(stop_reply["status"] == "ok" and "stopping the training run after its current step" in stop_text,
              "the stop cell shows its own output: " + stop_text)
        # after the stop cell's idle, the running cell's busy again (a frontend takes any idle for the kernel's)
        # (published right after that idle: it may still be on its way when the reply and the idle have been read)
        i = cells.statuses.index((stop, "idle"))
        try:
            cells.wait(lambda: (train, "busy") in cells.statuses[i + 1:], 10, "busy again")
        except TimeoutError:
            pass
        check((train, "busy") in cells.statuses[i + 1:], "the kernel says busy again for the running cell after the stop cell's idle")
        cells.wait(lambda: cells.done(after), 120, "the cells queued behind the run")

        order = [m for m in cells.reply_order if m in (train, queued, stop, after)]
        check(order == [stop, train, queued, after], f"replies: the stop at once, then the run, then the queued cells in order: {order}")
        counts = {name: cells.replies[m].get("execution_count") for name, m in (("train", train), ("stop", stop), ("queued", queued), ("after", after))}
        check(counts["train"] < cells.replies[status]["execution_count"] < counts["stop"] < counts["queued"] < counts["after"], f"execution counts in the order the cells ran: {counts}")
        res = [c["content"]["data"]["text/plain"] for c in cells.iopub[after] if c["msg_type"] == "execute_result"]
        check(res == ["42"], f"the ordinary cells ran after the run, in order: {res}")

        shown = "\n".join(cells.texts(train))
        m = STOPPED.search(shown)
        check(m is not None, "the %%train cell ends with 'stopped by %train stop (cell N) at step …; checkpoint …':\n" + shown[-2000:])
        if m:
            cell, at, total, ckpt = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
            check(cell == counts["stop"], f"the line names the stop cell {counts['stop']}: {cell}")
            check(3 <= at < total == 3000, f"the run stopped early, at step {at} of {total}")
            check(os.path.exists(ckpt) and ckpt.endswith(f"ckpt-{at:08d}.ane4j"), f"the checkpoint of step {at} is on disk: {ckpt}")
        check(any("run" in t and "stopped at step" in t for t in cells.texts(train)), "the normal summary follows: 'stopped at step …'")

        # the progress line before step 1 (a fresh kernel: the worker starts, then the ten kernels compile)
        prog = cells.progress(train)
        print("progress line states:", prog[:16], "…", flush=True)
        setup = [p for p in prog if p.startswith("step 0/3000")]
        compiling = [int(x.group(1)) for x in (re.search(r"compiling kernel (\d+)/10 \(\w+\)…$", p) for p in setup) if x]
        # the line is redrawn every 50 ms, so a short stage can fall between two redraws (on a loaded machine even
        # 'starting worker…'); the events themselves, every one in order, are SetupProgressTest's: here, what was shown
        # came in the setup's order and said more than 'starting…'
        order = ["starting…", "starting worker…", "compiling kernel", "first step…"]
        rank = [next((k for k, o in enumerate(order) if o in p), -1) for p in setup]
        check(setup and min(rank) >= 0 and rank == sorted(rank) and any(r > 0 for r in rank),
              f"the line shows the setup stages in order (starting worker…, compiling kernel k/10 (name)…, first step…): {setup}")
        check(compiling == sorted(compiling), f"'compiling kernel k/10 (name)…' in order: {setup}")
        first_step = next(i for i, p in enumerate(prog) if re.match(r"step [1-9]", p))
        check(first_step == len(setup), "the step lines come after the setup lines")

        # Ane.train(...) in a Java cell stops the same way
        java = cells.send(f'var r = Ane.train("backend = ref; steps = 3000; seed = 4; runDir = {runs}/java");')
        cells.wait(lambda: any(t.startswith("step ") for t in cells.texts(java)), 240, "Ane.train's first progress line")
        stop2 = cells.send("%train stop")
        cells.wait(lambda: cells.done(stop2), 30, "the second stop cell's reply")
        check(answered_first(cells, stop2, java), "the stop cell is answered while Ane.train still runs")
        cells.wait(lambda: cells.done(java), 120, "Ane.train to end")
        shown = "".join(cells.texts(java))
        m = STOPPED.search(shown)
        check(cells.replies[java]["status"] == "ok" and m is not None and int(m.group(1)) == cells.replies[stop2]["execution_count"]
              and int(m.group(2)) < 3000, "Ane.train ends with 'stopped by %train stop (cell N)': " + shown[-600:])
        reply, msgs = run(kc, "r.state()")
        res = [c["content"]["data"]["text/plain"] for c in msgs if c["msg_type"] == "execute_result"]
        check(res == ["STOPPED"], f"the run object says STOPPED: {res}")

        # without a running run, %train stop is an ordinary cell
        reply, msgs = run(kc, "%train stop")
        res = [c["content"]["data"]["text/plain"] for c in msgs if c["msg_type"] == "execute_result"]
        check(reply["status"] == "ok" and res and res[0].startswith("not running"), f"%train stop with nothing running: {res}")
    finish()


if __name__ == "__main__":
    main()
