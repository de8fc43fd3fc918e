#!/usr/bin/env bash
# ane4j installer: finds a JDK 25, installs what the build needs, builds, and puts the `ane4j` launcher in place.
#   ./install.sh            build and install the launcher (bin/ane4j, linked into ~/.local/bin)
#   ./install.sh --test     the same, then run every test (mvn test)
#   ./install.sh --quick    skip system packages (use when they are known to be present)
# Linux (Debian/Ubuntu: missing packages through apt-get) and macOS on Apple silicon (Homebrew's, SDKMAN's, IDE-downloaded
# and installer JDKs are found; Maven comes from the committed Maven Wrapper when there is no mvn). Plain bash 3.2.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
RUN_TESTS=0; SYSTEM_PACKAGES=1
for arg in "$@"; do
  case "$arg" in
    --test) RUN_TESTS=1 ;;
    --quick) SYSTEM_PACKAGES=0 ;;
    -h|--help) sed -n 2,7p "$0"; exit 0 ;;
    *) echo "install.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done
OS=$(uname -s)
JDK_FEATURE=25   # the pom's <release>: javac of an older JDK cannot build it

say() { echo "[install] $*"; }

java_property() { # prints the value of system property $2 of the java binary $1, or nothing
  "$1" -XshowSettings:properties -version 2>&1 | awk -F' = ' -v k="    $2" '$1 == k {print $2; exit}' || true
}
java_major() { local v; v=$(java_property "$1" java.specification.version); v=${v%%.*}; echo "${v:-0}"; }

# Apple silicon, also when this shell runs under Rosetta (uname -m then says x86_64)
apple_silicon() { [ "$OS" = Darwin ] && [ "$(sysctl -n hw.optional.arm64 2>/dev/null || echo 0)" = 1 ]; }

# Homebrew keeps a versioned Cellar folder per release and removes old ones on upgrade: bake its stable opt/ link instead
stable_jdk_path() {
  case "$1" in
    */Cellar/*) echo "$1" | sed -E 's#/Cellar/([^/]+)/[^/]+/#/opt/\1/#' ;;
    *) echo "$1" ;;
  esac
}

find_jdk() {
  local candidates=() d
  [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
  if [ -x /usr/libexec/java_home ]; then
    d=$(/usr/libexec/java_home -v "$JDK_FEATURE" 2>/dev/null || true); [ -n "$d" ] && candidates+=("$d")
  fi
  for d in /usr/lib/jvm/* /opt/java/* /Library/Java/JavaVirtualMachines/*/Contents/Home \
           /opt/homebrew/opt/openjdk*/libexec/openjdk.jdk/Contents/Home /usr/local/opt/openjdk*/libexec/openjdk.jdk/Contents/Home \
           "$HOME"/Library/Java/JavaVirtualMachines/*/Contents/Home "$HOME"/.sdkman/candidates/java/* "$HOME"/.jdks/*; do
    [ -d "$d" ] && candidates+=("$d")
  done
  if command -v javac >/dev/null 2>&1; then
    d=$(command -v javac)
    # follow the links to the JDK, but stop at Homebrew's opt/ link (see stable_jdk_path)
    candidates+=("$(stable_jdk_path "$(dirname "$(dirname "$(readlink -f "$d" 2>/dev/null || echo "$d")")")")")
  fi
  local best="" best_arch="" c v arch
  for c in "${candidates[@]}"; do
    if [ ! -x "$c/bin/java" ] || [ ! -x "$c/bin/javac" ]; then continue; fi
    v=$(java_major "$c/bin/java")
    [ "$v" -ge "$JDK_FEATURE" ] || continue
    arch=$(java_property "$c/bin/java" os.arch)
    if [ -z "$best" ] || { apple_silicon && [ "$arch" = aarch64 ] && [ "$best_arch" != aarch64 ]; }; then best="$c"; best_arch="$arch"; fi
  done
  [ -n "$best" ] && stable_jdk_path "$best"
  return 0
}

JDK=$(find_jdk)
if [ -z "$JDK" ]; then
  echo "install.sh: no JDK $JDK_FEATURE or newer found (looked at JAVA_HOME, java_home, /usr/lib/jvm, Homebrew, SDKMAN, ~/Library/Java and javac on PATH)." >&2
  if [ "$OS" = Darwin ]; then
    echo "  fix: brew install openjdk (or the Temurin 25 installer from adoptium.net), then re-run ./install.sh" >&2
  else
    echo "  fix: install JDK $JDK_FEATURE (Debian/Ubuntu: a temurin-25-jdk package; or sdk install java 25-tem) and re-run, or set JAVA_HOME to it" >&2
  fi
  exit 1
fi
if apple_silicon && [ "$(java_property "$JDK/bin/java" os.arch)" != aarch64 ]; then
  echo "install.sh: the only JDK $JDK_FEATURE+ found ($JDK) is an x86-64 build: on Apple silicon it runs under Rosetta, where" >&2
  echo "  the Neural Engine and the arm64 libraries are out of reach. fix: install an arm64 JDK (brew install openjdk) and re-run" >&2
  exit 1
fi
export JAVA_HOME="$JDK"
export PATH="$JAVA_HOME/bin:$PATH"
say "JDK: $JAVA_HOME ($(java_major "$JAVA_HOME/bin/java"), $(java_property "$JAVA_HOME/bin/java" os.arch))"

apt_install() { # installs Debian packages that are missing, when we can
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then say "not Debian/Ubuntu: please install ${missing[*]} yourself"; return 0; fi
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo -n"
  say "installing ${missing[*]}"
  $sudo apt-get update -qq >/dev/null || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null \
    || say "could not install ${missing[*]} (continuing; the features that need them will say so)"
}

if [ "$SYSTEM_PACKAGES" = 1 ] && [ "$OS" = Linux ]; then
  command -v mvn >/dev/null 2>&1 || apt_install maven
  # OpenBLAS for ane4j.blas (falls back to pure Java when absent); cc for the fake Objective-C runtime tests
  apt_install libopenblas0-pthread gcc
fi
if [ "$SYSTEM_PACKAGES" = 1 ]; then
  # shellcheck source=/dev/null
  for f in tools/install-*.sh; do [ -f "$f" ] && . "$f"; done
fi
# Maven: the one on PATH, else the committed Maven Wrapper (mvnw: downloads Maven 3.9 from Maven Central into ~/.m2/wrapper once)
if command -v mvn >/dev/null 2>&1; then MVN=mvn; else MVN="$ROOT/mvnw"; say "no mvn on PATH: using the Maven Wrapper (./mvnw)"; fi

export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
MVN_FLAGS=(-B -q -Dstyle.color=never)
say "building"
"$MVN" "${MVN_FLAGS[@]}" -DskipTests package

# macOS: the @try/@catch trampoline that turns an Objective-C exception inside Apple's framework into an [ane] error
# (src/main/objc/ane4j_guard.m; loaded from beside the jar). Without it such an exception aborts the JVM.
if [ "$OS" = Darwin ]; then
  # /usr/bin/clang is a shim that opens the "install developer tools" dialog when the Command Line Tools are absent
  if ! xcode-select -p >/dev/null 2>&1; then
    rm -f target/libane4j_guard.dylib
    say "no exception guard: the Command Line Tools are not installed; an Objective-C exception inside Apple's framework"
    say "  would abort the JVM; fix: xcode-select --install, then re-run ./install.sh"
  elif clang -dynamiclib -O2 -fobjc-exceptions -fno-objc-arc -framework Foundation \
       -o target/libane4j_guard.dylib src/main/objc/ane4j_guard.m >target/ane4j_guard.log 2>&1; then
    say "exception guard: target/libane4j_guard.dylib"
  else
    rm -f target/libane4j_guard.dylib
    say "no exception guard (clang failed: $(head -n 1 target/ane4j_guard.log 2>/dev/null)): an Objective-C exception inside"
    say "  Apple's framework would abort the JVM; fix: sudo xcodebuild -license accept (or xcode-select --install), then re-run"
  fi
fi

mkdir -p bin
cat > bin/ane4j <<LAUNCHER
#!/usr/bin/env bash
# generated by install.sh
ROOT="$ROOT"
# bin/ane4j jshell: JShell with the notebook kernel's class path and imports (tools/jshell.sh)
if [ "\${1:-}" = jshell ]; then shift; exec "\$ROOT/tools/jshell.sh" "\$ROOT" "$JAVA_HOME" "\$@"; fi
# the Vector API (exp, the Java GEMM) and a fixed 64 MB young generation: the training state is a few huge long-lived
# arrays, and G1's adaptive young generation otherwise grows to hundreds of MB of touched eden (peak RSS); out of heap
# ends the process with one line (a launcher out of heap hung, deaf to Ctrl-C and SIGTERM: docs/reliability.md, F53)
exec "$JAVA_HOME/bin/java" -Xmn64m -XX:+ExitOnOutOfMemoryError \\
  "-XX:OnOutOfMemoryError=echo '[ane4j] out of Java heap (pid %p), exiting: give it more with ANE4J_JAVA_OPTS=-Xmx4g, or train in the supervised worker (without --in-process) with --heap' >&2" \\
  \${ANE4J_JAVA_OPTS:-} --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector \\
  -Djava.awt.headless=true -Dane4j.home="\$ROOT" -cp "\$ROOT/target/ane4j.jar:\$ROOT/target/lib/*" ane4j.cli.Main "\$@"
LAUNCHER
chmod +x bin/ane4j
if [ -d "$HOME/.local/bin" ] || mkdir -p "$HOME/.local/bin" 2>/dev/null; then ln -sf "$ROOT/bin/ane4j" "$HOME/.local/bin/ane4j"; fi
# shellcheck source=/dev/null
for f in tools/post-install-*.sh; do [ -f "$f" ] && . "$f"; done
say "launcher: $ROOT/bin/ane4j"
case ":$PATH:" in
  *":$HOME/.local/bin:"*) ;;
  *) if [ "$OS" = Darwin ]; then rc="$HOME/.zprofile"; else rc="$HOME/.profile"; fi
     say "$HOME/.local/bin is not on PATH: to run 'ane4j' by name, echo 'export PATH=\"\$HOME/.local/bin:\$PATH\"' >> $rc" ;;
esac

# A Chromium-family browser for the browser test: ANE4J_CHROMIUM, Debian's, or Chrome/Chromium in macOS's Applications
browser_path() {
  local b
  for b in "${ANE4J_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" \
           "/Applications/Chromium.app/Contents/MacOS/Chromium"; do
    [ -n "$b" ] && [ -x "$b" ] && { echo "$b"; return 0; }
  done
  return 0
}

# The tests' own tools: shellcheck (InstallScriptTest), and the browser test's (tools/browser/browser-test.mjs, run by BrowserTest): Debian's Chromium and the npm packages
# pinned in tools/browser/package-lock.json (playwright-core, esbuild, JupyterLab's rendermime and output area).
install_test_tools() {
  if [ "$SYSTEM_PACKAGES" = 1 ] && [ "$OS" = Linux ]; then
    apt_install chromium shellcheck
    command -v npm >/dev/null 2>&1 || apt_install nodejs npm
  fi
  if ! command -v npm >/dev/null 2>&1; then say "no npm: the browser test will say what is missing"; return 0; fi
  if [ -z "$(browser_path)" ]; then say "no Chromium or Chrome: the browser test will say what is missing (its npm packages not installed)"; return 0; fi
  local dir="$ROOT/tools/browser"
  if [ ! "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
    say "installing the browser test's npm packages (tools/browser)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || say "npm ci in tools/browser failed (the browser test will say so)"
  fi
}

# The npm references of the import tests (GgufNpmTest, ChatTemplateNpmTest): Hugging Face's GGUF parser and chat-template
# renderer, pinned in tools/hf-js/package-lock.json.
install_hf_js() {
  command -v npm >/dev/null 2>&1 || return 0
  local dir="$ROOT/tools/hf-js"
  if [ ! "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
    say "installing the import tests' npm packages (tools/hf-js)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || say "npm ci in tools/hf-js failed (the import tests will say so)"
  fi
}

if [ "$RUN_TESTS" = 1 ]; then
  install_test_tools
  install_hf_js
  say "running tests"
  "$MVN" -B -Dstyle.color=never test
fi
