package ane4j;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The shell scripts a user runs (install.sh, .ci/run, tools/*.sh) stay within what a Mac's /bin/bash 3.2 and BSD tools
 * take, pass shellcheck, and install.sh's JDK path logic does what it says for Homebrew; the Maven Wrapper is complete.
 */
class InstallScriptTest {

    static List<Path> scripts() throws Exception {
        List<Path> all = new ArrayList<>(List.of(Path.of("install.sh"), Path.of(".ci/run")));
        try (Stream<Path> s = Files.list(Path.of("tools"))) {
            s.filter(p -> p.toString().endsWith(".sh")).sorted().forEach(all::add);
        }
        return all;
    }

    /** Bash-4-only syntax (macOS ships bash 3.2) and GNU-only tool options (BSD userland), each with what to use instead. */
    static final Map<Pattern, String> NOT_ON_A_MAC = Map.ofEntries(
            Map.entry(Pattern.compile("\\bdeclare\\s+-[A-Za-z]*[An]"), "associative arrays / namerefs are bash 4"),
            Map.entry(Pattern.compile("\\$\\{[A-Za-z_][A-Za-z0-9_]*(,,|\\^\\^)"), "case conversion ${x,,} is bash 4: use tr"),
            Map.entry(Pattern.compile("^\\s*(mapfile|readarray)\\b", Pattern.MULTILINE), "mapfile/readarray are bash 4"),
            Map.entry(Pattern.compile("&>>"), "&>> is bash 4"),
            Map.entry(Pattern.compile("\\bwait\\s+-n\\b"), "wait -n is bash 4.3"),
            Map.entry(Pattern.compile("\\bsed\\s+(-[a-zA-Z]*\\s+)*-i\\b"), "sed -i differs in BSD sed"),
            Map.entry(Pattern.compile("\\bstat\\s+-c\\b"), "stat -c is GNU"),
            Map.entry(Pattern.compile("\\bdate\\s+-d\\b"), "date -d is GNU"),
            Map.entry(Pattern.compile("\\bgrep\\s+(-[a-zA-Z]*\\s+)*-[a-zA-Z]*P"), "grep -P is GNU"),
            Map.entry(Pattern.compile("\\bxargs\\s+-r\\b"), "xargs -r is GNU"),
            Map.entry(Pattern.compile("(^|[^-\\w])timeout\\s+\\d"), "timeout is GNU coreutils"));

    @Test
    void scriptsUseNothingAMacLacks() throws Exception {
        List<String> found = new ArrayList<>();
        for (Path p : scripts()) {
            String text = Files.readString(p);
            // nproc only behind a fallback (generate_vs_runc.sh: nproc || sysctl -n hw.ncpu)
            if (text.matches("(?s).*\\$\\(nproc\\).*")) found.add(p + ": $(nproc) without a fallback (macOS has none: sysctl -n hw.ncpu)");
            for (var e : NOT_ON_A_MAC.entrySet())
                for (String line : text.split("\n"))
                    if (!line.strip().startsWith("#") && e.getKey().matcher(line).find()) found.add(p + ": " + e.getValue() + ": " + line.strip());
        }
        assertEquals(List.of(), found);
    }

    @Test
    void scriptsPassShellcheck() throws Exception {
        boolean ci = System.getenv("CI") != null && !System.getenv("CI").isBlank();
        boolean have = !HostTools.onPath("shellcheck").isEmpty();
        String how = HostTools.MAC ? "brew install shellcheck" : "apt-get install shellcheck (./install.sh --test installs it)";
        if (!have && ci) fail("CI needs shellcheck: " + how);
        assumeTrue(have, "no shellcheck: " + how);
        List<String> cmd = new ArrayList<>(List.of("shellcheck", "-s", "bash", "-S", "warning"));
        for (Path p : scripts()) cmd.add(p.toString());
        Process proc = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, proc.waitFor(), out);
    }

    /** Homebrew's versioned Cellar path becomes its stable opt/ link (brew upgrade removes the old Cellar folder). */
    @Test
    void homebrewJdkPathsAreBakedAsTheirOptLink() throws Exception {
        String script = Files.readString(Path.of("install.sh"));
        String function = script.substring(script.indexOf("stable_jdk_path() {"), script.indexOf("\n}\n", script.indexOf("stable_jdk_path() {")) + 3);
        for (var c : Map.of(
                "/opt/homebrew/Cellar/openjdk/25.0.1/libexec/openjdk.jdk/Contents/Home", "/opt/homebrew/opt/openjdk/libexec/openjdk.jdk/Contents/Home",
                "/usr/local/Cellar/openjdk@25/25.0.2_1/libexec/openjdk.jdk/Contents/Home", "/usr/local/opt/openjdk@25/libexec/openjdk.jdk/Contents/Home",
                "/Library/Java/JavaVirtualMachines/temurin-25.jdk/Contents/Home", "/Library/Java/JavaVirtualMachines/temurin-25.jdk/Contents/Home",
                "/Users/Jane Doe/.sdkman/candidates/java/25-tem", "/Users/Jane Doe/.sdkman/candidates/java/25-tem").entrySet()) {
            Process p = new ProcessBuilder("bash", "-c", function + "\nstable_jdk_path \"$1\"", "test", c.getKey()).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            assertEquals(0, p.waitFor(), out);
            assertEquals(c.getValue(), out, c.getKey());
        }
    }

    @Test
    void theMavenWrapperIsCompleteAndPinned() throws Exception {
        assertTrue(Files.isExecutable(Path.of("mvnw")), "mvnw is committed executable");
        Properties p = new Properties();
        try (var in = Files.newInputStream(Path.of(".mvn/wrapper/maven-wrapper.properties"))) { p.load(in); }
        assertEquals("only-script", p.getProperty("distributionType"), "no wrapper jar: mvnw fetches Maven itself");
        assertTrue(p.getProperty("distributionUrl").matches("https://repo\\.maven\\.apache\\.org/maven2/org/apache/maven/apache-maven/3\\.9\\.\\d+/apache-maven-3\\.9\\.\\d+-bin\\.zip"),
                p.getProperty("distributionUrl"));
        assertTrue(p.getProperty("distributionSha256Sum", "").matches("[0-9a-f]{64}"), "the download is checked against a SHA-256");
    }
}
