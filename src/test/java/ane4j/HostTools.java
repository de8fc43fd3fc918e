package ane4j;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Where the tests find the host's own tools (Python, a Chromium-family browser, setsid), on Linux and macOS, and the
 * one-line way to get each on this OS for the skip and failure messages. An environment variable always wins.
 */
public final class HostTools {
    private HostTools() {}

    public static final boolean MAC = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("mac");

    /**
     * {@code ANE4J_PYTHON}; else Debian's {@code /usr/bin/python3} on Linux (where apt puts Jupyter, numpy and torch,
     * whatever python3 PATH finds first); else {@code python3} on PATH (on macOS never the Command Line Tools' shim
     * unless the tools are installed: it opens an install dialog).
     */
    public static String python() {
        String env = System.getenv("ANE4J_PYTHON");
        if (env != null && !env.isBlank()) return env;
        if (!MAC && Files.isExecutable(Path.of("/usr/bin/python3"))) return "/usr/bin/python3";
        for (Path p : onPath("python3")) {
            if (MAC && p.toString().equals("/usr/bin/python3") && !commandLineTools()) continue;
            return p.toString();
        }
        return MAC ? "python3" : "/usr/bin/python3";
    }

    /** How to get Jupyter's Python packages on this OS (what install.sh --test does there). */
    public static String howToGetJupyter() {
        return MAC ? "./install.sh --test makes a venv with them (.ane4j/jupyter-venv), or pip install jupyter_client jupyter_kernel_test nbclient nbconvert notebook and set ANE4J_PYTHON"
                : "./install.sh installs Debian's (tools/install-jupyter.sh), or set ANE4J_PYTHON to a python3 that has them";
    }

    /** {@code ANE4J_CHROMIUM}; else Debian's Chromium; else Chrome or Chromium in macOS's Applications; null if none. */
    public static Path chromium() {
        String env = System.getenv("ANE4J_CHROMIUM");
        if (env != null && !env.isBlank()) return Path.of(env);
        for (String c : List.of("/usr/bin/chromium", "/usr/bin/chromium-browser",
                "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome", "/Applications/Chromium.app/Contents/MacOS/Chromium"))
            if (Files.isExecutable(Path.of(c))) return Path.of(c);
        return null;
    }

    public static String howToGetChromium() {
        return MAC ? "install Google Chrome (or brew install --cask chromium), or set ANE4J_CHROMIUM"
                : "./install.sh --test installs Debian's chromium, or set ANE4J_CHROMIUM";
    }

    /** Every executable called {@code name} on PATH, in PATH's order. */
    public static List<Path> onPath(String name) {
        List<Path> found = new ArrayList<>();
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            if (dir.isBlank()) continue;
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p) && !found.contains(p)) found.add(p);
        }
        return found;
    }

    private static boolean commandLineTools() {
        try {
            Process p = new ProcessBuilder("xcode-select", "-p").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor() == 0;
        } catch (Exception e) {
            return false;
        }
    }
}
