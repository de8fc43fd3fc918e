package ane4j;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Native downcalls stay in their two packages (docs/DESIGN.md §2), and objc_msgSend is never bound variadic. */
class FfmBoundaryTest {
    static final List<String> ALLOWED = List.of("ane4j/backend/ane/ffm/", "ane4j/blas/");
    static final Pattern FORBIDDEN = Pattern.compile(
            "java\\.lang\\.foreign\\.(Linker|SymbolLookup|FunctionDescriptor)\\b|import\\s+java\\.lang\\.foreign\\.\\*");

    static List<Path> javaSources() throws IOException {
        List<Path> all = new ArrayList<>();
        for (String root : List.of("src/main/java", "src/test/java")) {
            Path r = Path.of(root);
            if (!Files.isDirectory(r)) continue;
            try (Stream<Path> s = Files.walk(r)) {
                s.filter(p -> p.toString().endsWith(".java")).forEach(all::add);
            }
        }
        return all;
    }

    @Test
    void onlyTheFfmAndBlasPackagesTouchTheLinker() throws IOException {
        List<Path> sources = javaSources();
        assertTrue(sources.size() > 10, "found the sources: " + sources.size());
        List<String> offenders = new ArrayList<>();
        for (Path p : sources) {
            String rel = p.toString().replace('\\', '/');
            if (ALLOWED.stream().anyMatch(rel::contains)) continue;
            String text = Files.readString(p);
            if (FORBIDDEN.matcher(text).find()) offenders.add(rel);
        }
        assertEquals(List.of(), offenders, "Linker/SymbolLookup/FunctionDescriptor outside " + ALLOWED);
    }

    @Test
    void objcMsgSendIsNeverBoundAsVariadic() throws IOException {
        List<String> offenders = new ArrayList<>();
        try (Stream<Path> s = Files.walk(Path.of("src/main/java"))) {
            for (Path p : s.filter(f -> f.toString().endsWith(".java")).toList())
                if (Files.readString(p).contains("firstVariadicArg(") && p.toString().contains("ane")) offenders.add(p.toString());
        }
        assertEquals(List.of(), offenders, "objc_msgSend must be called with the exact prototype (arm64 ABI)");
    }

    @Test
    void theScanRecognisesAForbiddenImport() {
        String pkg = "java.lang." + "foreign.";   // split so that this file does not trip its own scan
        assertTrue(FORBIDDEN.matcher("import " + pkg + "Linker;").find());
        assertTrue(FORBIDDEN.matcher("import " + pkg + "*;").find());
        assertTrue(FORBIDDEN.matcher("var d = " + pkg + "FunctionDescriptor.of(x);").find());
        assertTrue(!FORBIDDEN.matcher("import " + pkg + "MemorySegment;").find());
    }
}
