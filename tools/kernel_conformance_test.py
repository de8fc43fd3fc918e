#!/usr/bin/python3
"""The standard Jupyter protocol conformance suite (jupyter_kernel_test) against the ane4j kernel.

    JUPYTER_PATH=... ANE4J_KERNEL_NAME=ane4j /usr/bin/python3 tools/kernel_conformance_test.py

Messages are validated against the v5 JSON schemas. Needs Debian's python3-jupyter-kernel-test.
"""
import os
import unittest

import jupyter_kernel_test


class Ane4jKernelConformance(jupyter_kernel_test.KernelTests):
    kernel_name = os.environ.get("ANE4J_KERNEL_NAME", "ane4j")
    language_name = "Java"
    file_extension = ".jshell"

    code_hello_world = 'System.out.println("hello, world");'
    code_stderr = 'System.err.println("oops");'
    completion_samples = [{"text": "System.out.pri", "matches": {"print(", "println(", "printf("}}]
    complete_code_samples = ["1 + 1", "int a = 1;", "void f() { }", "%ane"]
    incomplete_code_samples = ["for (int i = 0; i < 3; i++) {", "int f(int x) {", "%%mil g"]
    invalid_code_samples = []  # JShell rates almost everything "complete" (see shared/docs/kernel.md)
    code_generate_error = 'throw new IllegalStateException("boom");'
    code_execute_result = [{"code": "6 * 7", "result": "42"}, {"code": '"ab" + "c"', "result": "abc"}]
    code_display_data = [{"code": 'display(tech.tablesaw.api.Table.create("t"));', "mime": "text/html"}]
    code_inspect_sample = "Math.max("


if __name__ == "__main__":
    unittest.main(verbosity=2)
