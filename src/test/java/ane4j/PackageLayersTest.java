package ane4j;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static java.util.Map.entry;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The package table's "may depend on" column (docs/DESIGN.md §2) holds for every file in
 * src/main: an import, a static import or a fully-qualified name in code (not in comments or strings) of another
 * ane4j package must be on its row. A package not in the table fails too, so a new package gets a row here and there.
 *
 * <p>Amendments to docs/DESIGN.md §2 encoded below (the column was too narrow for what the packages rightly do):
 * {@code chip} (new: depends on {@code mil}; {@code backend.ref} and {@code backend.ane} use it);
 * {@code backend.ane.ffm} depends on {@code mil}/{@code backend} only (the ANE's exception types live in {@code backend}:
 * in ffm they would be loaded off-Mac by AneBackend's handlers, which AneRuntimeTest forbids); {@code bench} is "everything but notebook and cli"; {@code notebook} and {@code cli}
 * may also use {@code bench} ({@code %%bench}, {@code ane4j bench}); {@code train} "all above" includes {@code chip};
 * {@code model} may use {@code blas} (which depends on nothing): the CPU forward of generation runs its matvecs on blas's
 * vector kernel and threads ({@code MatVec}, {@code Parallel}); {@code infer} (new: generation on a backend, its kernels
 * built from {@code train}'s packed layouts) sits beside {@code train}, and {@code session} and above use it;
 * {@code mil.grad} (gradients of MIL functions, emitted as MIL) depends on {@code mil}, and {@code mil} on it only for
 * {@code Mil.grad}; {@code programs} (the MIL program library that bench, doctor and tests share) depends on {@code mil}
 * only; {@code run} (a run's paperwork: its settings table, folder, record, metrics) sits below {@code train}, which writes it;
 * {@code notebook.kernel} (the kernel's Jupyter protocol parts: cell queue, protocol fixes) depends on no ane4j package,
 * and {@code notebook} wires it;
 * {@code train} sees backends through the SPI alone ({@code Backend.describeChip()} names the chip, so no concrete
 * backend is imported), and {@code backend} may name {@code chip}'s families for that ({@code ChipDescription}).
 */
class PackageLayersTest {
    static final Set<String> BELOW_SESSION = Set.of("mil", "mil.grad", "programs", "chip", "backend", "backend.ref", "backend.ane",
            "backend.ane.ffm", "blas", "model", "run", "train", "infer", "worker", "session");

    /** package (relative to ane4j) → the packages it may depend on (docs/DESIGN.md §2). */
    static final Map<String, Set<String>> MAY_DEPEND_ON = Map.ofEntries(
            entry("mil", Set.of("mil.grad")),
            entry("mil.grad", Set.of("mil")),
            entry("programs", Set.of("mil")),
            entry("chip", Set.of("mil")),
            entry("backend", Set.of("mil", "chip")),
            entry("backend.ref", Set.of("mil", "backend", "blas", "chip")),
            entry("backend.ane", Set.of("mil", "backend", "chip", "backend.ane.ffm")),
            entry("backend.ane.ffm", Set.of("mil", "backend")),
            entry("blas", Set.of()),
            entry("model", Set.of("mil", "blas")),
            entry("run", Set.of("model", "blas", "backend")),
            entry("train", Set.of("mil", "mil.grad", "chip", "run", "backend", "blas", "model")),
            entry("infer", Set.of("mil", "chip", "backend", "blas", "model", "run", "train")),
            entry("hub", Set.of("model")),
            entry("worker", Set.of("mil", "backend", "run", "train")),
            entry("session", Set.of("mil", "mil.grad", "backend", "run", "train", "infer", "worker", "model")),
            entry("notebook", union(BELOW_SESSION, Set.of("bench", "hub", "notebook.kernel"))),
            entry("notebook.kernel", Set.of()),
            entry("bench", BELOW_SESSION),
            entry("cli", union(BELOW_SESSION, Set.of("bench", "hub"))));

    static Set<String> union(Set<String> a, Set<String> b) {
        Set<String> u = new TreeSet<>(a);
        u.addAll(b);
        return Set.copyOf(u);
    }

    /** {@code ane4j.} followed by a dotted name; the longest known package prefix is the target. */
    static final Pattern REFERENCE = Pattern.compile("\\bane4j((?:\\s*\\.\\s*[A-Za-z_$][\\w$]*)+)");

    @Test
    void everyMainSourceKeepsToItsRow() throws IOException {
        Path root = Path.of("src/main/java/ane4j");
        List<Path> sources;
        try (Stream<Path> s = Files.walk(root)) {
            sources = s.filter(p -> p.toString().endsWith(".java")).sorted(Comparator.naturalOrder()).toList();
        }
        assertTrue(sources.size() > 50, "found the sources: " + sources.size());
        Set<String> breaks = new LinkedHashSet<>();
        for (Path p : sources) {
            String pkg = root.relativize(p.getParent()).toString().replace('\\', '/').replace('/', '.');
            String file = "src/main/java/ane4j/" + root.relativize(p).toString().replace('\\', '/');
            breaks.addAll(breaks(file, pkg, Files.readString(p)));
        }
        assertEquals(List.of(), List.copyOf(breaks), "package edges that docs/DESIGN.md §2 does not allow");
    }

    /** The forbidden edges of one file, each as {@code "file: from → to (Name)"}. */
    static List<String> breaks(String file, String pkg, String text) {
        List<String> out = new ArrayList<>();
        Set<String> allowed = MAY_DEPEND_ON.get(pkg);
        if (allowed == null) return List.of(file + ": package ane4j." + pkg + " has no row in docs/DESIGN.md §2 (add it there and here)");
        Matcher m = REFERENCE.matcher(codeOnly(text));
        while (m.find()) {
            String[] parts = m.group(1).replaceAll("\\s", "").substring(1).split("\\.");
            String target = null, name = "*";
            for (int i = parts.length; i >= 1; i--) {
                String candidate = String.join(".", List.of(parts).subList(0, i));
                if (MAY_DEPEND_ON.containsKey(candidate)) {
                    target = candidate;
                    if (i < parts.length) name = parts[i];
                    break;
                }
            }
            if (target == null) { out.add(file + ": " + pkg + " → unknown package ane4j." + m.group(1).substring(1)); continue; }
            if (target.equals(pkg)) continue;   // its own package (the package line included)
            if (!allowed.contains(target)) out.add(file + ": " + pkg + " → " + target + " (" + name + ")");
        }
        return out;
    }

    /** The text with comments, string/char literals and text blocks blanked (lengths kept). */
    static String codeOnly(String s) {
        StringBuilder b = new StringBuilder(s.length());
        int i = 0, n = s.length();
        while (i < n) {
            char c = s.charAt(i);
            if (c == '/' && i + 1 < n && s.charAt(i + 1) == '/') {
                while (i < n && s.charAt(i) != '\n') { b.append(' '); i++; }
            } else if (c == '/' && i + 1 < n && s.charAt(i + 1) == '*') {
                int end = s.indexOf("*/", i + 2);
                end = end < 0 ? n : end + 2;
                for (; i < end; i++) b.append(s.charAt(i) == '\n' ? '\n' : ' ');
            } else if (s.startsWith("\"\"\"", i)) {
                int end = s.indexOf("\"\"\"", i + 3);
                end = end < 0 ? n : end + 3;
                for (; i < end; i++) b.append(s.charAt(i) == '\n' ? '\n' : ' ');
            } else if (c == '"' || c == '\'') {
                b.append(' ');
                i++;
                while (i < n && s.charAt(i) != c && s.charAt(i) != '\n') {
                    if (s.charAt(i) == '\\' && i + 1 < n) { b.append(' '); i++; }
                    b.append(' ');
                    i++;
                }
                if (i < n) { b.append(' '); i++; }
            } else {
                b.append(c);
                i++;
            }
        }
        return b.toString();
    }

    @Test
    void theScanSeesImportsAndQualifiedNamesButNotCommentsOrStrings() {
        String src = """
                package ane4j.backend;

                import ane4j.mil.Program;
                import static ane4j.backend.ane.ffm.ObjC.ID;
                /** uses ane4j.backend.ref.RefBackend in a comment, and {@code java -cp ane4j.jar:lib/*} */
                class X {
                    // ane4j.worker.Supervisor in a line comment
                    String s = "ane4j.cli.Main";
                    char c = '"';
                    Object o = new ane4j.backend.ref.RefBackend();
                    Object w = ane4j.worker.*;
                }
                """;
        assertEquals(List.of(
                "X.java: backend → backend.ane.ffm (ObjC)",
                "X.java: backend → backend.ref (RefBackend)",
                "X.java: backend → worker (*)"), breaks("X.java", "backend", src));
        assertEquals(List.of("Y.java: package ane4j.gpu has no row in docs/DESIGN.md §2 (add it there and here)"),
                breaks("Y.java", "gpu", "package ane4j.gpu;"));
        assertEquals(List.of("Z.java: mil → unknown package ane4j.jar"), breaks("Z.java", "mil", "Object o = ane4j.jar;"));
        // ffm uses the ANE's exceptions from backend, and nothing of backend.ane: no named exception to the table
        assertEquals(List.of("F.java: backend.ane.ffm → backend.ane (AneRuntime)"), breaks("F.java", "backend.ane.ffm",
                "import ane4j.backend.AneException;\nimport ane4j.backend.FrameworkException;\nimport ane4j.backend.ane.AneRuntime;"));
    }

    /** The numerics and the run loop are written against the SPI: a concrete backend is the caller's choice. */
    @Test
    void trainImportsNoConcreteBackend() {
        for (String pkg : List.of("train", "run", "model"))
            for (String concrete : List.of("backend.ref", "backend.ane", "backend.ane.ffm"))
                assertFalse(MAY_DEPEND_ON.get(pkg).contains(concrete), pkg + " may not depend on " + concrete + " (docs/DESIGN.md §2)");
        assertEquals(List.of("T.java: train → backend.ref (RefBackend)", "T.java: train → backend.ane (AneBackend)"), breaks("T.java", "train",
                "import ane4j.backend.Backend;\nimport ane4j.backend.ref.RefBackend;\nclass T { Object a = ane4j.backend.ane.AneBackend.class; }"));
    }

    @Test
    void everyPackageOfTheTableIsARealDirectoryOrPlanned() {
        for (String pkg : MAY_DEPEND_ON.keySet()) {
            boolean exists = Files.isDirectory(Path.of("src/main/java/ane4j", pkg.replace('.', '/')));
            assertTrue(exists || pkg.equals("session"), "docs/DESIGN.md §2 names ane4j." + pkg + " but src/main has no such package");
        }
    }
}
