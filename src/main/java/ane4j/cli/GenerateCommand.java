package ane4j.cli;

import ane4j.backend.Backends;
import ane4j.infer.BackendGenerator;
import ane4j.model.Generator;
import ane4j.session.LocalSession;
import ane4j.session.Session;
import ane4j.session.WorkerSession;
import ane4j.worker.Supervisor;
import ane4j.model.Tokenizer;
import ane4j.model.Utf8Stream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ane4j generate}: text from a model, printed token by token as it is sampled (the sampler of {@code %generate}:
 * temperature 0 is greedy, as llama2.c's run.c). The prompt is printed first, as run.c does. On the CPU by default;
 * {@code --backend ref|ane} runs the prompt's prefill as MIL kernels on that backend and decodes with a KV cache on the
 * backend or the CPU ({@code --decode}; docs/generation.md).
 */
@Command(name = "generate", sortOptions = false, sortSynopsis = false, description = "Text from a model on the CPU or a backend, streamed as it is sampled.")
final class GenerateCommand implements Callable<Integer> {
    @Mixin Cli.HelpOption help;
    @Option(names = "--model", paramLabel = "FILE|DIR", description = "a llama2.c .bin, a safetensors file or folder, or an ane4j checkpoint")
    String model;
    @Option(names = "--run", paramLabel = "DIR", description = "the newest checkpoint of a run folder")
    String run;
    @Option(names = "--checkpoint", paramLabel = "FILE", description = "an ane4j checkpoint")
    String checkpoint;
    @Option(names = "--prompt", paramLabel = "TEXT", description = "the text to continue")
    String prompt;
    @Option(names = "--tokens", paramLabel = "N", defaultValue = "256", description = "tokens to generate (default ${DEFAULT-VALUE}; generation stops at the end of the model's context, BOS or EOS)")
    int tokens;
    @Option(names = "--temperature", paramLabel = "T", defaultValue = "1.0", description = "0 is greedy (argmax); default ${DEFAULT-VALUE}")
    double temperature;
    @Option(names = "--top-p", paramLabel = "P", defaultValue = "0.9", description = "nucleus sampling, default ${DEFAULT-VALUE} (1 = off)")
    double topP;
    @Option(names = "--seed", paramLabel = "S", defaultValue = "42", description = "sampling seed, default ${DEFAULT-VALUE}")
    long seed;
    @Option(names = "--tokenizer", paramLabel = "FILE", description = "a Hugging Face tokenizer.json or llama2.c tokenizer.bin (default: beside the model)")
    String tokenizer;
    @Option(names = "--chat", description = "the prompt is a user message, rendered by the model's chat template (tokenizer_config.json, or the GGUF file's); "
            + "only the answer is printed, up to the template's end of turn")
    boolean chat;
    @Option(names = "--adapter", paramLabel = "DIR", description = "a LoRA adapter in the PEFT layout (adapter_model.safetensors, adapter_config.json) on the model; a LoRA run's own by default")
    String adapter;
    @Option(names = "--backend", paramLabel = "cpu|ref|ane", defaultValue = "cpu", description = "cpu (default): the CPU path; ref or ane: the prompt's prefill as MIL kernels on that backend (the ANE in a supervised worker)")
    String backend;
    @Option(names = "--decode", paramLabel = "backend|cpu", description = "with --backend ref|ane: decode on the backend (a fixed-size KV cache) or on the CPU from the prefill's cache (default: cpu, as measured; docs/generation.md)")
    String decode;
    @Option(names = "--prefill-buckets", paramLabel = "N,N…", split = ",", description = "with --backend ref|ane: the prompt widths compiled (multiples of 32; default 32, 64, … up to the context)")
    int[] buckets;

    private final PrintStream stdout, err;

    GenerateCommand(PrintStream out, PrintStream err) {
        this.stdout = out;
        this.err = err;
    }

    @Override
    public Integer call() {
        PrintStream out = stdout;
        if (prompt == null)
            throw new CliException("no --prompt TEXT (e.g. --prompt \"Once upon a time\")");
        Cli.inRange("--tokens", tokens, 0, Integer.MAX_VALUE);
        Cli.inRange("--temperature", temperature, 0, 1e6);
        Cli.inRange("--top-p", topP, 0, 1);
        String where = backend.strip().toLowerCase(java.util.Locale.ROOT);
        if (!where.equals("cpu") && !where.equals("ref") && !where.equals("ane"))
            throw new CliException("[generate] --backend " + backend + " is not cpu, ref or ane");
        if (where.equals("cpu") && (decode != null || buckets != null))
            throw new CliException("[generate] --decode and --prefill-buckets apply to --backend ref or ane, not cpu");
        BackendGenerator.Decode dec = decode == null ? null : parseDecode(decode);
        ModelSource src = ModelSource.open(run, checkpoint, model, tokenizer, "generate");
        var lora = AdapterSource.find(src, adapter);
        ane4j.model.Parameters base = src.params();
        // the CPU runs the fused model; a backend's kernels take the adapters as inputs, unmerged
        if (lora != null) src = AdapterSource.fused(src, lora, AdapterSource.from(src, adapter));
        Tokenizer tok = src.tokenizer();
        int vocab = src.params().config().vocabSize();
        if (tok == null)
            throw new CliException("[generate] no tokenizer for " + src.description() + "; give --tokenizer FILE (a tokenizer.json or a llama2.c tokenizer.bin with " + vocab + " tokens)");
        if (tok.isTokenizerJson() ? tok.vocabSize() > vocab : tok.vocabSize() != vocab)
            throw new CliException("[generate] the tokenizer " + src.tokenizerFrom() + " has " + tok.vocabSize() + " tokens, the model " + vocab
                    + "; give --tokenizer FILE with the model's own tokenizer");

        int[] ids = chat ? ane4j.model.ChatData.prompt(tok, prompt) : tok.encode(prompt, true, false);
        // a chat answer ends at the template's end-of-turn token (its eos_token: Qwen3's <|im_end|>, Llama 3's <|eot_id|>)
        int endOfTurn = chat && tok.chatTemplate().specialTokens().get("eos_token") instanceof String eos ? tok.id(eos) : -1;
        int seqLen = src.params().config().seqLen();
        if (ids.length == 0) throw new CliException("[generate] the prompt is empty and " + src.tokenizerFrom() + " has no BOS token to start from; give --prompt TEXT");
        int lead = chat ? 0 : ids[0] == tok.bosId() ? 1 : 0; // BOS, kept in front; tokenizers without one (Qwen) start at the text
        if (ids.length >= seqLen) {
            // keep BOS and the end of the prompt, leaving half the context for generation
            int keep = Math.max(1, seqLen / 2 - lead);
            int[] cut = new int[keep + lead];
            if (lead == 1) cut[0] = ids[0];
            System.arraycopy(ids, ids.length - keep, cut, lead, keep);
            err.printf("note: the prompt is %d tokens, the context of %s is %d; using its last %d tokens%n", ids.length - lead, src.params().config().name(), seqLen, keep);
            ids = cut;
        }

        // the text is UTF-8 whatever the locale says (run.c writes the bytes as they are); a C locale would print '?' for "€"
        if (out == System.out && !out.charset().equals(StandardCharsets.UTF_8))
            out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        PrintStream text8 = out;
        Utf8Stream text = new Utf8Stream();
        int[] prev = {lead == 1 ? ids[0] : -1};
        // the prompt first, as run.c prints it (a chat prints only the answer)
        for (int i = lead; i < ids.length && !chat; i++) {
            out.print(text.push(tok.decodePiece(prev[0], ids[i])));
            prev[0] = ids[i];
        }
        if (chat) prev[0] = ids[ids.length - 1];
        out.flush();
        // a backend's kernels compile before the prompt is printed: their log lines do not split the text, and the
        // prefill's time is its own
        Session session = null;
        BackendGenerator g = null;
        double prepared = 0;
        if (!where.equals("cpu")) {
            session = session(where);
            g = new BackendGenerator(base, lora, session::compile, session.backendName(), dec, buckets, ane4j.mil.DType.FP16);
            try {
                prepared = g.prepare(ids.length);   // a prompt over the largest bucket: one line, before any compile
            } catch (RuntimeException e) {
                g.close();
                session.close();
                throw e;
            }
        }
        int[] made = {0};
        java.util.function.IntConsumer onToken = next -> {
            if (next == endOfTurn) throw new EndOfTurn();
            made[0]++;
            text8.print(text.push(tok.decodePiece(prev[0], next)));
            text8.flush();
            prev[0] = next;
        };
        long t0 = System.nanoTime();
        String detail = "";
        try {
            if (g == null) {
                new Generator(src.params(), tok).generateTokens(ids, tokens, (float) temperature, (float) topP, seed, onToken);
            } else {
                try (Session ses = session; BackendGenerator gen = g) {
                    try {
                        gen.generateTokens(ids, tokens, (float) temperature, (float) topP, seed, tok.bosId(), tok.eosId(), onToken);
                    } finally {
                        if (gen.lastStats() != null) detail = "; " + describe(gen, prepared);
                    }
                }
            }
        } catch (EndOfTurn e) {
            // the answer is complete
        }
        out.println(text.finish());
        out.flush();
        double secs = (System.nanoTime() - t0) / 1e9;
        err.printf(Locale.ROOT, "[generate] %d tokens in %.2f s (%.1f tokens/s), %s%s%n", made[0], secs, made[0] / Math.max(secs, 1e-9), src.description(), detail);
        return 0;
    }

    // stops the generation at a chat's end of turn
    private static final class EndOfTurn extends RuntimeException {
        EndOfTurn() { super(null, null, false, false); }
    }

    static BackendGenerator.Decode parseDecode(String s) {
        try {
            return BackendGenerator.Decode.parse(s);
        } catch (IllegalArgumentException e) {
            throw new CliException("[generate] --decode " + s + " is not backend or cpu");
        }
    }

    /** "prefill 9 tokens (bucket 32) at 812.3 tok/s, decode 16 tokens at 4.1 tok/s on ref (decode cpu), 4 kernels compiled and staged in 1.2 s". */
    static String describe(BackendGenerator g, double preparedSeconds) {
        BackendGenerator.Stats s = g.lastStats();
        return String.format(Locale.ROOT, "prefill %d tokens (bucket %d) at %.1f tok/s, decode %d tokens at %.1f tok/s on %s (decode %s), %d kernels compiled and staged in %.2f s",
                s.promptTokens(), s.bucket(), s.prefillTokensPerSecond(), s.decodedTokens(), s.decodeTokensPerSecond(), g.backend(),
                s.decode().name().toLowerCase(Locale.ROOT), g.compiles(), preparedSeconds);
    }

    /**
     * Where the kernels compile: the reference backend in this JVM; the ANE in a supervised worker, so its compile budget
     * and restart apply as to training (a restarted worker recompiles the kernels from their MIL). The ANE is checked
     * first: off Apple silicon that is one line, not a worker that fails to start.
     */
    private Session session(String where) {
        if (where.equals("ref")) return new LocalSession(Backends.create(new Backends.Settings("ref", false, null)).backend());
        Backends.choose("ane", null, System.getProperty("os.name", ""), System.getProperty("os.arch", ""), System.getProperty(Backends.LIBRARY_OVERRIDE_PROPERTY));
        return new WorkerSession(Supervisor.Options.defaults().withBackend("ane").withHints(Supervisor.Hints.CLI)
                .withLog(line -> { if (!line.startsWith("INFO: ")) err.println(line); }));
    }
}
