#!/usr/bin/python3
"""Which BLAS a Python process runs: the OpenBLAS it has loaded, the core that library picked and OPENBLAS_CORETYPE.

Used by tools/torch_train_step.py (the PyTorch side of `ane4j bench step --compare-torch`) and by `ane4j bench sgemm`
for numpy:   /usr/bin/python3 tools/blas_info.py numpy   prints one JSON line after importing numpy.
"""
import ctypes
import json
import os
import sys


def loaded_openblas():
    """Paths of the OpenBLAS libraries mapped into this process (numpy's wheels bundle their own copy)."""
    paths = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                name = os.path.basename(path).lower()
                if "openblas" in name and ".so" in name and path not in paths:
                    paths.append(path)
    except OSError:
        pass  # no /proc (macOS): unknown
    return paths


def describe(config_text=""):
    """{"coretype_env", "libraries": [{"path", "core", "config"}], "config"}; never raises."""
    info = {"coretype_env": os.environ.get("OPENBLAS_CORETYPE"), "libraries": []}
    for path in loaded_openblas():
        entry = {"path": path}
        try:
            lib = ctypes.CDLL(path)
            for key, symbol in (("core", "openblas_get_corename"), ("config", "openblas_get_config")):
                # numpy's scipy-openblas wheels prefix and suffix the names: scipy_openblas_get_corename64_
                fn = (getattr(lib, symbol, None) or getattr(lib, "scipy_" + symbol + "64_", None)
                      or getattr(lib, "scipy_" + symbol, None))
                if fn is not None:
                    fn.restype = ctypes.c_char_p
                    entry[key] = fn().decode(errors="replace").strip()
        except OSError as e:
            entry["error"] = str(e)
        info["libraries"].append(entry)
    blas_lines = [l.strip() for l in config_text.splitlines() if "BLAS" in l.upper()]
    if blas_lines:
        info["config"] = "; ".join(blas_lines)[:400]
    return info


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "numpy":
        import numpy  # noqa: F401  (loads its BLAS)
        print(json.dumps(dict(describe(), numpy=numpy.__version__)))
    else:
        print(json.dumps(describe()))
