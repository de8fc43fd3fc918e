#!/usr/bin/env bash
# `bin/ane4j jshell [jshell options]`: JShell with the notebook kernel's class path (the jars the kernel runs with) and
# its imports (printed by ane4j.notebook.Ane4jExtension, the list the kernel starts its cells with), and the kernel's
# JVM options for the execution JVM. jshell's default (remote) execution: on JDK 25 "--execution local" hits JDK-8366926.
#   usage: tools/jshell.sh ROOT JAVA_HOME [jshell options]
set -euo pipefail
ROOT="$1"; JDK="$2"; shift 2
if [ ! -f "$ROOT/target/ane4j.jar" ]; then
  echo "ane4j jshell: no $ROOT/target/ane4j.jar; fix: build with ./install.sh" >&2
  exit 1
fi
CP="$ROOT/target/ane4j.jar"
for j in "$ROOT"/target/lib/*.jar; do CP="$CP:$j"; done
STARTUP="${TMPDIR:-/tmp}/ane4j-jshell-$(id -u).jsh"
"$JDK/bin/java" -cp "$CP" ane4j.notebook.Ane4jExtension > "$STARTUP.tmp" && mv "$STARTUP.tmp" "$STARTUP"
exec "$JDK/bin/jshell" --class-path "$CP" --add-modules jdk.incubator.vector --startup "$STARTUP" \
  -J-XX:+ExitOnOutOfMemoryError -R-XX:+ExitOnOutOfMemoryError \
  "-R-XX:OnOutOfMemoryError=echo '[jshell] out of Java heap (pid %p), exiting: restart with -R-Xmx4g' >&2" \
  -R-Xmn64m -R--enable-native-access=ALL-UNNAMED -R--add-modules=jdk.incubator.vector -R-Djava.awt.headless=true \
  -R--sun-misc-unsafe-memory-access=allow -R-Dane4j.home="$ROOT" "$@"
