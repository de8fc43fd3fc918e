#!/usr/bin/python3
"""Drives the ane4j Jupyter kernel through jupyter_client like a notebook does, and checks every reply.

    JUPYTER_PATH=... /usr/bin/python3 tools/kernel_client_test.py [KERNEL_NAME]   (default: ane4j)

Prints the kernel start -> first cell result time. Exit status 0 when every check passes.
Run by ane4j.notebook.JupyterClientTest (mvn test); needs Debian's python3-jupyter-client.
"""
import base64
import re
import sys
import time

from jupyter_client.manager import start_new_kernel

KERNEL = sys.argv[1] if len(sys.argv) > 1 else "ane4j"
from kernel_client import ANSI, check, failures, finish, of, run


def main():
    t0 = time.monotonic()
    km, kc = start_new_kernel(kernel_name=KERNEL, startup_timeout=60)
    t_ready = time.monotonic() - t0
    try:
        reply, msgs = run(kc, "6 * 7")
        t_first = time.monotonic() - t0
        print(f"kernel start -> ready {t_ready:.2f} s, -> first cell result {t_first:.2f} s", flush=True)
        res = of(msgs, "execute_result")
        check(reply["status"] == "ok" and res and res[0]["data"]["text/plain"] == "42", "6 * 7 gives 42")

        info = kc.kernel_info(reply=True, timeout=30)["content"]
        check(info.get("status") == "ok" and info["language_info"]["name"] == "Java", "kernel_info_reply has status ok and language Java")

        reply, msgs = run(kc, 'System.out.println("hello from java");')
        check(any(s["name"] == "stdout" and "hello from java" in s["text"] for s in of(msgs, "stream")), "stdout stream")

        reply, msgs = run(kc, "import tech.tablesaw.api.*;\n"
                              "Table t = Table.create(\"metrics\", IntColumn.create(\"step\", 1, 2, 3),\n"
                              "    DoubleColumn.create(\"loss\", 3.0, 2.5, 2.25));\n"
                              "display(t);\n"
                              "t.rowCount()")
        dd = of(msgs, "display_data")
        check(reply["status"] == "ok" and dd and "<th>loss</th>" in dd[0]["data"].get("text/html", "")
              and "<td>2.25</td>" in dd[0]["data"]["text/html"], "display(Table) sends text/html with the table")
        check(dd and dd[0].get("transient", {}).get("display_id"), "display_data carries a display_id")
        res = of(msgs, "execute_result")
        check(res and res[0]["data"]["text/plain"] == "3", "the cell's last expression is still its result")

        reply, msgs = run(kc, "import org.knowm.xchart.*;\n"
                              "XYChart c = new XYChartBuilder().width(400).height(300).title(\"loss\").build();\n"
                              "c.addSeries(\"loss\", new double[]{1, 2, 3}, new double[]{3.0, 2.5, 2.25});\n"
                              "c")
        res = of(msgs, "execute_result")
        png = base64.b64decode(res[0]["data"]["image/png"]) if res and "image/png" in res[0]["data"] else b""
        check(png.startswith(b"\x89PNG\r\n\x1a\n"), "an XChart chart renders as image/png")
        check(res and res[0]["metadata"].get("image/png", {}).get("width") == 400, "png metadata has the chart width")

        reply, msgs = run(kc, 'var h = display("step 0");\nfor (int i = 1; i <= 3; i++) h.update("step " + i);')
        dd, ud = of(msgs, "display_data"), of(msgs, "update_display_data")
        ids = {u["transient"]["display_id"] for u in ud}
        check(len(dd) == 1 and len(ud) == 3 and ids == {dd[0]["transient"]["display_id"]}
              and ud[-1]["data"]["text/plain"] == "step 3", "display handle: 1 display_data then 3 update_display_data")
        check(not of(msgs, "execute_result"), "a display handle is not shown as Out")

        reply, msgs = run(kc, "%ane")
        res = of(msgs, "execute_result")
        html = res[0]["data"].get("text/html", "") if res else ""
        check("worker" in html and "compile budget" in html and "live kernels" in html and "JDK" in html, "%ane shows JDK, compile budget, worker state and live kernels as a table")

        reply, msgs = run(kc, 'int ok = 1;\nint bad = "text";')
        err = of(msgs, "error")
        tb = ANSI.sub("", "\n".join(err[0]["traceback"])) if err else ""
        check(reply["status"] == "error" and err and err[0]["ename"] == "CompilationError", "compile error: status error, ename")
        check('int bad = "text";' in tb and "line 2" in tb and "^" in tb, "compile error shows the offending line:\n" + tb)

        reply, msgs = run(kc, "Object o = null;\no.hashCode()")
        err = of(msgs, "error")
        tb = ANSI.sub("", "\n".join(err[0]["traceback"])) if err else ""
        check(err and err[0]["ename"] == "NullPointerException" and "o.hashCode()" in tb.splitlines()[1]
              and "$JShell" not in tb, "exception: real name, user frame first, no JShell internals:\n" + tb)

        reply, msgs = run(kc, "%nosuch")
        err = of(msgs, "error")
        check(err and "%lsmagic" in err[0]["evalue"], "unknown magic is a one-line error")

        c = kc.complete("System.out.pri", 14, reply=True, timeout=30)["content"]
        check(c["status"] == "ok" and "println(" in c["matches"] and c["cursor_start"] == 11, "completion of System.out.pri")
        c = kc.complete("%an", 3, reply=True, timeout=30)["content"]
        check("ane" in c["matches"], "completion of magic names")

        i = kc.inspect("Math.max(", 5, reply=True, timeout=30)["content"]
        check(i["status"] == "ok" and i["found"] and "max(" in i["data"]["text/plain"], "inspection of Math.max")

        kc.is_complete("for (int i = 0; i < 3; i++) {")
        ic = kc.get_shell_msg(timeout=30)["content"]
        check(ic["status"] == "incomplete", "is_complete: an open block is incomplete")

        reply, msgs = run(kc, "%maven commons-io:commons-io:2.16.1\n", timeout=300)
        check(reply["status"] == "ok", "%maven resolves from Maven Central: " + str(of(msgs, "error")))
        reply, msgs = run(kc, 'org.apache.commons.io.FilenameUtils.getExtension("model.bin")')
        res = of(msgs, "execute_result")
        check(res and res[0]["data"]["text/plain"] == "bin", "a class from the %maven jar is usable")

        msg_id = kc.execute("Thread.sleep(60_000);")
        time.sleep(1.5)
        t_int = time.monotonic()
        km.interrupt_kernel()
        err = None
        while True:
            m = kc.get_iopub_msg(timeout=30)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "error":
                err = m["content"]
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
        check(err and err["ename"] == "Interrupted" and time.monotonic() - t_int < 10, "interrupt stops a sleeping cell")
        reply, msgs = run(kc, "1 + 1")
        check(of(msgs, "execute_result")[0]["data"]["text/plain"] == "2", "the kernel works after an interrupt")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    finish()


if __name__ == "__main__":
    main()
