package ane4j.mil;

import ane4j.programs.AcceptancePrograms;
import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Mutated MIL texts (deleted, swapped, duplicated tokens, huge numbers, unicode, truncation, deep nesting): the parser
 * either returns a program that round-trips or throws MilParseException; never anything else, never slowly.
 */
class MilParserFuzzTest {
    static final int CASES = 6000;
    static final Pattern TOKEN = Pattern.compile("\\s+|[A-Za-z_][A-Za-z0-9_]*|\"(?:[^\"\\\\]|\\\\.)*\"|-?[0-9][0-9.a-fA-FxXpP]*(?:[eE][+-]?[0-9]+)?|->|.", Pattern.DOTALL);
    static final String[] HUGE = {"99999999999", "2147483648", "-2147483649", "18446744073709551616", "1e999999", "-1e-999999",
            "0x1p99999", "0x", "1.5e", "65536", "4294967296", "-0", "9".repeat(300), "0." + "0".repeat(380) + "1"};
    static final String[] JUNK = {"é", "😀", "\u0000", "\u202e", "\uFFFF", "\uD800", "[", "]", "(", ")", "{", "}", "<", ">", ",", "=", ";",
            "->", "\"", "\\", "/*", "//", "tensor", "tensor<fp16, [2]>", "fp16(", "BLOBFILE", "true", "inf", "-inf", "nan", "-", "."};

    static List<String> split(String text) {
        List<String> out = new ArrayList<>();
        Matcher m = TOKEN.matcher(text);
        while (m.find()) out.add(m.group());
        return out;
    }

    static List<String> bases() {
        List<String> b = new ArrayList<>();
        for (var c : AcceptanceCases.tinyCases())
            for (Dialect d : Dialect.values())
                if (c.program().requiredOpset().compareTo(d.opset()) <= 0) b.add(MilWriter.write(c.program(), d));
        b.add(MilParserTest.HAND_WRITTEN);
        return b;
    }

    static String mutate(List<String> base, SplittableRandom r) {
        List<String> t = new ArrayList<>(base);
        int rounds = 1 + (r.nextInt(4) == 0 ? r.nextInt(5) : 0);
        for (int k = 0; k < rounds && !t.isEmpty(); k++) {
            int i = r.nextInt(t.size());
            switch (r.nextInt(10)) {
                case 0 -> t.remove(i);
                case 1 -> { int j = r.nextInt(t.size()); String s = t.get(i); t.set(i, t.get(j)); t.set(j, s); }
                case 2 -> t.add(i, t.get(i));
                case 3 -> {
                    List<Integer> nums = new ArrayList<>();
                    for (int n = 0; n < t.size(); n++) if (!t.get(n).isEmpty() && (Character.isDigit(t.get(n).charAt(0)) || t.get(n).startsWith("-"))) nums.add(n);
                    t.set(nums.isEmpty() ? i : nums.get(r.nextInt(nums.size())), HUGE[r.nextInt(HUGE.length)]);
                }
                case 4 -> t.add(i, JUNK[r.nextInt(JUNK.length)]);
                case 5 -> t.subList(i, t.size()).clear();
                case 6 -> t.set(i, t.get(r.nextInt(t.size())));
                case 7 -> t.set(i, JUNK[r.nextInt(JUNK.length)]);
                case 8 -> t.add(i, (r.nextBoolean() ? "[" : "(").repeat(1 + r.nextInt(3000)));
                default -> { // remove from one line break to the next
                    int a = i;
                    while (a < t.size() && !t.get(a).contains("\n")) a++;
                    int e = a + 1;
                    while (e < t.size() && !t.get(e).contains("\n")) e++;
                    if (e < t.size()) t.subList(a, e).clear();
                }
            }
        }
        return String.join("", t);
    }

    @Test
    void mutatedTextsOnlyEverThrowMilParseException() {
        List<List<String>> bases = bases().stream().map(MilParserFuzzTest::split).toList();
        SplittableRandom r = new SplittableRandom(20240611);
        int[] outcome = new int[2];
        assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
            for (int n = 0; n < CASES; n++) {
                String text = mutate(bases.get(r.nextInt(bases.size())), r);
                try {
                    Program p = MilParser.parse(text);
                    Program again = MilParser.parse(MilWriter.write(p, Dialect.IOS18));
                    assertEquals(p, again, "a program the parser accepts must round-trip");
                    outcome[0]++;
                } catch (MilParseException e) {
                    assertTrue(e.getMessage().matches("(?s)\\d+:\\d+: .+"), "no position in: " + e.getMessage());
                    assertFalse(e.getMessage().contains("\n"), "one-line message expected: " + e.getMessage());
                    outcome[1]++;
                } catch (Throwable e) {
                    fail("case " + n + ": " + e + " on text:\n" + (text.length() > 3000 ? text.substring(0, 3000) + "..." : text), e);
                }
            }
        });
        assertEquals(CASES, outcome[0] + outcome[1]);
        assertTrue(outcome[1] > CASES / 2, "most mutations must be rejected: " + outcome[1]);
        assertTrue(outcome[0] > 50, "some mutations (e.g. swapped whitespace) stay valid: " + outcome[0]);
    }

    @Test
    void pathologicalInputsFailFast() {
        assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
            String[] texts = {
                    "[".repeat(1_000_000), "(".repeat(1_000_000), "program(1.3) {" + " func".repeat(200_000),
                    "program(1.3) [a = " + "dict<string,string>({{".repeat(50_000),
                    "program(1.3) { func main<ios18>(tensor<fp16, [1]> x) { tensor<fp16, [1]> y = const()[val = tensor<fp16, [1]>("
                            + "[".repeat(500_000) + "1" + "]".repeat(500_000) + ")]; } -> (y); }",
                    "\"" + "a".repeat(1_000_000), "/*" + " ".repeat(1_000_000), "1".repeat(1_000_000),
                    "program(1.3) { func main<ios18>(tensor<fp16, [99999999999]> x) { } -> (x); }",
                    "program(1.3) { func main<ios18>(tensor<fp16, [65536, 65536, 65536]> x) { } -> (x); }",
                    "program(1.3) { func main<ios18>(tensor<fp16, [1,1,1,1,1,1]> x) { } -> (x); }",
            };
            for (String t : texts) assertThrows(MilParseException.class, () -> MilParser.parse(t));
        });
    }

    /**
     * Issue 18: the same parser through its file entry point, as {@code mil check} runs it — mutated bytes of the .mil file
     * (so also text that is not UTF-8) and, separately, of its weight file: only one-line {@link MilException}s (parse errors
     * with line:col, [mil]/[blob] otherwise), bounded heap and time.
     */
    @Test
    void mutatedFilesAndWeightFilesThroughTheFileEntryPoint(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        Program a1 = AcceptancePrograms.a1Conv(8, 4);
        a1.weights().writeTo(dir);
        java.nio.file.Path mil = dir.resolve("a1.mil"), weight = dir.resolve(a1.weights().files().values().iterator().next().relativePath());
        byte[] weightBytes = java.nio.file.Files.readAllBytes(weight);
        List<byte[]> texts = new ArrayList<>();
        for (Dialect d : Dialect.values()) texts.add(MilWriter.write(a1, d).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        String tag = "(\\d+:\\d+: )?\\[(mil|blob|const|type|[a-z_]+)\\] |\\d+:\\d+: (expected|unknown value)";
        List<Class<? extends Throwable>> allowed = List.of(MilParseException.class, MilException.class);
        long t0 = System.nanoTime();
        var text = ane4j.fuzz.Fuzz.run(mil, texts, 3000, 1806, 64, f -> MilParser.parseDetailed(MilParser.readText(f), dir), tag, 64, allowed);
        java.nio.file.Files.write(mil, texts.get(0));
        var blobs = ane4j.fuzz.Fuzz.run(weight, List.of(weightBytes), 3000, 1807, 128, f -> MilParser.parseDetailed(MilParser.readText(mil), dir), tag, 64, allowed);
        System.out.printf("[fuzz] MIL files: %d cases, %d read, %d refused; their weight files: %d cases, %d read, %d refused; slowest %.1f ms; %d ms in all%n",
                3000, text.accepted(), text.refused(), 3000, blobs.accepted(), blobs.refused(), Math.max(text.maxNanos(), blobs.maxNanos()) / 1e6,
                (System.nanoTime() - t0) / 1_000_000);
        assertTrue(blobs.accepted() > 100, "flips in the weight data still read: " + blobs.accepted());
    }
}
