package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import org.dflib.jjava.jupyter.kernel.magic.MagicsRegistry;
import org.junit.jupiter.api.Test;

class MagicRegistryTest {

    static final class Sample {
        @Magic(value = "hello", aliases = "hi", help = "%hello NAME")
        String hello(MagicCall call) {
            return "hello " + String.join("+", call.args()) + (call.body() == null ? "" : " / " + call.body());
        }

        @Magic(value = "block", cell = true, help = "%%block")
        String block(MagicCall call) {
            return call.name() + ":" + call.args() + ":" + call.body();
        }

        String notAMagic(MagicCall call) {
            return "no";
        }
    }

    static final class BadSignature {
        @Magic(value = "bad", help = "")
        String bad(List<String> args) {
            return "";
        }
    }

    @Test
    void splitsArgumentsLikeAShell() {
        assertEquals(List.of("a", "b c", "d"), MagicRegistry.splitArgs("  a \"b c\"\td "));
        assertEquals(List.of("say \"hi\"", "x\\y"), MagicRegistry.splitArgs("\"say \\\"hi\\\"\" x\\\\y"));
        assertEquals(List.of("", "x"), MagicRegistry.splitArgs("\"\" x"), "an empty quoted argument is kept");
        assertEquals(List.of("C:\\dir"), MagicRegistry.splitArgs("C:\\dir"), "a backslash before other characters stays");
        assertEquals(List.of(), MagicRegistry.splitArgs("   "));
        MagicException e = assertThrows(MagicException.class, () -> MagicRegistry.splitArgs("a \"b"));
        assertTrue(e.getMessage().contains("unclosed quote"));
    }

    @Test
    void findsAnnotatedMethodsWithAliases() {
        MagicRegistry r = new MagicRegistry().add(new Sample());
        assertEquals(List.of("block", "hello", "hi"), r.entries().stream().map(MagicRegistry.Entry::name).toList());
        assertTrue(r.entries().stream().filter(e -> e.name().equals("block")).allMatch(MagicRegistry.Entry::cell));
    }

    @Test
    void rejectsWrongSignatureAndDuplicates() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new MagicRegistry().add(new BadSignature()));
        assertTrue(e.getMessage().contains("MagicCall"), e.getMessage());
        MagicRegistry r = new MagicRegistry().add(new Sample());
        assertThrows(IllegalArgumentException.class, () -> r.add(new Sample()));
    }

    @Test
    void dispatchesThroughTheJJavaRegistry() throws Exception {
        FakeKernel k = new FakeKernel();
        new MagicRegistry().add(new Sample()).installInto(k, false);
        MagicsRegistry reg = k.getMagicsRegistry();
        assertEquals("hello a+b", reg.evalLineMagic(k, "hello", List.of("a", "b")));
        assertEquals("hello x", reg.evalLineMagic(k, "hi", List.of("x")));
        assertEquals("block:[n]:body\nline", reg.evalCellMagic(k, "block", List.of("n"), "body\nline"));
        assertTrue(k.displayed.isEmpty(), "our kernel shows results itself");
    }

    @Test
    void stockKernelsAlsoDisplayTheResult() throws Exception {
        FakeKernel k = new FakeKernel();
        new MagicRegistry().add(new Sample()).installInto(k, true);
        k.getMagicsRegistry().evalLineMagic(k, "hello", List.of("z"));
        assertEquals(1, k.displayed.size());
        assertEquals("hello z", k.displayed.getFirst().getData(org.dflib.jjava.jupyter.kernel.display.mime.MIMEType.TEXT_PLAIN));
    }
}
