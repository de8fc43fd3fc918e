#!/usr/bin/python3
"""Executes the notebooks in notebooks/ top to bottom through nbclient with an installed kernel, like CI does.

    JUPYTER_PATH=... /usr/bin/python3 tools/run_notebooks.py [KERNEL_NAME] [NOTEBOOK...]   (default: ane4j, all)

A notebook fails when any cell raises (cells check their own results), except cells tagged raises-exception, which
must raise. Notebooks whose metadata.ane4j.requires names data that is absent are skipped with the reason. The
committed notebooks must carry no outputs (strip them before committing). Exit status 0 when all pass.
Run by ane4j.notebook.NotebooksTest (mvn test); needs Debian's python3-nbclient.
"""
import glob
import os
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL = sys.argv[1] if len(sys.argv) > 1 else "ane4j"
PATHS = sys.argv[2:] or sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))


def missing_requirement(nb):
    req = nb.metadata.get("ane4j", {}).get("requires")
    if not req:
        return None
    env = req.get("env")
    path = os.environ.get(env) if env else None
    path = path or os.path.join(ROOT, req["file"])
    return None if os.path.isfile(path) else f"needs {path} (set {env} or add the file)"


def text_of(outputs):
    parts = []
    for o in outputs:
        if o.output_type == "stream":
            parts.append(o.text)
        elif o.output_type == "error":
            parts.append(o.ename + ": " + o.evalue)
        elif "data" in o:
            parts.append(o.data.get("text/plain", ""))
    return "\n".join(parts)


def main():
    failed, total = [], time.monotonic()
    for path in PATHS:
        name = os.path.basename(path)
        nb = nbformat.read(path, as_version=4)
        dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
        if dirty:
            failed.append(name)
            print(f"FAIL {name}: committed with outputs in cells {dirty}; strip them (jupyter nbconvert --clear-output --inplace)", flush=True)
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
        problems = []
        for i, c in enumerate(nb.cells):
            if c.cell_type != "code":
                continue
            errors = [o for o in c.outputs if o.output_type == "error"]
            if "raises-exception" in c.metadata.get("tags", []) and not errors:
                problems.append(f"cell {i} is tagged raises-exception but did not raise")
        checks = sum(text_of(c.outputs).count("ok: ") for c in nb.cells if c.cell_type == "code")
        if problems:
            failed.append(name)
            print(f"FAIL {name}: " + "; ".join(problems), flush=True)
        else:
            print(f"ok   {name}: {len(nb.cells)} cells, {checks} checks passed in {time.monotonic() - t0:.1f} s", flush=True)
    print(f"notebooks took {time.monotonic() - total:.1f} s", flush=True)
    if failed:
        print(f"{len(failed)} notebook(s) failed: {', '.join(failed)}", flush=True)
        sys.exit(1)
    print("all notebooks passed", flush=True)


if __name__ == "__main__":
    main()
