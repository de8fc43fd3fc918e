#!/usr/bin/python3
"""The installed kernelspec on its own: started through jupyter_client after the checkout's target/ is gone and the
checkout moved, it runs cells and a worker JVM from the jars in its kernelspec directory.

    JUPYTER_DATA_DIR=... /usr/bin/python3 tools/kernel_install_test.py KERNELSPEC_DIR [KERNEL_NAME]

Run by ane4j.notebook.KernelInstallTest (mvn test). Exit status 0 when every check passes.
"""
import sys


SPEC = sys.argv[1]
KERNEL = sys.argv[2] if len(sys.argv) > 2 else "ane4j"
from kernel_client import check, finish, kernel, of, run


def text(msgs):
    res = of(msgs, "execute_result")
    return res[0]["data"].get("text/plain", "") if res else ""


def main():
    with kernel(KERNEL) as (km, kc):
        check(km.kernel_spec.resource_dir == SPEC, f"the kernel is the installed one: {km.kernel_spec.resource_dir}")
        reply, msgs = run(kc, "6 * 7")
        check(text(msgs) == "42", "the installed kernel runs a cell: " + str(of(msgs, "error"))[:300])
        reply, msgs = run(kc, 'System.getProperty("java.class.path")')
        cp = text(msgs)
        check(SPEC + "/lib/ane4j.jar" in cp and "/target/" not in cp, "its class path is the kernelspec's lib/: " + cp[:300])
        reply, msgs = run(kc, 'var g = Mil.program().function("main", f -> f.output(f.named("y", f.relu(f.input("x", Mil.fp16(1, 2, 1, 1)))))).build();\n'
                              'java.util.Arrays.toString(Ane.compile(g).run(-1f, 2f)) + " " + Ane.status().worker()', timeout=180)
        check(text(msgs).startswith("[0.0, 2.0] ") and "pid" in text(msgs), "a worker JVM started from the kernelspec's jars compiles and runs: "
              + text(msgs) + str(of(msgs, "error"))[:300])
    finish()


if __name__ == "__main__":
    main()
