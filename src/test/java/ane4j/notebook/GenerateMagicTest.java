package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code %generate}'s options, read by picocli: good ones are read, bad ones are one line naming the option. */
class GenerateMagicTest {
    private static String error(String... args) {
        var e = assertThrows(MagicException.class, () -> TrainMagics.parseGenerate(List.of(args)));
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
        return e.getMessage();
    }

    @Test
    void goodOptionsAreRead() {
        var g = TrainMagics.parseGenerate(List.of("Once", "upon", "--tokens", "8", "--temperature", "0", "--top-p", "0.5", "--seed", "3"));
        assertEquals(List.of("Once", "upon"), g.words);
        assertEquals(8, g.tokens);
        assertEquals(0f, g.temperature);
        assertEquals(0.5f, g.topP);
        assertEquals(3L, g.seed);
        var d = TrainMagics.parseGenerate(List.of("--topP=0.7", "Lily"));
        assertEquals(List.of("Lily"), d.words);
        assertEquals(0.7f, d.topP);
        assertEquals(64, d.tokens, "the default");
    }

    @Test
    void badOptionsAreOneLineNamingThem() {
        String unknown = error("--bogus", "1");
        assertTrue(unknown.startsWith("[%generate] unknown option --bogus; use --tokens"), unknown);
        String number = error("--tokens", "many");
        assertTrue(number.startsWith("[%generate] ") && number.contains("--tokens") && number.contains("many"), number);
        String missing = error("--seed");
        assertTrue(missing.startsWith("[%generate] ") && missing.contains("--seed"), missing);
    }
}
