#!/usr/bin/env python3
"""Where a training step's CPU time goes, native frames included: `perf` sampling of `ane4j bench step`.

    python3 tools/perf_step.py --model stories110m --delay 9 --seconds 12

Starts `bin/ane4j bench step` (with enough steps to outlast the recording), attaches `perf record` to it after
--delay seconds (past setup and warm-up), samples every thread for --seconds, and prints the share of all samples per
category: OpenBLAS's GEMM kernels, their packing, transposing copies, AdamW, array copies, the reference interpreter,
the CPU ops, the JIT compiler, the rest. `bench step`'s own phase table says which phase is slow; this says what the
cores are doing inside it. Needs Linux `perf` (Debian's linux-perf) and perf_event_paranoid <= 2.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JCMD = os.path.join(os.environ.get("JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"), "bin", "jcmd")

# first match wins; a symbol is the function perf attributes a sample to
CATEGORIES = [
    ("GEMM kernels (OpenBLAS)", r"^sgemm_kernel"),
    ("GEMM packing and beta (OpenBLAS)", r"^sgemm_(it|in|ot|on)copy|^sgemm_beta|^sgemm_(nn|nt|tn|tt)$"),
    ("transposing copies (omatcopy)", r"^somatcopy"),
    ("AdamW and the gradient norm", r"ane4j\.train\.AdamW|VectorMathSimd\.sumOfSquares|VectorMath\.sumOfSquares"),
    ("array copies and fp16 rounding", r"StubRoutines|copyMemory|__mem(cpy|set|move)|ane4j\.backend\.(TensorBuffer|Fp16)"),
    ("reference interpreter (elementwise, softmax, exp)", r"ane4j\.backend\.ref\.|ane4j\.blas\.VectorMath"),
    ("CPU ops (norms, SwiGLU, RoPE, cross-entropy)", r"ane4j\.train\.CpuOps"),
    ("thread hand-offs (spin, queue)", r"ThreadPool|LinkedBlockingQueue|onSpinWait|futex|_raw_spin|finish_task_switch|schedule"),
    ("JIT compiler and GC (libjvm)", r"^(Phase|IndexSet|PhaseChaitin|Compile|G1|Node::|Matcher|LinearScan|ciEnv|Parse)|libjvm"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="stories110m")
    ap.add_argument("--delay", type=float, default=9.0, help="seconds before perf attaches (setup and warm-up)")
    ap.add_argument("--seconds", type=float, default=12.0, help="seconds perf records")
    ap.add_argument("--freq", type=int, default=499, help="samples per second per thread")
    ap.add_argument("--steps", type=int, default=0, help="bench steps (default: enough for the recording)")
    a = ap.parse_args()

    if subprocess.run(["which", "perf"], capture_output=True).returncode != 0:
        sys.exit("[perf] no perf on PATH: apt-get install linux-perf (Debian), then run again")
    steps = a.steps or 100000   # ended by this script once perf is done
    with tempfile.TemporaryDirectory() as tmp:
        log = open(os.path.join(tmp, "bench.log"), "w+")
        bench = subprocess.Popen([os.path.join(ROOT, "bin", "ane4j"), "bench", "step", "--model", a.model, "--steps", str(steps)],
                                 stdout=log, stderr=subprocess.STDOUT, text=True)
        perfmap = f"/tmp/perf-{bench.pid}.map"
        try:
            time.sleep(a.delay)
            if bench.poll() is not None:
                log.seek(0)
                lines = [l for l in log.read().splitlines() if l.strip()]
                sys.exit(f"[perf] bench step exited ({bench.returncode}) before perf attached"
                         + (": " + lines[-1] if bench.returncode else ": lower --delay or raise --steps"))
            data = os.path.join(tmp, "perf.data")
            rec = subprocess.run(["perf", "record", "-F", str(a.freq), "-p", str(bench.pid), "-o", data, "--", "sleep", str(a.seconds)],
                                 capture_output=True, text=True)
            # the JIT's code addresses → Java method names, in /tmp/perf-PID.map where perf report looks for them
            subprocess.run([JCMD, str(bench.pid), "Compiler.perfmap"], capture_output=True)
            if not os.path.exists(data) or os.path.getsize(data) == 0:
                sys.exit("[perf] perf record failed (perf_event_paranoid is " + open("/proc/sys/kernel/perf_event_paranoid").read().strip()
                         + "; it needs <= 2): " + (rec.stderr.strip().splitlines() or ["no message"])[-1])
            rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "sym", "--stdio", "-g", "none"],
                                 capture_output=True, text=True).stdout
        finally:
            # never leave the bench running (it was asked for many steps), nor its symbol map behind
            if bench.poll() is None:
                bench.terminate()
                bench.wait()
            if os.path.exists(perfmap):
                os.remove(perfmap)
    shares = {name: 0.0 for name, _ in CATEGORIES}
    other, top = 0.0, []
    for line in rep.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[[.k]\]\s+(.*)", line)
        if not m:
            continue
        pct, sym = float(m.group(1)), m.group(2).strip()
        for name, pattern in CATEGORIES:
            if re.search(pattern, sym):
                shares[name] += pct
                break
        else:
            other += pct
            top.append((pct, sym))
    print(f"perf: {a.model}, {a.seconds:g} s of `bench step` after {a.delay:g} s, all threads ({a.freq} samples/s each)")
    for name, _ in CATEGORIES:
        print(f"  {shares[name]:6.2f}%  {name}")
    print(f"  {other:6.2f}%  other, largest: " + "; ".join(f"{s[:60]} {p:.2f}%" for p, s in sorted(top, reverse=True)[:4]))


if __name__ == "__main__":
    main()
