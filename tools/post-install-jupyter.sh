# Sourced by install.sh after the build ($ROOT = repository, $JAVA_HOME = the JDK it found): installs the
# "Java (ane4j)" Jupyter kernelspec for this user. The kernelspec is self-contained, as JJava's is: the jars are copied
# into it (lib/) and kernel.json names them through {resource_dir}, which jupyter_client replaces with the kernelspec's
# own directory, so `mvn clean`, a rebuild or a moved checkout leave the installed kernel working. Re-run ./install.sh
# to install a newer build.
# A kernelspec is only a folder: it is written straight into Jupyter's user data directory (what `jupyter --data-dir`
# prints; JUPYTER_DATA_DIR chooses it), so no particular Python is needed: ~/Library/Jupyter on macOS,
# ${XDG_DATA_HOME:-~/.local/share}/jupyter elsewhere (https://docs.jupyter.org/en/latest/use/jupyter-directories.html).

ane4j_usable_python() { # $1 = a python; false for macOS's /usr/bin/python3 shim when the Command Line Tools are absent
  command -v "$1" >/dev/null 2>&1 || return 1
  if [ "$(uname -s)" = Darwin ] && [ "$(command -v "$1")" = /usr/bin/python3 ]; then xcode-select -p >/dev/null 2>&1 || return 1; fi
  return 0
}

ane4j_jupyter_data_dir() {
  local d=""
  if command -v jupyter >/dev/null 2>&1; then d=$(jupyter --data-dir 2>/dev/null || true); fi
  if [ -z "$d" ] && ane4j_usable_python python3; then
    d=$(python3 -c 'import jupyter_core.paths as p; print(p.jupyter_data_dir())' 2>/dev/null || true)
  fi
  if [ -z "$d" ]; then
    if [ -n "${JUPYTER_DATA_DIR:-}" ]; then d="$JUPYTER_DATA_DIR"
    elif [ "$(uname -s)" = Darwin ]; then d="$HOME/Library/Jupyter"
    else d="${XDG_DATA_HOME:-$HOME/.local/share}/jupyter"
    fi
  fi
  echo "$d"
}

ane4j_json_sed_escape() { # a value for a JSON string, then for the replacement side of sed's s|…|…|
  printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/[\\&|]/\\&/g'
}

ane4j_install_kernelspec() {
  if [ ! -f "$ROOT/target/ane4j.jar" ]; then
    echo "[install] no $ROOT/target/ane4j.jar: skipping the notebook kernel (build first: ./install.sh)" >&2
    return 0
  fi
  local jupyter_found=1
  command -v jupyter >/dev/null 2>&1 || { ane4j_usable_python python3 && python3 -c 'import jupyter_client' >/dev/null 2>&1; } || jupyter_found=0
  local data; data=$(ane4j_jupyter_data_dir)
  local dest="$data/kernels/ane4j" tmp="$data/kernels/.ane4j.$$"
  if ! mkdir -p "$tmp/lib" 2>/dev/null; then
    echo "[install] could not write the Jupyter kernelspec under $data/kernels (not writable?); skipping the notebook kernel" >&2
    return 0
  fi
  cp "$ROOT/target/ane4j.jar" "$ROOT"/target/lib/*.jar "$tmp/lib/"
  # the exception guard of the ANE backend is looked up beside the jar (macOS; built by install.sh)
  [ -f "$ROOT/target/libane4j_guard.dylib" ] && cp "$ROOT/target/libane4j_guard.dylib" "$tmp/lib/"
  sed -e "s|@JAVA@|$(ane4j_json_sed_escape "$JAVA_HOME/bin/java")|" -e "s|@ROOT@|$(ane4j_json_sed_escape "$ROOT")|g" \
      -e "s|@CLASSPATH@|{resource_dir}/lib/*|" "$ROOT/kernel/kernel.json" > "$tmp/kernel.json"
  rm -rf "$dest" && mv "$tmp" "$dest"
  echo "[install] Jupyter kernel 'Java (ane4j)' installed with its $(find "$dest/lib" -name '*.jar' | wc -l | tr -d ' ') jars in $dest (start with: jupyter console --kernel=ane4j)"
  [ "$jupyter_found" = 1 ] || echo "[install] Jupyter itself is not installed yet: it will list the kernel once it is (pip install jupyterlab, or apt-get install jupyter-notebook)"
  return 0
}
ane4j_install_kernelspec
