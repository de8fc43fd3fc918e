package ane4j.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What doctor says about the host beyond the OS release: the AppleNeuralEngine framework's bundle version and the
 * process context (launchd session, ssh, parent). docs/macos27-ane.md §3: the framework version tells the releases apart
 * (370.x with macOS 15, 380.x with 26, 382.x with 27), and macOS 27's release notes restrict background access to the
 * Neural Engine (C10: FluidInference/FluidAudio#738 quoting the macOS 27 beta 2 notes), which may depend on whether the
 * process runs in the GUI (Aqua) session, a Background session, or under ssh. Not yet run on Apple hardware.
 */
final class HostContext {
    private HostContext() {}

    /** The framework bundle, under the system root. */
    static final String FRAMEWORK = "System/Library/PrivateFrameworks/AppleNeuralEngine.framework";

    /**
     * The plists that carry the framework's version, first found wins: macOS frameworks keep their resources under
     * {@code Versions/A/Resources} (the code itself lives in the dyld shared cache, the bundle directory stays on disk).
     */
    static final List<String> PLISTS = List.of("Versions/A/Resources/version.plist", "Versions/A/Resources/Info.plist",
            "Resources/version.plist", "Resources/Info.plist");

    /**
     * {@code "382.11 (CFBundleVersion of …/version.plist)"}, or null when no plist of the framework is under {@code root}
     * (every machine that is not a Mac). A binary plist is read with {@code /usr/bin/plutil} where it exists.
     */
    static String frameworkVersion(Path root) {
        Path fw = root.resolve(FRAMEWORK);
        for (String rel : PLISTS) {
            Path plist = fw.resolve(rel);
            if (!Files.isRegularFile(plist)) continue;
            String v;
            try {
                byte[] b = Files.readAllBytes(plist);
                v = new String(b, 0, Math.min(8, b.length), StandardCharsets.ISO_8859_1).equals("bplist00")
                        ? plutil(plist) : xmlValue(new String(b, StandardCharsets.UTF_8), "CFBundleVersion");
            } catch (IOException | RuntimeException e) {
                return "unreadable (" + FRAMEWORK + "/" + rel + ": " + e.getClass().getSimpleName() + ")";
            }
            return v == null ? "unknown (no CFBundleVersion in " + FRAMEWORK + "/" + rel + ")" : v + " (CFBundleVersion of " + FRAMEWORK + "/" + rel + ")";
        }
        return null;
    }

    /** The string value of {@code key} in an XML plist, or null. */
    static String xmlValue(String xml, String key) {
        Matcher m = Pattern.compile("<key>" + Pattern.quote(key) + "</key>\\s*<string>([^<]*)</string>").matcher(xml);
        return m.find() ? m.group(1).strip() : null;
    }

    private static String plutil(Path plist) {
        String v = run("/usr/bin/plutil", "-extract", "CFBundleVersion", "raw", "-o", "-", plist.toString());
        return v == null || v.isBlank() ? null : v.strip();
    }

    /**
     * One line: the launchd session ({@code launchctl managername}: Aqua is the GUI login session, Background a
     * background one, System a daemon's), whether ssh carries the process ({@code SSH_CONNECTION}/{@code SSH_TTY}), and
     * its parent. {@code manager} null: not macOS.
     */
    static String processContext(String manager, Map<String, String> env, String parent) {
        boolean ssh = env.containsKey("SSH_CONNECTION") || env.containsKey("SSH_TTY");
        String session = manager == null ? "no launchd session (not macOS)" : switch (manager.strip()) {
            case "Aqua" -> "Aqua session (the GUI login)";
            case "Background" -> "Background session: macOS 27 restricts background access to the Neural Engine (docs/macos27-ane.md C10)";
            case "" -> "launchd session unknown (launchctl managername said nothing)";
            default -> manager.strip() + " session (not the GUI login: macOS 27's background restriction may apply, docs/macos27-ane.md C10)";
        };
        return session + "; " + (ssh ? "over ssh" : "not over ssh") + "; parent " + (parent == null || parent.isBlank() ? "unknown" : parent);
    }

    /** This process's context (see {@link #processContext(String, Map, String)}). */
    static String processContext() {
        boolean mac = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("mac");
        String manager = mac ? run("/bin/launchctl", "managername") : null;
        if (mac && manager == null) manager = "";
        String parent = ProcessHandle.current().parent().flatMap(p -> p.info().command()).orElse(null);
        return processContext(manager, System.getenv(), parent);
    }

    /** A short command's output, or null when it cannot run or fails. */
    private static String run(String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            return p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0 ? out.strip() : null;
        } catch (IOException | RuntimeException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }
}
