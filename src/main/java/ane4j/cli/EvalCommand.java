package ane4j.cli;

import ane4j.backend.Backend;
import ane4j.model.EmbeddedCorpus;
import ane4j.model.Json;
import ane4j.model.ModelConfig;
import ane4j.model.TokenData;
import ane4j.model.TokenShard;
import ane4j.train.LoraAdapters;
import ane4j.run.TrainOptions;
import ane4j.train.TrainingStep;
import ane4j.train.Validation;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ane4j eval}: the loss and perplexity of a model on held-out data — by default the run's own held-out split
 * (what its validation loss was computed on, from run.json), or any token / text file. The forward pass is the
 * training step's (the same kernels and storage), so a run's last validation loss and {@code eval --run} agree.
 */
@Command(name = "eval", sortOptions = false, sortSynopsis = false, description = "Loss and perplexity of a model on held-out data (default: the run's own).")
final class EvalCommand implements Callable<Integer> {
    @Mixin Cli.HelpOption help;
    @Option(names = "--run", paramLabel = "DIR", description = "a run folder: its newest checkpoint, its held-out data and settings (run.json)")
    String run;
    @Option(names = "--checkpoint", paramLabel = "FILE", description = "an ane4j checkpoint (of --run, or on its own)")
    String checkpoint;
    @Option(names = "--model", paramLabel = "FILE|DIR", description = "a llama2.c .bin or safetensors file or folder (needs --data)")
    String model;
    @Option(names = "--data", paramLabel = "FILE", description = "tokens (.bin), text (.txt) or JSON lines (.jsonl) to evaluate on (default: the run's held-out split)")
    String data;
    @Option(names = "--tokens", paramLabel = "N", description = "evaluate the first N tokens, in windows of the model's seqLen (default: the run's evalTokens for the embedded corpus, all of a file)")
    Integer tokens;
    @Option(names = "--tokenizer", paramLabel = "FILE", description = "the tokenizer for text data (default: the model's)")
    String tokenizer;
    @Option(names = "--adapter", paramLabel = "DIR", description = "a LoRA adapter in the PEFT layout (adapter_model.safetensors, adapter_config.json) on the model; a LoRA run's own by default")
    String adapter;
    @Option(names = "--backend", paramLabel = "ane|ref", description = "where the forward pass runs (default: the run's, else automatic)")
    String backend;
    @Option(names = "--storage", paramLabel = "fp16|fp32", description = "activation storage (default: the run's, else fp16 as the ANE)")
    String storage;

    private final PrintStream out;

    EvalCommand(PrintStream out) { this.out = out; }

    @Override
    public Integer call() {
        if (tokens != null && tokens < 1) throw new CliException("--tokens " + tokens + " is not a positive number of tokens (e.g. --tokens 4096)");
        ModelSource src = checkpoint != null ? ModelSource.open(null, checkpoint, null, tokenizer, "eval") : ModelSource.open(run, null, model, tokenizer, "eval");
        // the adapter reaches the forward kernels as in training's validation (inputs, not merged), so a LoRA run's last
        // validation loss and eval --run agree
        LoraAdapters lora = AdapterSource.find(src, adapter);
        String described = lora == null ? src.description() : AdapterSource.describe(src, lora, AdapterSource.from(src, adapter));
        Path runDir = run != null ? Path.of(run) : src.runDir();
        TrainOptions o = runOptions(runDir);
        ModelConfig c = src.params().config();
        int seq = c.seqLen();
        Map<String, String> settings = new LinkedHashMap<>();
        if (o != null) {
            if (o.backend() != null) settings.put("backend", o.backend());
            settings.put("storage", o.storage());
            settings.put("attention", o.attention());
        }
        if (backend != null) settings.put("backend", backend);
        if (storage != null) settings.put("storage", storage);
        TrainOptions how = TrainOptions.of(settings);
        try (TokenData tokensData = heldOut(o, src, c)) {
            Validation.HeldOut held = new Validation.HeldOut(tokensData, 0, tokensData.size(), data != null ? Path.of(data).getFileName().toString() : describe(o));
            if (held.windows(seq) == 0)
                throw new CliException("[eval] " + held.description() + ": " + held.size() + " tokens, fewer than one window of seqLen + 1 = " + (seq + 1) + "; give more data");
            int windows = (int) Math.min(held.windows(seq), tokens != null ? Math.max(1, tokens / seq) : Integer.MAX_VALUE);
            Backend b = ane4j.run.RunSpec.newBackend(how);   // as ane4j train builds it
            long t0 = System.nanoTime();
            float loss;
            try (TrainingStep step = new TrainingStep(c, b, TrainingStep.Options.of(how, lora))) {   // dynamic weights: validation compiles nothing per step
                step.stageWeights(src.params().data());
                loss = Validation.loss(step, src.params().data(), held, seq, windows);
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            out.printf(Locale.ROOT, "loss %.4f  perplexity %.3f  on %d windows of %d tokens of %s%n", loss, Math.exp(loss), windows, seq, held.description());
            out.printf(Locale.ROOT, "model %s, backend %s, %s storage, %.1f s%n", described, b.name(), how.storage(), secs);
        }
        return Cli.OK;
    }

    /** The data: --data, else the run's held-out split as training held it out (valData, the embedded corpus's validation stories, or a data file's tail). */
    private TokenData heldOut(TrainOptions o, ModelSource src, ModelConfig c) {
        int seq = c.seqLen();
        if (data != null) {
            Path f = Path.of(data);
            if (!Files.exists(f)) throw new CliException("[eval] --data " + f + ": no such file");
            return TokenData.open(f, src.tokenizer(), c.vocabSize(), seq, TokenShard.Dtype.of(o != null ? o.dataDtype() : "uint16"));
        }
        if (o == null)
            throw new CliException("[eval] " + (src.runDir() == null ? src.description() + " is not part of a run" : src.runDir() + " has no run.json")
                    + ", so there is no held-out split to default to; give --data FILE");
        if (o.valData() != null) return TokenData.open(o.valData(), src.tokenizer(), c.vocabSize(), seq, TokenShard.Dtype.of(o.dataDtype()));
        if (o.data() == null) {
            int n = tokens != null ? tokens : o.evalTokens();
            return TokenData.of(TokenShard.of(EmbeddedCorpus.validation(o.seed(), Math.max(1, n / seq) * seq + 1), c.vocabSize(), seq));
        }
        TokenData all = TokenData.open(o.data(), src.tokenizer(), c.vocabSize(), seq, TokenShard.Dtype.of(o.dataDtype()));
        long cut = all.splitPoint(o.valFraction());
        if (o.valFraction() == 0 || all.size() - cut < seq + 1 || cut < seq + 1) {
            all.close();
            throw new CliException("[eval] the run trained on all of " + o.data().getFileName() + " (valFraction " + o.valFraction() + " held out less than one window); give --data FILE");
        }
        TokenData tail = all.range(cut, all.size());
        return new TokenData() {   // the tail, closing the file with it
            @Override public String name() { return tail.name(); }
            @Override public long size() { return tail.size(); }
            @Override public int maxToken() { return tail.maxToken(); }
            @Override public void read(long pos, int[] dst, int dstIndex, int n) { tail.read(pos, dst, dstIndex, n); }
            @Override public boolean masked() { return tail.masked(); }
            @Override public void readMask(long pos, byte[] dst, int dstIndex, int n) { tail.readMask(pos, dst, dstIndex, n); }
            @Override public TokenData range(long from, long to) { return tail.range(from, to); }
            @Override public long splitPoint(double fraction) { return tail.splitPoint(fraction); }
            @Override public void close() { all.close(); }
        };
    }

    private String describe(TrainOptions o) {
        if (o.valData() != null) return o.valData().getFileName().toString();
        if (o.data() == null) return "the embedded corpus's validation stories (seed " + o.seed() + ")";
        return "the held-out " + o.valFraction() + " of " + o.data().getFileName();
    }

    /** The run's options from its run.json, or null (no run, or a run recorded before run.json). */
    private static TrainOptions runOptions(Path runDir) {
        if (runDir == null) return null;
        Path f = runDir.resolve("run.json");
        if (!Files.isRegularFile(f)) return null;
        try {
            if (Json.parse(Files.readString(f)) instanceof Map<?, ?> root && root.get("options") instanceof Map<?, ?> opts) {
                Map<String, String> m = new LinkedHashMap<>();
                opts.forEach((k, v) -> { if (TrainOptions.DEFAULTS.containsKey(String.valueOf(k))) m.put(String.valueOf(k), String.valueOf(v)); });
                return TrainOptions.of(m);
            }
            throw new CliException("[run] " + f + " has no \"options\" object; give --data FILE");
        } catch (IOException e) {
            throw new CliException("[run] cannot read " + f + ": " + e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new CliException("[run] " + f + ": " + e.getMessage());
        }
    }
}
