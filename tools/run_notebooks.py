#!/usr/bin/python3
"""Executes the notebooks in notebooks/ top to bottom through nbclient with an installed kernel, then checks what
each one shows: the notebooks are write-ups with no test code in them, so the assertions live here, on their executed
outputs, found by cell id.

    JUPYTER_PATH=... /usr/bin/python3 tools/run_notebooks.py [KERNEL_NAME] [NOTEBOOK...]   (default: ane4j, all)

A notebook fails when a cell raises (except cells tagged raises-exception, which must raise), when it has no entry in
EXPECT below, or when one of its expectations fails. Notebooks whose metadata.ane4j.requires names data that is absent
are skipped with the reason. The committed notebooks must carry no outputs. The executed copies are written to
target/notebooks/. Prints one line per expectation; exit status 0 when all pass.
Run by ane4j.notebook.NotebooksTest (mvn test); needs Debian's python3-nbclient.
"""
import glob
import math
import os
import re
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL = sys.argv[1] if len(sys.argv) > 1 else "ane4j"
PATHS = sys.argv[2:] or sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
ANSI = re.compile(r"\x1b\[[0-9;]*m")
RAW_TOSTRING = re.compile(r"^[\w.$]+@[0-9a-f]{4,}$")
NUMBER = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"


class Cell:
    """One executed code cell: its outputs by kind, as a reader of the saved notebook sees them."""

    def __init__(self, cell):
        self.outputs = cell.outputs
        self.tags = cell.metadata.get("tags", [])

    def stdout(self):
        return "".join(o.text for o in self.outputs if o.output_type == "stream" and o.name == "stdout")

    def stderr(self):
        return "".join(o.text for o in self.outputs if o.output_type == "stream" and o.name == "stderr")

    def plain(self):
        """text/plain of the rich outputs (display_data, execute_result), in order."""
        return "\n".join(o.data.get("text/plain", "") for o in self.outputs if "data" in o)

    def result(self):
        res = [o for o in self.outputs if o.output_type == "execute_result"]
        return res[0].data.get("text/plain", "") if res else ""

    def html(self):
        return "\n".join(o.data.get("text/html", "") for o in self.outputs if "data" in o)

    def pngs(self):
        return [o.data["image/png"] for o in self.outputs if "data" in o and "image/png" in o.data]

    def error(self):
        errs = [o for o in self.outputs if o.output_type == "error"]
        return errs[0] if errs else None

    def all_text(self):
        return "\n".join([self.stdout(), self.stderr(), self.plain()])

    def number(self, label):
        """The number printed after `label` (a regex) in the cell's stdout, or None."""
        m = re.search(label + r"\s*" + NUMBER, self.stdout())
        return float(m.group(1)) if m else None


# ---- what each notebook must show (cells by id); each check returns (ok, description)

def caret_under(tb, prefix, token):
    """Whether the traceback's source line starting with `prefix` is followed by ^~~ under exactly `token`."""
    lines = tb.splitlines()
    for src, marks in zip(lines, lines[1:]):
        if src.startswith(prefix) and token in src:
            at = src.index(token)
            return marks[at:at + len(token)] == "^" + "~" * (len(token) - 1)
    return False


def expect_01(c):
    err = c["mil-broken"].error()
    tb = ANSI.sub("", "\n".join(err.traceback)) if err else ""
    worst, rowsum = c["scores-run"].number(r"max \|dp\| ="), c["scores-run"].number(r"sums to 1 within")
    return [
        ("backend" in c["status"].all_text().lower(), "%ane shows the backend"),
        ("relu(x = " in c["fluent-graph"].plain() and ">relu</span>" in c["fluent-graph"].html(), "the fluent Program shows as MIL text and highlighted HTML"),
        (c["run-relu"].number(r"max \|backend - Java\| =") == 0.0, "relu(2x) on the backend equals plain Java: " + c["run-relu"].stdout().strip()),
        (c["roundtrip"].result() == "true", "the printed MIL parses back to an equal graph"),
        (worst is not None and 0 < worst < 2e-3 and rowsum is not None and rowsum < 2e-3, "fp16 softmax within 2e-3 of double precision (and not equal: fp16 rounding shows): " + c["scores-run"].stdout().strip()),
        (err is not None and err.ename == "MilParseError" and re.search(r"\[1, ?2, ?8, ?8\]", err.evalue), "the broken program is a MilParseError naming the inferred [1, 2, 8, 8]: " + (err.evalue if err else "no error")),
        (err is not None and err.evalue.startswith("line 5, column 9:"), "the error is in the cell's coordinates (line 1 is %%mil): line 5, column 9"),
        (caret_under(tb, "line 5 │", "tensor<fp16, [1, 2, 8, 4]>"), "the caret underlines the declared type:\n" + tb),
        (c["close"].result() == "1", "after relu2.close() one program (scores) is live: " + c["close"].result()),
    ]


def expect_02(c):
    first, last = c["loss-summary"].number(r"over steps 1-5:"), c["loss-summary"].number(r"; over steps \d+-\d+:")
    gen, api = c["generate"].result(), c["generate-api"].result()
    record = c["record"].all_text()
    train = c["train-tiny"]
    return [
        ("pid " in c["where"].all_text(), "training runs in a supervised worker JVM: " + c["where"].all_text()[:200]),
        (train.error() is None and "step 40/40" in train.all_text(), "%%train tiny reaches step 40/40"),
        (len(train.pngs()) >= 1, "%%train tiny shows its loss plot as image/png"),
        (first is not None and last is not None and last < first - 0.3, f"the loss falls by more than 0.3 in 40 steps: {first} -> {last}"),
        (re.search(r"seed\W+42", record) and re.search(r"backend\W+ref", record), "the run record names seed 42 and backend ref"),
        (gen.strip("'\"").startswith("Once upon a time") and len(gen) > 20, "%generate continues the prompt: " + gen[:100]),
        (gen == api, "%generate and Ane.generate with the same seed give the same text"),
        (c["rerun"].number(r"max \|loss difference\| =") == 0.0, "a re-run with seed 42 gives identical losses: " + c["rerun"].stdout().strip()[-120:]),
    ]


def expect_03(c):
    return [(c["train"].error() is None, "the Stories110M run completes"),
            (c["loss"].number(r"loss at step 1:") is not None and 8 < c["loss"].number(r"loss at step 1:") < 12,
             "a fresh 32K-vocabulary model starts near ln 32000: " + c["loss"].stdout().strip())]


def expect_04(c):
    sweep = c["sweep"].plain()
    rows = [r for r in sweep.splitlines() if re.match(r"\s*(32|64|128|256)\s", r)]
    nums = [[float(x) for x in re.findall(NUMBER, r)] for r in rows]
    bench = c["bench-compile"].all_text()
    html = c["bench-compile"].html()
    return [
        (len(rows) == 4 and all(len(n) >= 4 and n[1] > 0 and n[2] > 0 and math.isfinite(n[2]) for n in nums), "the sweep has n = 32..256 with positive times and throughput:\n" + sweep),
        (all(len(n) >= 4 and n[3] <= 1e-2 for n in nums), "every size's first row is within 1e-2 (relative) of Java's product"),
        (len(c["chart"].pngs()) == 1, "the throughput chart is a PNG"),
        (all(k in bench + html for k in ("sdpaFwd", "kvBwd")) and html.count("<tr>") >= 11, "%bench compile lists the ten training kernels"),
        (re.search(r"budget\W+5", bench + html) and re.search(r"compiles before refusal\W+5", bench + html), "a compile budget of 5 allows 5 compiles, then refuses"),
    ]


def expect_05(c):
    m = re.search(r"validation loss: before " + NUMBER + "; after full fine-tuning " + NUMBER + "; after LoRA " + NUMBER, c["results"].stdout())
    before, full, lora = (float(m.group(i)) for i in range(1, 4)) if m else (None,) * 3
    export, ev = c["export"].stdout(), c["before"].stdout()
    evaluated, last = c["before"].number(r"model.bin: loss"), c["before"].number(r"last validation loss:")
    gen = c["generate"].stdout()
    texts = dict(re.findall(r"^(before|full fine-tuning|LoRA adapter):\s+(.*)$", gen, re.M))
    return [
        (re.search(r"exported tiny \([\d,]+ parameters\) → \S+model.bin \(llama2.c", export) and "exit status" not in export, "ane4j export --format llama2c writes model.bin: " + export.strip()),
        (evaluated is not None and last is not None and abs(evaluated - last) < 1e-3, f"ane4j eval of model.bin equals the pretrained run's last validation loss: {evaluated} vs {last}\n" + ev.strip()),
        (all(c[k].error() is None for k in ("base", "tune-full", "tune-lora")), "the three runs complete"),
        (m is not None and evaluated is not None and abs(before - evaluated) < 1e-4 and 3 < before < 7, "the results start from the evaluated loss: " + c["results"].stdout().strip()),
        (m is not None and full < before - 0.05, f"full fine-tuning lowers the validation loss: {before} -> {full}"),
        (m is not None and lora < before, f"LoRA lowers the validation loss: {before} -> {lora}"),
        ("<table" in c["results"].html(), "the comparison is an HTML table"),
        (len(c["curves"].pngs()) == 1, "the validation curves are a PNG"),
        (len(texts) == 3 and all(t.startswith("Once upon a time") and len(t) > 30 for t in texts.values()), "generate samples from the three models:\n" + gen.strip()),
        (len(texts) == 3 and texts["LoRA adapter"] != texts["before"] and texts["full fine-tuning"] != texts["before"], "the same seed draws another text after each fine-tune"),
        ("+ LoRA adapter" in c["generate"].stderr() and "(rank 8, q,v)" in c["generate"].stderr(), "generate names the unmerged adapter it applied:\n" + c["generate"].stderr().strip()),
        (c["cleanup"].stdout().strip().endswith(" deleted"), "the temporary folder is deleted: " + c["cleanup"].stdout().strip()),
    ] + expect_05_chat(c)


def expect_05_chat(c):
    """The chat fine-tune: template rendering with the prompt masked, a base and a LoRA run, generate --chat."""
    render = c["chat-render"].stdout()
    lora = re.search(r"pirate LoRA: loss " + NUMBER + " → " + NUMBER, c["chat-lora"].stdout())
    rows = re.findall(r"^(.+?\?)\s+base: (.*?)\s+pirate adapter: (.*)$", c["chat-generate"].stdout(), re.M)
    taught = {"What color is the sky?": "Blue.", "Where do fish live?": "In the sea.", "What do cows drink?": "Water."}
    return [
        (c["chat-data"].stdout().startswith("7 + 5 conversations"), "the embedded JSONL: " + c["chat-data"].stdout().strip()),
        ("<|im_start|>user\nWhat color is the sky?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nBlue.<|im_end|>" in render,
         "the conversation rendered by Qwen3's template:\n" + render),
        (re.search(r'in the loss \(\d+ of \d+ tokens\): "<think>\\n\\n</think>\\n\\nBlue.<\|im_end\|>\\n"$', render, re.M) is not None,
         "the loss is on the assistant turn only (the prompt masked)"),
        (c["chat-base"].error() is None and "tokenizer_config.json (chat template)" in c["chat-base"].stdout(), "the base chat run completes and its export carries the template"),
        (lora is not None and float(lora.group(2)) < float(lora.group(1)), "the pirate LoRA lowers its loss: " + c["chat-lora"].stdout().strip()[-200:]),
        (len(rows) == 3 and sum(taught.get(q) == b for q, b, _ in rows) >= 2 and not any(b.startswith("Arr") for _, b, _ in rows),
         "the base answers as taught (2 of 3 at least):\n" + c["chat-generate"].stdout()),
        (len(rows) == 3 and sum(a.startswith("Arr,") for _, _, a in rows) >= 2, "with the adapter it answers as a pirate (2 of 3 at least)"),
        ("+ LoRA adapter" in c["chat-generate"].stderr() and "(rank 8, q,k,v,o,w1,w2,w3)" in c["chat-generate"].stderr(), "generate --chat applied the adapter unmerged"),
    ]


def expect_06(c):
    out = c["train-restarted"].all_text()
    lines = [l for l in out.splitlines() if "worker restarted" in l]
    m = re.search(r"with a budget of 40: (\d+) restarts; without: (\d+); max \|loss difference\| over 6 steps = " + NUMBER, c["compare"].stdout())
    return [
        (c["train-restarted"].error() is None and "step 6/6" in out, "the run with a compile budget of 40 completes"),
        (len(lines) >= 1 and all(l.startswith("worker restarted: compile budget 40 reached") for l in lines), f"each restart is one line naming the cause ({len(lines)})"),
        (m is not None and int(m.group(1)) == len(lines) and int(m.group(2)) == 0, "one printed line per restart, none without a budget: " + c["compare"].stdout().strip()),
        (m is not None and float(m.group(3)) == 0.0, "restarts do not change the losses"),
    ]


def expect_07(c):
    mlp, cnn = c["accuracy"].number(r"MLP test accuracy:"), c["cnn-accuracy"].number(r"CNN test accuracy:")
    fit = c["fit-mlp"].all_text()
    return [
        (re.search(r"^1797 images", c["load"].stdout()) is not None, "scikit-learn's digits load at run time: " + c["load"].all_text().strip()[:200]),
        (re.search(r"gradient program: \d+ ops; outputs \[loss fp32\[1\], d_w1 fp32\[128,64\], d_b1 fp32\[128\], d_w2 fp32\[10,128\], d_b2 fp32\[10\]\]", c["grad"].stdout()) is not None,
         "Mil.grad gives the loss and d_w1..d_b2: " + c["grad"].stdout().strip()),
        (c["fit-mlp"].error() is None and "step 400/400" in fit and len(c["fit-mlp"].pngs()) == 1, "Ane.fit trains the MLP 400 steps with the live loss plot: " + fit[-300:]),
        (c["fit-cnn"].error() is None and "step 400/400" in c["fit-cnn"].all_text() and len(c["fit-cnn"].pngs()) >= 1,
         "a %%fit cell trains the CNN 400 steps with the live loss plot: " + c["fit-cnn"].all_text()[-300:]),
        # measured 0.906 and 0.926 (reference backend, x86-64; Ane.fit and %%fit through the run layer); 0.88 leaves room for another CPU's rounding
        (mlp is not None and mlp >= 0.88, f"MLP test accuracy >= 0.88: {mlp}"),
        (cnn is not None and cnn >= 0.88, f"CNN test accuracy >= 0.88: {cnn}"),
    ]


EXPECT = {"01-mil-graphs.ipynb": expect_01, "02-train-tiny.ipynb": expect_02, "03-stories110m.ipynb": expect_03,
          "04-benchmarks.ipynb": expect_04, "05-fine-tune.ipynb": expect_05, "06-worker-restarts.ipynb": expect_06,
          "07-your-own-graph.ipynb": expect_07}


def missing_requirement(nb):
    req = nb.metadata.get("ane4j", {}).get("requires")
    if not req:
        return None
    env = req.get("env")
    path = os.environ.get(env) if env else None
    path = path or os.path.join(ROOT, req["file"])
    return None if os.path.isfile(path) else f"needs {path} (set {env} or add the file)"


def main():
    failed, total = [], time.monotonic()
    out_dir = os.path.join(ROOT, "target", "notebooks")
    os.makedirs(out_dir, exist_ok=True)
    for path in PATHS:
        name = os.path.basename(path)
        nb = nbformat.read(path, as_version=4)
        dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
        if dirty:
            failed.append(name)
            print(f"FAIL {name}: committed with outputs in cells {dirty}; strip them (jupyter nbconvert --clear-output --inplace)", flush=True)
            continue
        if name not in EXPECT:
            failed.append(name)
            print(f"FAIL {name}: no expectations for it in tools/run_notebooks.py (EXPECT)", flush=True)
            continue
        why = missing_requirement(nb)
        if why:
            print(f"skip {name}: {why}", flush=True)
            continue
        t0 = time.monotonic()
        client = NotebookClient(nb, kernel_name=KERNEL, timeout=600, startup_timeout=60, iopub_timeout=30,
                                resources={"metadata": {"path": os.path.dirname(path)}})
        try:
            client.execute()
        except CellExecutionError as e:
            failed.append(name)
            print(f"FAIL {name}: {str(e)[:3000]}", flush=True)
            continue
        except Exception as e:  # the kernel did not start or died
            failed.append(name)
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            continue
        finally:
            nbformat.write(nb, os.path.join(out_dir, name))
        cells = {c.get("id"): Cell(c) for c in nb.cells if c.cell_type == "code"}
        checks = [(any(o.output_type == "error" for o in c.outputs), f"cell {i} ({c.get('id')}) is tagged raises-exception and raised")
                  for i, c in enumerate(nb.cells) if c.cell_type == "code" and "raises-exception" in c.metadata.get("tags", [])]
        raw = [f"{cid}: {o.data['text/plain']}" for cid, c in cells.items() for o in c.outputs
               if "data" in o and RAW_TOSTRING.match(o.data.get("text/plain", ""))]
        checks.append((not raw, "no output is a bare Object.toString (Class@hash)" + "".join("\n" + r for r in raw)))
        try:
            checks += EXPECT[name](cells)
        except (KeyError, TypeError, ValueError) as e:
            checks.append((False, f"an expectation could not be evaluated ({type(e).__name__}: {e})"))
        bad = [what for ok, what in checks if not ok]
        for ok, what in checks:
            print(("  ok   " if ok else "  FAIL ") + what.replace("\n", "\n       "), flush=True)
        if bad:
            failed.append(name)
            print(f"FAIL {name}: {len(bad)} of {len(checks)} expectations failed", flush=True)
        else:
            print(f"ok   {name}: {len(nb.cells)} cells, {len(checks)} expectations on its outputs held, in {time.monotonic() - t0:.1f} s", flush=True)
    print(f"notebooks took {time.monotonic() - total:.1f} s", flush=True)
    if failed:
        print(f"{len(failed)} notebook(s) failed: {', '.join(failed)}", flush=True)
        sys.exit(1)
    print("all notebooks passed", flush=True)


if __name__ == "__main__":
    main()
