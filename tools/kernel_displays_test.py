#!/usr/bin/python3
"""What a researcher sees, through jupyter_client: the displays of tensors, outputs, status, step metrics, charts and
tables (text/plain and text/html), stop_on_error as IPython honours it, library log lines on the right stream,
%lsmagic, %train help.

    JUPYTER_PATH=... /usr/bin/python3 tools/kernel_displays_test.py [KERNEL_NAME]   (default: ane4j)

Run by ane4j.notebook.KernelDisplaysTest (mvn test). Exit status 0 when every check passes.
"""
import re
import sys
import time


KERNEL = sys.argv[1] if len(sys.argv) > 1 else "ane4j"
from kernel_client import ANSI, check, finish, interrupt_cell, kernel, of, run, thread_cpu_seconds
import tempfile


def result(msgs):
    res = of(msgs, "execute_result")
    return res[0]["data"] if res else {}


def streams(msgs, name):
    return "".join(s["text"] for s in of(msgs, "stream") if s["name"] == name)


def replies(kc, ids, timeout=60):
    """The execute replies of ids (sent without waiting, as Run All does), by id."""
    got = {}
    while len(got) < len(ids):
        m = kc.get_shell_msg(timeout=timeout)
        pid = m["parent_header"].get("msg_id")
        if pid in ids:
            got[pid] = m["content"]
    return got


def main():
    with kernel(KERNEL) as (km, kc):
        # in-process session: no worker JVM to start for these displays
        run(kc, 'System.setProperty("ane4j.session", "local");')

        reply, msgs = run(kc, 'var g = Mil.program().function("main", f -> f.output(f.named("y", f.relu(f.input("x", Mil.fp16(1, 2, 1, 3)))))).build();\n'
                              'var k = Ane.compile(g);\n'
                              'k.run(Map.of("x", new float[]{-1f, 0.5f, 2f, 3.25f, -0.125f, 1f}))')
        d = result(msgs)
        text = d.get("text/plain", "")
        check(reply["status"] == "ok" and text.startswith("y: fp16[1,2,1,3]  min 0  max 3.25  mean 1.125")
              and "TensorBuffer" not in text, "the outputs map shows name, dtype+shape, min/max/mean:\n" + text)
        check(text.splitlines()[1:] == ["  [0]    0  0.5    2", "  [1] 3.25    0    1"], "and a grid of a small tensor:\n" + text)
        check("<b>y</b>" in d.get("text/html", "") and "<table" in d.get("text/html", ""), "the outputs map as HTML with a grid")

        reply, msgs = run(kc, 'TensorBuffer.of(TensorType.of(DType.FP32, 1, 64, 1, 64), new float[4096])')
        text = result(msgs).get("text/plain", "")
        check(text.startswith("fp32[1,64,1,64]  min 0  max 0  mean 0\n  [0, 0,") and text.endswith("… 4080 more]"),
              "a large tensor: shape, stats, first values:\n" + text)

        reply, msgs = run(kc, "Ane.status()")
        text = result(msgs).get("text/plain", "")
        check(text.startswith("backend ref · chip ") and "compiles 1 (no budget)" in text and "9223372036854775807" not in text
              and "Status[" not in text, "the session status reads as a sentence: " + text)

        reply, msgs = run(kc, "new ane4j.run.StepMetrics(0, 40, 6.2373528f, 0.00006000000212225132f, 256f, 1.5f, true, false, 12.34, 16961.4, Map.of())")
        text = result(msgs).get("text/plain", "")
        check(text == "step 1/40  loss 6.2374  lr 6.00e-05  16961 tok/s  12.3 ms/step · grad norm 1.5 · loss scale 256",
              "step metrics: the progress line of ane4j train (1-based), then grad norm and loss scale: " + text)

        reply, msgs = run(kc, "import org.knowm.xchart.*;\n"
                              "XYChart c = new XYChartBuilder().width(400).height(300).title(\"loss\").build();\n"
                              "c.addSeries(\"train\", new double[]{1, 2, 3}, new double[]{3.0, 2.5, 2.25});\nc")
        d = result(msgs)
        check(d.get("text/plain") == 'XYChart "loss" 400×300: train (3 points)' and "image/png" in d,
              "a chart: PNG and a one-line text/plain: " + str(d.get("text/plain")))

        reply, msgs = run(kc, 'import tech.tablesaw.api.*;\nTable.create("m", IntColumn.create("step", 1, 2), '
                              'DoubleColumn.create("lr", 0.00006000000212225132, 6.2373528480529785))')
        d = result(msgs)
        check("<td>6e-05</td>" in d.get("text/html", "") and "<td>6.237</td>" in d.get("text/html", "")
              and d.get("text/plain") == "m\nstep     lr\n   1  6e-05\n   2  6.237", "table numbers rounded in HTML and text:\n" + str(d.get("text/plain")))

        # library logs: INFO is news (stdout), WARNING is a problem (stderr)
        reply, msgs = run(kc, 'System.getLogger("ane4j.test").log(System.Logger.Level.INFO, "chose backend ref");\n'
                              'System.getLogger("ane4j.test").log(System.Logger.Level.WARNING, "slow path");')
        out, err = streams(msgs, "stdout"), streams(msgs, "stderr")
        check("INFO: chose backend ref" in out and "chose backend" not in err and "WARNING: slow path" in err,
              f"INFO lines on stdout, WARNING on stderr: stdout {out!r} stderr {err!r}")

        reply, msgs = run(kc, "%lsmagic")
        text = result(msgs).get("text/plain", "")
        rows = [l.split()[0] for l in text.splitlines()[2:]]
        check(rows.count("%jars") == 1 and "%jar" not in rows and "%help" not in rows and rows.count("%%train") == 1
              and [r.lstrip("%") for r in rows] == sorted(r.lstrip("%") for r in rows), "%lsmagic: each magic once, sorted:\n" + text)

        reply, msgs = run(kc, "%train help")
        text = result(msgs).get("text/plain", "")
        check(reply["status"] == "ok" and "%%train [NAME]" in text and "\n  steps " in text and "\n  seed " in text,
              "%train help before any run lists the keys:\n" + text[:400])
        reply, msgs = run(kc, "%%train --help\nsteps = 3")
        check(result(msgs).get("text/plain", "") == text, "%%train --help is the same text and trains nothing")

        # training displays (in-process session): live line, plot, one summary; a resume keeps global steps and history
        runs = tempfile.mkdtemp(prefix="ane4j-displays-")
        reply, msgs = run(kc, f"%%train first\nsteps = 4\nseed = 1\nbackend = ref\nevalEvery = 2\ncheckpointEvery = 2\nrunDir = {runs}/a", timeout=300)
        summary = result(msgs).get("text/plain", "")
        updates = [u["data"].get("text/plain", "") for u in of(msgs, "update_display_data")]
        check(reply["status"] == "ok" and "finished at step 4/4" in summary and "validation loss" in summary and "tokens/s" in summary
              and f"{runs}/a" in summary, "%%train ends with one summary (train and validation loss, tokens/s, run dir):\n" + summary + str(of(msgs, "error"))[:400])
        check(any(u.startswith("step 4/4") for u in updates), "the live line reaches step 4/4: " + str(updates[-3:]))
        lines = [u for u in updates if u.startswith("step 4/4")]
        check(re.fullmatch(r"step 4/4  loss \d+\.\d{4}  val \d+\.\d{4}  lr \d\.\d\de-\d\d  \d+ tok/s  \d+\.\d ms/step  ETA \d+:\d\d · finished", lines[-1]) is not None,
              "the live line is ane4j train's progress line (ane4j.run.ProgressLine) with the run's state: " + lines[-1])
        charts = [u["data"]["text/plain"] for u in of(msgs, "display_data") + of(msgs, "update_display_data") if "image/png" in u["data"]]
        check(charts and "train (raw) (4 points)" in charts[-1] and "validation" in charts[-1], "the plot has the raw, EMA and validation curves: " + str(charts[-1:]))
        reply, msgs = run(kc, f"%%train again\nsteps = 6\nseed = 1\nbackend = ref\nevalEvery = 2\nrunDir = {runs}/a\nresume = true", timeout=300)
        summary = result(msgs).get("text/plain", "")
        updates = [u["data"].get("text/plain", "") for u in of(msgs, "update_display_data")]
        check("at step 6/6" in summary and any(u.startswith("step 6/6") for u in updates) and not any(u.startswith("step 2/6") for u in updates),
              "a resumed run counts global steps (5, 6 after 4), not 1, 2: " + str(updates[-3:]) + "\n" + summary)
        reply, msgs = run(kc, "again.chart().getSeriesMap().get(\"train (raw)\").getXData()[0] + \" \" + again.fullHistory().size()")
        check(result(msgs).get("text/plain") == "1.0 6", "after a resume the plot shows the whole history from step 1: " + str(result(msgs)))
        reply, msgs = run(kc, "%train plot log")
        check("image/png" in result(msgs), "%train plot log gives a PNG")
        reply, msgs = run(kc, "again.chart().getStyler().isYAxisLogarithmic()")
        check(result(msgs).get("text/plain") == "true", "with a log-scale loss axis")

        # Interrupt around Ane.train stops the run; the cell thread does not spin
        pid = km.provisioner.pid
        err, latency, busy = interrupt_cell(km, kc, f'Ane.train("steps = 100000; seed = 2; backend = ref; runDir = {runs}/b");', after=4.0, timeout=120)
        idle = thread_cpu_seconds(pid, "ane4j-cell", 1.0)
        reply, msgs = run(kc, "Ane.lastRun().state()")
        check(result(msgs).get("text/plain") == "STOPPED" and latency < 20, f"Interrupt stops Ane.train: {result(msgs).get('text/plain')} after {latency:.1f} s")
        if idle is not None:
            check(idle < 0.05, f"and the cell thread is idle afterwards ({idle:.2f} CPU s in 1 s)")

        # stop_on_error: a failing cell aborts the cells queued behind it (Run All), as IPython does
        t0 = time.monotonic()
        ids = [kc.execute('Thread.sleep(300);\nthrow new IllegalStateException("boom");'),
               kc.execute("int afterError = 1;"), kc.execute("afterError + 1")]
        got = replies(kc, ids)
        check([got[i]["status"] for i in ids] == ["error", "aborted", "aborted"], "the queued cells are aborted: " + str([got[i]["status"] for i in ids]))
        reply, msgs = run(kc, "1 + 1")
        check(reply["status"] == "ok" and result(msgs).get("text/plain") == "2", "a cell sent after the abort runs")
        reply, msgs = run(kc, "afterError")
        check(reply["status"] == "error", "the aborted cell did not run (afterError is undefined)")
        # a cell the frontend marks as expected to fail (stop_on_error false: nbclient's raises-exception tag)
        ids = [kc.execute('Thread.sleep(300);\nthrow new IllegalStateException("expected");', stop_on_error=False),
               kc.execute("int afterExpected = 2;"), kc.execute("afterExpected * 21")]
        got = replies(kc, ids)
        check([got[i]["status"] for i in ids] == ["error", "ok", "ok"], "stop_on_error false: the next cells run: " + str([got[i]["status"] for i in ids]))
        print(f"stop_on_error checks took {time.monotonic() - t0:.2f} s", flush=True)
    finish()


if __name__ == "__main__":
    main()
