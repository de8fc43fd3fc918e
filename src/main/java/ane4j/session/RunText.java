package ane4j.session;

import ane4j.infer.BackendGenerator;
import ane4j.mil.DType;
import ane4j.model.Generator;
import ane4j.model.Tokenizer;
import java.util.Locale;

/**
 * Text from a {@link Run}'s current model, between or after its steps: sampled on the CPU, or prefilled (and decoded)
 * by MIL kernels on the run's session, compiled once for the run.
 */
final class RunText {
    private final Run run;
    private BackendGenerator.KernelCache generationKernels;   // the session's generation kernels, compiled once for the run
    private volatile String lastGenerate;

    RunText(Run run) {
        this.run = run;
    }

    /**
     * Text from the run's current model: on the CPU ({@code backend} "cpu" or null), or with the prompt's prefill as MIL
     * kernels on the session's backend ({@code backend} its name, or "backend"), compiled once for the run and reused as
     * it trains (the weights are inputs), and decoding where {@code decode} says (null: {@link
     * BackendGenerator#defaultDecode}). A LoRA run's adapters go into the kernels unmerged. In a worker session the
     * kernels are the worker's: its compile budget and restart apply as to training.
     */
    String generate(String prompt, int maxTokens, float temperature, float topP, long seed, String backend, String decode) {
        Training t = run.training();
        if (t == null) throw new IllegalStateException("[generate] the run has not started a model yet");
        if (run.options().graph() != null)
            throw new IllegalStateException("[generate] this run trains the graph " + run.options().graph().getFileName() + ", not a language model; Fit.apply (or ane4j mil run) evaluates it");
        if (run.running()) throw new IllegalStateException("[generate] training is still running; %train stop (or wait) first");
        Tokenizer tok = t.tokenizer();
        if (tok == null) throw new IllegalStateException("[generate] the run's data came without tokenizer.bin next to it; nothing to decode with");
        String b = backend == null ? "cpu" : backend.strip().toLowerCase(Locale.ROOT);
        if (b.equals("cpu")) {
            if (decode != null) throw new IllegalArgumentException("[generate] --decode applies to the backend, not --backend cpu");
            long t0 = System.nanoTime();
            String text = new Generator(t.parameters(), tok).generate(prompt, maxTokens, temperature, topP, seed);
            lastGenerate = String.format(Locale.ROOT, "cpu, %.2f s", (System.nanoTime() - t0) / 1e9);
            return text;
        }
        String here = run.session().backendName();
        if (!b.equals("backend") && !b.equals(here))
            throw new IllegalArgumentException("[generate] the session runs on " + here + ", not " + b + "; use --backend " + here + " or cpu (Ane.use(...) for another session)");
        BackendGenerator.Decode d = decode == null ? null : BackendGenerator.Decode.parse(decode);
        int[] ids = tok.encode(prompt, true, false);
        synchronized (this) {
            if (generationKernels == null) generationKernels = new BackendGenerator.KernelCache(run.session()::compile);
        }
        try (BackendGenerator g = new BackendGenerator(t.baseParameters(), t.adapters(), generationKernels, here, d, null, DType.FP16)) {
            double prepared = ids.length > 0 ? g.prepare(ids.length) : 0;
            int[] all = g.generateTokens(ids, maxTokens, temperature, topP, seed, tok.bosId(), tok.eosId(), x -> {});
            BackendGenerator.Stats st = g.lastStats();
            lastGenerate = String.format(Locale.ROOT, "%s: prefill %d tokens (bucket %d) at %.1f tok/s, decode %d tokens at %.1f tok/s (decode %s), %d kernels compiled for the run, %.2f s to compile and stage",
                    here, st.promptTokens(), st.bucket(), st.prefillTokensPerSecond(), st.decodedTokens(), st.decodeTokensPerSecond(),
                    st.decode().name().toLowerCase(Locale.ROOT), g.compiles(), prepared);
            return tok.decodeVisible(all);
        }
    }

    /** Where and how fast the last {@link #generate} ran, or null. */
    String last() { return lastGenerate; }
}
