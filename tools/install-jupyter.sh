# Sourced by install.sh before the build: Jupyter for the "Java (ane4j)" kernel and its tests.
# Debian/Ubuntu: Debian's packages. jupyter-client/-nbconvert/-console carry the `jupyter kernelspec|nbconvert|console`
# commands (the python3-* packages alone do not); python3-jupyter-kernel-test is the protocol conformance suite the kernel
# tests run. python3-sklearn ships the 8x8 handwritten digits notebooks/07-your-own-graph.ipynb trains on (loaded at run
# time, never committed).
# macOS, for ./install.sh --test: a venv in .ane4j/jupyter-venv with the same packages from PyPI, made once, and
# ANE4J_PYTHON pointing the tests at it (a Mac's own Jupyter, wherever it lives, is the user's business: the kernelspec
# is written where `jupyter --data-dir` says, tools/post-install-jupyter.sh).
if command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
  apt_install python3-jupyter-client jupyter-client python3-nbclient python3-nbconvert jupyter-nbconvert \
    jupyter-console python3-jupyter-kernel-test python3-notebook jupyter-notebook python3-sklearn
elif [ "$(uname -s)" = Darwin ] && [ "${RUN_TESTS:-0}" = 1 ]; then
  ane4j_venv="$ROOT/.ane4j/jupyter-venv"
  if [ ! -x "$ane4j_venv/bin/python" ]; then
    if command -v python3 >/dev/null 2>&1 && { [ "$(command -v python3)" != /usr/bin/python3 ] || xcode-select -p >/dev/null 2>&1; }; then
      say "making a Python venv with Jupyter for the kernel tests ($ane4j_venv)"
      if ! { python3 -m venv "$ane4j_venv" && "$ane4j_venv/bin/python" -m pip install -q jupyter_client jupyter_kernel_test \
             nbclient nbconvert notebook numpy scikit-learn; }; then
        say "could not install Jupyter into $ane4j_venv (the kernel tests will say what is missing)"
      fi
    else
      say "no python3 (brew install python): the Jupyter tests will be skipped"
    fi
  fi
  if [ -x "$ane4j_venv/bin/python" ]; then export ANE4J_PYTHON="$ane4j_venv/bin/python" PATH="$ane4j_venv/bin:$PATH"; fi
fi
