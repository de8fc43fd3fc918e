# Sourced by install.sh before the build: Debian's Jupyter packages for the "Java (ane4j)" kernel and its tests.
# jupyter-client/-nbconvert/-console carry the `jupyter kernelspec|nbconvert|console` commands (the python3-* packages
# alone do not); python3-jupyter-kernel-test is the protocol conformance suite the kernel tests run. python3-sklearn
# ships the 8x8 handwritten digits notebooks/07-your-own-graph.ipynb trains on (loaded at run time, never committed).
if command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
  apt_install python3-jupyter-client jupyter-client python3-nbclient python3-nbconvert jupyter-nbconvert \
    jupyter-console python3-jupyter-kernel-test python3-notebook jupyter-notebook python3-sklearn
fi
