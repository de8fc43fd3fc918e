package ane4j.backend.ane;

import ane4j.backend.ane.ffm.FakeObjc;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/** {@link AneRuntime#isAvailable()} in a fresh class loader each time, so its cached answer and the ffm classes start unloaded. */
class AneRuntimeTest {
    static final Path CLASSES = Path.of("target/classes");

    static final class Isolated extends URLClassLoader {
        Isolated() throws IOException {
            super(new URL[] {CLASSES.toUri().toURL()}, ClassLoader.getPlatformClassLoader());
        }

        boolean loaded(String name) { return findLoadedClass(name) != null; }

        Object call(String method) throws ReflectiveOperationException {
            return Class.forName(AneRuntime.class.getName(), true, this).getMethod(method).invoke(null);
        }
    }

    static List<String> ffmClassNames() throws IOException {
        Path dir = CLASSES.resolve("ane4j/backend/ane/ffm");
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".class"))
                    .map(n -> "ane4j.backend.ane.ffm." + n.substring(0, n.length() - 6)).toList();
        }
    }

    static Object withOverride(String value, Isolated loader, String method) throws Exception {
        String saved = value == null ? System.clearProperty(AneRuntime.LIBRARY_OVERRIDE_PROPERTY)
                : System.setProperty(AneRuntime.LIBRARY_OVERRIDE_PROPERTY, value);
        try {
            return loader.call(method);
        } finally {
            if (saved == null) System.clearProperty(AneRuntime.LIBRARY_OVERRIDE_PROPERTY);
            else System.setProperty(AneRuntime.LIBRARY_OVERRIDE_PROPERTY, saved);
        }
    }

    @Test
    void offMacWithoutOverrideItIsFalseAndNoFfmClassIsLoaded() throws Exception {
        assumeFalse(System.getProperty("os.name").toLowerCase(Locale.ROOT).startsWith("mac"), "this checks the non-Mac path");
        List<String> ffm = ffmClassNames();
        assertTrue(ffm.contains("ane4j.backend.ane.ffm.ObjC"), ffm.toString());
        try (Isolated loader = new Isolated()) {
            assertEquals(false, withOverride(null, loader, "isAvailable"));
            assertTrue(((String) loader.call("unavailableReason")).startsWith("not macOS"));
            assertEquals(List.of(), ffm.stream().filter(loader::loaded).toList(), "ffm classes loaded");
            assertTrue(loader.loaded(AneRuntime.class.getName()), "sanity: the loader did load AneRuntime");
        }
    }

    @Test
    void anAneBackendOffMacIsUnavailableWithTheReasonAndLoadsNoFfmClass() throws Exception {
        assumeFalse(System.getProperty("os.name").toLowerCase(Locale.ROOT).startsWith("mac"), "this checks the non-Mac path");
        List<String> ffm = ffmClassNames();
        try (Isolated loader = new Isolated()) {
            String saved = System.clearProperty(AneRuntime.LIBRARY_OVERRIDE_PROPERTY);
            try {
                Object backend = Class.forName("ane4j.backend.ane.AneBackend", true, loader).getConstructor().newInstance();
                assertEquals("ane", backend.getClass().getMethod("name").invoke(backend));
                assertEquals(false, backend.getClass().getMethod("isAvailable").invoke(backend));
                assertEquals(100L, backend.getClass().getMethod("compileBudget").invoke(backend));
                String reason = (String) backend.getClass().getMethod("unavailableReason").invoke(backend);
                assertTrue(reason.startsWith("not macOS"), reason);
            } finally {
                if (saved != null) System.setProperty(AneRuntime.LIBRARY_OVERRIDE_PROPERTY, saved);
            }
            assertEquals(List.of(), ffm.stream().filter(loader::loaded).toList(), "ffm classes loaded");
        }
    }

    @Test
    void aMissingOverrideLibraryIsFalseWithTheReasonNotAnException() throws Exception {
        try (Isolated loader = new Isolated()) {
            assertEquals(false, withOverride("/nonexistent/libnothing.so", loader, "isAvailable"));
            String reason = (String) loader.call("unavailableReason");
            assertTrue(reason.contains("/nonexistent/libnothing.so"), reason);
        }
    }

    @Test
    void theFakeRuntimeIsAvailable() throws Exception {
        FakeObjc.get();   // builds the fake and installs it as the override
        try (Isolated loader = new Isolated()) {
            assertEquals(true, withOverride(System.getProperty(AneRuntime.LIBRARY_OVERRIDE_PROPERTY), loader, "isAvailable"));
            assertNull(loader.call("unavailableReason"));
        }
    }
}
