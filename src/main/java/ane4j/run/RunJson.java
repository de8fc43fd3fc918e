package ane4j.run;

import ane4j.blas.Blas;
import ane4j.model.Json;
import ane4j.model.ModelConfig;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code run.json}, next to {@code run.txt}: what someone else needs to rerun a run. {@code "options"}: every run key
 * (the canonical names of {@link TrainOptions#DEFAULTS}) → its value as a string that {@link TrainOptions#of} reads
 * back, with the effective loss scale and whether this start resumed, then the run layer's keys of where and how it
 * ran (compileBudget, inProcess, heap: {@code ane4j.run.RunSpec} reads them all back); {@code "command"}: the
 * command line and working directory; {@code "git"}: commit and dirty flag of the ane4j checkout, when there is one;
 * {@code "machine"}: ane4j version, JDK, OS, CPU, cores and the training JVM's heap limit, BLAS library and core,
 * backend and chip; {@code "data"}: every input file with its SHA-256; {@code "seed"}; {@code "model"}: the resolved
 * model config.
 */
public final class RunJson {
    private RunJson() {}

    /** Set by the {@code ane4j} launcher to the command line it ran (the worker JVM inherits every ane4j.* property). */
    public static final String COMMAND_PROPERTY = "ane4j.command";

    /** The input files of a run: role (init, data, valData, tokenizer) → file; in-memory inputs as their own entries. */
    public record Input(String role, Path file, String description, byte[] contents) {
        public static Input file(String role, Path file) { return new Input(role, file, null, null); }

        public static Input memory(String role, String description, byte[] contents) { return new Input(role, null, description, contents); }
    }

    static String document(Map<String, String> options, ModelConfig config, String runId, String backend, String chip, List<Input> inputs,
                           Map<String, Object> previous) {
        return document(options, config.toFileText(), runId, backend, chip, inputs, previous);
    }

    /** {@code "model"} from {@code key = value} lines: a preset's config, or a graph run's layout. */
    static String document(Map<String, String> options, String modelText, String runId, String backend, String chip, List<Input> inputs,
                           Map<String, Object> previous) {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("runId", runId);
        root.put("options", options);
        root.put("command", command());
        root.put("git", git());
        root.put("machine", machine(backend, chip));
        root.put("data", data(inputs, previous));
        root.put("seed", options.get("seed"));
        Map<String, String> model = new LinkedHashMap<>();
        for (String line : modelText.split("\n")) {
            int eq = line.indexOf(" = ");
            if (eq > 0) model.put(line.substring(0, eq), line.substring(eq + 3));
        }
        root.put("model", model);
        return Json.pretty(root);
    }

    private static Map<String, Object> command() {
        Map<String, Object> m = new LinkedHashMap<>();
        String given = System.getProperty(COMMAND_PROPERTY);
        m.put("line", given != null ? given : ProcessHandle.current().info().commandLine().orElse("unknown"));
        m.put("workingDir", Path.of("").toAbsolutePath().toString());
        return m;
    }

    private static final Map<Path, java.util.Optional<Map<String, Object>>> GIT = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * The ane4j checkout the launcher ran from ({@code -Dane4j.home}), else the working directory's: commit and dirty flag;
     * null without git. Asked once per checkout and process (two git processes: a notebook's worker asks while it warms up).
     */
    public static Map<String, Object> git() {
        String home = System.getProperty("ane4j.home");
        Path dir = Path.of(home != null ? home : "").toAbsolutePath();
        return GIT.computeIfAbsent(dir, d -> java.util.Optional.ofNullable(askGit(d))).orElse(null);
    }

    private static Map<String, Object> askGit(Path dir) {
        if (!gitRunsWithoutADialog()) return null;
        String commit = run(dir, "git", "rev-parse", "HEAD");
        if (commit == null || !commit.matches("[0-9a-f]{40}")) return null;
        String status = run(dir, "git", "status", "--porcelain", "--untracked-files=no");
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("checkout", dir.toString());
        m.put("commit", commit);
        m.put("dirty", status == null ? null : !status.isBlank());
        return m;
    }

    /**
     * On macOS, {@code /usr/bin/git} is a shim that opens the "install the command line developer tools" dialog when
     * they are absent: git is run only where another git comes first on PATH or {@code xcode-select -p} finds the tools.
     */
    static boolean gitRunsWithoutADialog() {
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("mac")) return true;
        for (String d : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            Path git = Path.of(d.isEmpty() ? "." : d, "git");
            if (!java.nio.file.Files.isExecutable(git)) continue;
            return !git.toString().equals("/usr/bin/git") || run(Path.of("/"), "xcode-select", "-p") != null;
        }
        return false;
    }

    private static String run(Path dir, String... command) {
        try {
            Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(false).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes()).strip();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroy();
                return null;
            }
            return p.exitValue() == 0 ? out : null;
        } catch (IOException e) {
            return null;                     // no git on the PATH, or the directory is gone
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static Map<String, Object> machine(String backend, String chip) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ane4j", Version.ane4j());
        m.put("jdk", System.getProperty("java.vm.vendor") + " " + System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        // on a Mac the release from sw_vers (with its build): old-SDK JDKs report os.version 16.x on macOS 26 (first-contact #25)
        ane4j.backend.MacOs mac = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("mac") ? ane4j.backend.MacOs.current() : null;
        m.put("os", System.getProperty("os.name") + " " + (mac != null && mac.isMac() ? mac.toString() : System.getProperty("os.version")) + " " + System.getProperty("os.arch"));
        m.put("cpu", Blas.cpuModel());
        m.put("cores", Runtime.getRuntime().availableProcessors());
        m.put("maxHeapBytes", Runtime.getRuntime().maxMemory());   // of the JVM that trains: the worker's -Xmx (heap)
        m.put("blas", Blas.get().description());
        m.put("backend", backend);
        m.put("chip", chip);
        return m;
    }

    /** Each input with its SHA-256; a file whose size and modification time match the previous run.json keeps that hash. */
    private static Map<String, Object> data(List<Input> inputs, Map<String, Object> previous) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Input in : inputs) {
            Map<String, Object> e = new LinkedHashMap<>();
            if (in.file() != null) {
                Path f = in.file();
                e.put("path", f.toString());
                try {
                    long size = Files.size(f), mtime = Files.getLastModifiedTime(f).toMillis();
                    e.put("bytes", size);
                    e.put("modified", mtime);
                    e.put("sha256", previous.get(in.role()) instanceof Map<?, ?> p && f.toString().equals(p.get("path"))
                            && Long.valueOf(size).equals(p.get("bytes")) && Long.valueOf(mtime).equals(p.get("modified")) && p.get("sha256") instanceof String h
                            ? h : sha256(f));
                } catch (IOException ex) {
                    e.put("error", "cannot read: " + RunFolder.reason(ex));
                }
            } else {
                e.put("source", in.description());
                e.put("bytes", (long) in.contents().length);
                e.put("sha256", hex(digest().digest(in.contents())));
            }
            out.put(in.role(), e);
        }
        return out;
    }

    static String sha256(Path file) throws IOException {
        MessageDigest md = digest();
        byte[] buf = new byte[1 << 20];
        try (InputStream in = Files.newInputStream(file)) {
            for (int n; (n = in.read(buf)) > 0; ) md.update(buf, 0, n);
        }
        return hex(md.digest());
    }

    private static MessageDigest digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("[run] this JDK has no SHA-256", e);
        }
    }

    private static String hex(byte[] b) { return HexFormat.of().formatHex(b); }

    /** The previous run.json's "data" object, or empty when there is none or it does not parse. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> previousData(Path runJson) {
        try {
            if (Files.exists(runJson) && Json.parse(Files.readString(runJson)) instanceof Map<?, ?> root && root.get("data") instanceof Map<?, ?> d)
                return (Map<String, Object>) d;
        } catch (IOException | RuntimeException e) {
            // unreadable or hand-edited: every file is hashed again
        }
        return Map.of();
    }
}
