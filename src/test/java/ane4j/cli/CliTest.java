package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.cli.MilCommandTest.Result;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The command line every command shares (picocli + {@link Cli}): one-line errors naming the fix, exit codes, generated help. */
class CliTest {
    private static Result run(String... args) { return MilCommandTest.run(args); }

    private static void oneLine(Result r, int code, String expected) {
        assertEquals(code, r.code(), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
        assertEquals(expected, r.err().strip());
    }

    @Test
    void badOptionsAreOneLineNamingTheProblemAndTheFix() {
        oneLine(run("generate", "--top-k", "5"), Cli.FAILED, "ane4j generate: [cli] unknown option --top-k; options: --model, --run, --checkpoint, --prompt, "
                + "--tokens, --temperature, --top-p, --seed, --tokenizer, --chat, --adapter, --backend, --decode, --prefill-buckets (ane4j generate --help)");
        oneLine(run("export", "--bogus=1"), Cli.FAILED, "ane4j export: [cli] unknown option --bogus; options: --run, --checkpoint, --model, --format, --dtype, "
                + "--out, --tokenizer, --adapter, --merge (ane4j export --help)");
        oneLine(run("generate", "--prompt", "--model", "m.bin"), Cli.FAILED, "ane4j generate: [cli] --prompt has no value; give --prompt TEXT (or --prompt=TEXT)");
        oneLine(run("generate", "--seed", "1.5"), Cli.FAILED, "ane4j generate: [cli] --seed 1.5 is not a whole number");
        oneLine(run("generate", "--top-p", "lots"), Cli.FAILED, "ane4j generate: [cli] --top-p lots is not a number");
        oneLine(run("doctor", "extra"), Cli.FAILED, "ane4j doctor: [cli] unexpected argument 'extra'; usage: ane4j doctor [-h] [--model=NAME] [--json=FILE] "
                + "[--chip=m1|m2|m3|m4|m5] [--worker=auto|ane|ref|off] (ane4j doctor --help)");
        oneLine(run("mil", "run", "a.mil", "--input", "x=x.npy"), Cli.FAILED, "ane4j mil: [cli] no --output; give --output DIR (ane4j mil run --help)");
        oneLine(run("mil", "check"), Cli.FAILED, "ane4j mil: [cli] missing FILE.mil; usage: ane4j mil check [-h] [--weights=DIR] [--no-weights] "
                + "[--chip=m1|m2|m3|m4|m5] FILE.mil");
        oneLine(run("mil", "lint", "a.mil"), Cli.FAILED, "ane4j mil: [cli] unknown command 'lint' for ane4j mil; use one of check, fmt, run, grad, split, emit (ane4j mil --help)");
        oneLine(run("frobnicate"), Cli.USAGE, "ane4j: unknown command 'frobnicate' (try: ane4j help)");
        oneLine(run("bench", "step", "--steps"), Cli.FAILED, "ane4j bench: [bench] option --steps needs a value");
    }

    @Test
    void aValueThatLooksLikeAnArgumentFileOrANegativeNumberIsAValue() {
        // picocli would read "@args.txt" as a file of arguments; here it is a prompt. -1 is the value of --temperature.
        Result r = run("generate", "--prompt", "@user hi", "--temperature", "-1");
        oneLine(r, Cli.FAILED, "ane4j generate: --temperature -1 is not a number in [0, 1000000]");
    }

    /** Every option of every command is in its --help, which exits 0 and prints nothing on stderr. */
    @Test
    void helpIsGeneratedFromTheOptionsOfEveryCommand() {
        CommandLine root = Main.commandLine(System.out, System.err);
        List<String> checked = new java.util.ArrayList<>();
        for (Map.Entry<String, CommandLine> c : all(root)) {
            if (c.getKey().equals("ane4j train") || c.getKey().equals("ane4j help")) continue;   // train: the run layer's key table
            String[] words = (c.getKey() + " --help").substring("ane4j ".length()).split(" ");
            Result r = run(words);
            assertEquals(0, r.code(), c.getKey() + ": " + r.err());
            assertEquals("", r.err(), c.getKey());
            for (var o : c.getValue().getCommandSpec().options()) assertTrue(r.out().contains(o.longestName()), c.getKey() + " --help lacks " + o.longestName());
            checked.add(c.getKey());
        }
        assertEquals(List.of("ane4j", "ane4j generate", "ane4j export", "ane4j eval", "ane4j mil", "ane4j mil check", "ane4j mil fmt", "ane4j mil run", "ane4j mil grad", "ane4j mil split", "ane4j mil emit", "ane4j doctor", "ane4j bench"), checked);
        Result top = run();
        assertEquals(0, top.code());
        for (String cmd : List.of("train", "generate", "export", "mil", "doctor", "bench")) assertTrue(top.out().contains("  " + cmd + " "), top.out());
    }

    @Test
    void eachBenchmarkListsItsOwnOptions() {
        Result step = run("bench", "step", "--help");
        assertEquals(0, step.code(), step.err());
        assertTrue(step.out().contains("--compare-torch") && step.out().contains("--steps=N") && step.out().contains("--quick"), step.out());
        assertTrue(!step.out().contains("--configs") && !step.out().contains("--sizes"), step.out());
        Result all = run("bench", "--help");
        assertEquals(0, all.code());
        for (String b : ane4j.bench.Bench.NAMES) assertTrue(all.out().contains("  " + b + " "), all.out());
        assertEquals(Cli.USAGE, run("bench").code());
    }

    private static List<Map.Entry<String, CommandLine>> all(CommandLine cl) {
        List<Map.Entry<String, CommandLine>> out = new java.util.ArrayList<>();
        out.add(Map.entry(cl.getCommandSpec().qualifiedName(), cl));
        for (CommandLine sub : cl.getSubcommands().values()) out.addAll(all(sub));
        return out;
    }
}
