#!/usr/bin/python3
"""Drives the ane4j magics through jupyter_client and checks the messages a notebook front end gets.

    JUPYTER_PATH=... /usr/bin/python3 tools/notebook_client_test.py [KERNEL_NAME]   (default: ane4j)

A %%mil cell (rich kernel display, values), a broken %%mil cell (positioned error), a fluent-API cell (highlighted MIL),
a %%train cell with a small compile budget (display_data image/png, update_display_data, restarts as one line each,
text/html metrics table), %train/%generate, and a killed worker (SIGKILL to the pid %ane shows) the kernel survives.
Run by ane4j.notebook.NotebooksTest (mvn test). Exit status 0 when every check passes.
"""
import base64
import os
import re
import signal
import sys
import time

from jupyter_client.manager import start_new_kernel

KERNEL = sys.argv[1] if len(sys.argv) > 1 else "ane4j"
from kernel_client import ANSI, check, failures, finish, of
from kernel_client import run as run_cell


def run(kc, code, timeout=300):
    return run_cell(kc, code, timeout)


def result_text(msgs):
    res = of(msgs, "execute_result")
    return res[0]["data"].get("text/plain", "") if res else ""


def stdout(msgs):
    return "".join(s["text"] for s in of(msgs, "stream") if s["name"] == "stdout")


MIL = """%%mil twice
program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 2, 1, 2]> x) {
        tensor<fp16, [1, 2, 1, 2]> y = add(x = x, y = x)[name = string("y")];
    } -> (y);
}"""


def main():
    km, kc = start_new_kernel(kernel_name=KERNEL, startup_timeout=60)
    try:
        reply, msgs = run(kc, MIL)
        res = of(msgs, "execute_result")
        html = res[0]["data"].get("text/html", "") if res else ""
        check(reply["status"] == "ok" and "kernel twice" in html and "fp16[1,2,1,2]" in html, "%%mil compiles and shows the kernel as HTML")
        reply, msgs = run(kc, "java.util.Arrays.toString(twice.run(1f, -2.5f, 3f, 0.25f))")
        check(result_text(msgs) == "[2.0, -5.0, 6.0, 0.5]", "the bound kernel runs from the next cell: " + result_text(msgs))

        reply, msgs = run(kc, MIL.replace("twice", "bad").replace("y = x)", "y = q)"))
        err = of(msgs, "error")
        tb = ANSI.sub("", "\n".join(err[0]["traceback"])) if err else ""
        lines = tb.splitlines()
        check(reply["status"] == "error" and err and err[0]["ename"] == "MilParseError" and "line 5, column 55" in err[0]["evalue"],
              "broken MIL: MilParseError at the cell's line 5 (line 1 is %%mil): " + (err[0]["evalue"] if err else ""))
        check(len(lines) >= 3 and lines[1].startswith("line 5 │") and lines[2].index("^") == lines[1].index("q)"), "caret under the column:\n" + tb)

        reply, msgs = run(kc, 'var g = Mil.program().function("main", f -> f.output(f.named("y", f.relu(f.input("x", Mil.fp16(1, 3, 1, 1)))))).build();\ng')
        res = of(msgs, "execute_result")
        data = res[0]["data"] if res else {}
        check("<span style=" in data.get("text/html", "") and ">relu</span>" in data.get("text/html", "")
              and "relu(x = x)" in data.get("text/plain", ""), "a fluent Program shows as highlighted MIL (html) and MIL text (plain)")
        reply, msgs = run(kc, "java.util.Arrays.toString(Ane.compile(g).run(-1f, 0f, 2f))")
        check(result_text(msgs) == "[0.0, 0.0, 2.0]", "Ane.compile(g) runs: " + result_text(msgs))

        t0 = time.monotonic()
        reply, msgs = run(kc, "%%train small\nsteps = 8\nseed = 3\nbackend = ref\nweights = static\ncompileBudget = 40", timeout=600)
        took = time.monotonic() - t0
        dd, ud = of(msgs, "display_data"), of(msgs, "update_display_data")
        pngs = [d for d in dd + ud if "image/png" in d["data"]]
        check(reply["status"] == "ok", "%%train completes: " + str(of(msgs, "error"))[:500])
        check(pngs and base64.b64decode(pngs[-1]["data"]["image/png"]).startswith(b"\x89PNG"), "the loss plot is display_data image/png")
        check(len(ud) >= 2 and all(u["transient"]["display_id"] in {d["transient"]["display_id"] for d in dd} for u in ud),
              f"progress and plot are updated in place ({len(ud)} update_display_data)")
        check(any("step 8/8" in u["data"].get("text/plain", "") for u in ud), "the progress line reaches step 8/8")
        out = stdout(msgs)
        restarts = [l for l in out.splitlines() if "restarted" in l]
        check(len(restarts) >= 1 and all(l.startswith("worker restarted: compile budget 40 reached — restored step ") for l in restarts),
              f"the worker restarts on its compile budget, one line each ({len(restarts)}):\n" + out)
        res = of(msgs, "execute_result")
        summary = res[0]["data"].get("text/plain", "") if res else ""
        check(summary.startswith("run ") and "finished at step 8/8" in summary and "train loss" in summary and "tokens/s" in summary
              and "run dir" in summary and len(summary.splitlines()) <= 8, "the cell ends with one compact summary:\n" + summary)
        check(not any("run record" in d["data"].get("text/html", "") for d in dd) and "<th>loss</th>" not in str(res),
              "no wall: the run record and the per-step table are not printed by the cell")
        reply, tmsgs = run(kc, "%train table")
        thtml = of(tmsgs, "execute_result")[0]["data"].get("text/html", "") if of(tmsgs, "execute_result") else ""
        check("<th>loss</th>" in thtml and thtml.count("<tr>") == 9 and "00000" not in thtml, "%train table: the 8 steps, numbers rounded")
        reply, rmsgs = run(kc, "%train record")
        rhtml = of(rmsgs, "execute_result")[0]["data"].get("text/html", "") if of(rmsgs, "execute_result") else ""
        check("run record" in rhtml and "seed" in rhtml, "%train record: the run record")
        print(f"%%train of 8 static-weight steps with restarts took {took:.1f} s", flush=True)

        reply, msgs = run(kc, "small.restarts() == " + str(len(restarts)))
        check(result_text(msgs) == "true", "one printed line per restart")
        reply, msgs = run(kc, 'small.markers().stream().filter(m -> m.label().equals("restart")).count() == small.restarts()')
        check(result_text(msgs) == "true", "the loss plot marks every restart")
        reply, msgs = run(kc, "%train status")
        check("step 8/8" in result_text(msgs) and "finished" in result_text(msgs), "%train status: " + result_text(msgs))
        reply, msgs = run(kc, "%train plot")
        res = of(msgs, "execute_result")
        check(res and "image/png" in res[0]["data"], "%train plot gives a PNG")
        reply, msgs = run(kc, "%generate Once upon a time --tokens 12 --seed 5")
        check(result_text(msgs).startswith("Once upon a time") and len(result_text(msgs)) > 20, "%generate: " + result_text(msgs))

        # a killed worker: the session's worker (pid in %ane's worker row) dies under the notebook
        reply, msgs = run(kc, "%ane")
        res = of(msgs, "execute_result")
        ane = res[0]["data"].get("text/html", "") if res else ""
        pid = re.search(r"pid (\d+)", ane)
        check(pid is not None and "restarts 0" in ane and "live kernels" in ane and "compile budget" in ane,
              "%ane shows the worker's pid, restarts, compile budget and live kernels:\n" + ane[:1500])
        if pid:
            os.kill(int(pid.group(1)), signal.SIGKILL)
            time.sleep(0.5)
            reply, msgs = run(kc, "java.util.Arrays.toString(twice.run(1f, 1f, 1f, 1f))")
            check(reply["status"] == "ok" and result_text(msgs) == "[2.0, 2.0, 2.0, 2.0]", "the kernel survives a killed worker: " + str(of(msgs, "error"))[:300])
            lines = [l for l in (stdout(msgs) + "".join(s["text"] for s in of(msgs, "stream") if s["name"] == "stderr")).splitlines() if "restarted" in l]
            check(len(lines) == 1 and lines[0].startswith("worker restarted: killed") and "recompiled" in lines[0],
                  f"one restart line naming the cause: {lines}")
            reply, msgs = run(kc, "Ane.status().worker()")
            new_pid = re.search(r"pid (\d+)", result_text(msgs))
            check(new_pid is not None and new_pid.group(1) != pid.group(1) and "restarts 1" in result_text(msgs), "a new worker: " + result_text(msgs))
        reply, msgs = run(kc, "6 * 7")
        check(result_text(msgs) == "42", "the kernel still answers")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    finish()


if __name__ == "__main__":
    main()
