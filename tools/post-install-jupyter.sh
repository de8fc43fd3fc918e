# Sourced by install.sh after the build ($ROOT = repository, $JAVA_HOME = the JDK it found): installs the
# "Java (ane4j)" Jupyter kernelspec for this user, running $ROOT/target/ane4j.jar with that JDK.
ane4j_install_kernelspec() {
  local ks=""
  if command -v jupyter >/dev/null 2>&1 && jupyter kernelspec --version >/dev/null 2>&1; then ks="jupyter kernelspec"
  elif /usr/bin/python3 -c "import jupyter_client" >/dev/null 2>&1; then ks="/usr/bin/python3 -m jupyter_client.kernelspecapp"
  fi
  if [ -z "$ks" ]; then
    echo "[install] Jupyter not found: skipping the notebook kernel (install jupyter-client, then re-run ./install.sh)"
    return 0
  fi
  local spec; spec=$(mktemp -d)/ane4j
  mkdir -p "$spec"
  sed -e "s|@JAVA@|$JAVA_HOME/bin/java|" -e "s|@ROOT@|$ROOT|g" \
      -e "s|@CLASSPATH@|$ROOT/target/ane4j.jar:$ROOT/target/lib/*|" "$ROOT/kernel/kernel.json" > "$spec/kernel.json"
  if $ks install --user --replace --name ane4j "$spec" >/dev/null 2>&1; then
    echo "[install] Jupyter kernel 'Java (ane4j)' installed (jupyter kernelspec list; start with: jupyter console --kernel=ane4j)"
  else
    echo "[install] could not install the Jupyter kernelspec; run: jupyter kernelspec install --user --name ane4j $spec" >&2
  fi
}
ane4j_install_kernelspec
