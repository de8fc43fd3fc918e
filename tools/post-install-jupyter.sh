# Sourced by install.sh after the build ($ROOT = repository, $JAVA_HOME = the JDK it found): installs the
# "Java (ane4j)" Jupyter kernelspec for this user. The kernelspec is self-contained, as JJava's is: the jars are copied
# into it (lib/) and kernel.json names them through {resource_dir}, which jupyter_client replaces with the kernelspec's
# own directory, so `mvn clean`, a rebuild or a moved checkout leave the installed kernel working. Re-run ./install.sh
# to install a newer build. JUPYTER_DATA_DIR (jupyter_core) chooses where --user installs go.
ane4j_install_kernelspec() {
  local ks=""
  if command -v jupyter >/dev/null 2>&1 && jupyter kernelspec --version >/dev/null 2>&1; then ks="jupyter kernelspec"
  elif /usr/bin/python3 -c "import jupyter_client" >/dev/null 2>&1; then ks="/usr/bin/python3 -m jupyter_client.kernelspecapp"
  fi
  if [ -z "$ks" ]; then
    echo "[install] Jupyter not found: skipping the notebook kernel (install jupyter-client, then re-run ./install.sh)"
    return 0
  fi
  if [ ! -f "$ROOT/target/ane4j.jar" ]; then
    echo "[install] no $ROOT/target/ane4j.jar: skipping the notebook kernel (build first: ./install.sh)" >&2
    return 0
  fi
  local tmp; tmp=$(mktemp -d)
  local spec="$tmp/ane4j"
  mkdir -p "$spec/lib"
  cp "$ROOT/target/ane4j.jar" "$ROOT"/target/lib/*.jar "$spec/lib/"
  # the exception guard of the ANE backend is looked up beside the jar (macOS; built by install.sh)
  [ -f "$ROOT/target/libane4j_guard.dylib" ] && cp "$ROOT/target/libane4j_guard.dylib" "$spec/lib/"
  sed -e "s|@JAVA@|$JAVA_HOME/bin/java|" -e "s|@ROOT@|$ROOT|g" -e "s|@CLASSPATH@|{resource_dir}/lib/*|" \
      "$ROOT/kernel/kernel.json" > "$spec/kernel.json"
  if $ks install --user --replace --name ane4j "$spec" >/dev/null 2>&1; then
    echo "[install] Jupyter kernel 'Java (ane4j)' installed with its $(ls "$spec/lib" | wc -l) jars (jupyter kernelspec list; start with: jupyter console --kernel=ane4j)"
  else
    echo "[install] could not install the Jupyter kernelspec; run: jupyter kernelspec install --user --name ane4j $spec" >&2
    return 0
  fi
  rm -rf "$tmp"
}
ane4j_install_kernelspec
