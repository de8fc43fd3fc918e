package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code %generate}'s options, read by picocli: good ones reach the model, bad ones are one line naming the option. */
class GenerateMagicTest {
    private static String error(String... args) {
        var e = assertThrows(MagicException.class, () -> new TrainMagics().generate(new MagicCall(null, "generate", List.of(args), null)));
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
        return e.getMessage();
    }

    @Test
    void goodOptionsGetAsFarAsTheModel() {
        // parsing passed when the call generates (a run of an earlier test in this JVM) or fails only for want of a model
        for (List<String> args : List.of(List.of("Once", "upon", "--tokens", "4", "--temperature", "0", "--top-p", "0.5", "--seed", "3"),
                List.of("--topP=0.9", "--tokens=4", "Lily"))) {
            try {
                new TrainMagics().generate(new MagicCall(null, "generate", args, null));
            } catch (MagicException e) {
                assertTrue(e.getMessage().startsWith("[%generate] no model yet"), e.getMessage());
            }
        }
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
