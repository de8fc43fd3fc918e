package ane4j.train;

import ane4j.model.EmbeddedCorpus;
import ane4j.model.ModelConfig;
import ane4j.model.ModelFiles;
import ane4j.model.Parameters;
import ane4j.model.TokenData;
import ane4j.model.TokenShard;
import ane4j.model.Tokenizer;
import ane4j.run.TrainOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * What a run trains and on what, resolved from its options before a {@link Trainer} starts: a user graph and its
 * samples ({@code graph} set: {@link GraphData}, every other component null or 0), or the model (the file
 * {@code init} names, with its own config, else a preset or config file initialised from the seed), the tokenizer, the
 * training tokens and the held-out windows validation reads. {@link #resolve} says what it decided in one-line
 * messages; the trainer closes the token data with itself.
 *
 * @param trainTokens the sampler draws from {@code data}'s tokens [0, trainTokens)
 * @param heldOut     what validation reads, or null: no validation
 * @param valShard    the held-out shard when it is not {@code data}, or null
 * @param valWindows  windows of seqLen tokens validation reads (0: none)
 * @param graph       a graph run's graph and data, or null: a preset run
 */
public record TrainingSetup(ModelConfig config, Parameters params, Tokenizer tokenizer, TokenData data, long trainTokens,
                            Validation.HeldOut heldOut, TokenData valShard, int valWindows, GraphData graph) {

    /** Tokens of the embedded corpus a run without data trains on. */
    static final int EMBEDDED_TRAIN_TOKENS = 400_000;

    public static TrainingSetup resolve(TrainOptions o, Consumer<String> log) {
        if (o.graph() != null) {
            GraphData g = GraphData.resolve(o, log);
            if (g.heldOut() != null && o.evalEvery() > 0)
                log.accept("[eval] validation loss every " + o.evalEvery() + " steps and at the end: " + g.heldOutDescription());
            return new TrainingSetup(null, null, null, null, 0, null, null, 0, o.evalEvery() > 0 ? g : withoutValidation(g));
        }
        // model: from a checkpoint file (its config comes with it) or a preset/config file, initialised from the seed
        ModelConfig config;
        Parameters params;
        if (o.init() != null) {
            if (!o.modelSettings().isEmpty())
                throw new IllegalArgumentException("[train] " + String.join(", ", o.modelSettings().keySet()) + " shape a new model, but init " + o.init()
                        + " brings its own; drop them or drop init");
            params = ModelFiles.read(o.init());
            config = params.config();
        } else {
            ModelConfig c = ModelConfig.override(resolveConfig(o.model()), o.modelSettings());
            // the embedded corpus has a small vocabulary: rows of a larger one would never be trained (like maderix's
            // vocabulary compaction), so the model uses the corpus tokenizer's size
            int corpusVocab = o.data() == null ? EmbeddedCorpus.tokenizer().vocabSize() : c.vocabSize();
            if (corpusVocab < c.vocabSize()) {
                log.accept("[train] embedded corpus: vocabulary " + corpusVocab + " instead of " + c.name() + "'s " + c.vocabSize());
                c = c.withVocabSize(corpusVocab);
            }
            config = c;
            params = Parameters.init(config, o.seed());
        }
        // data: a token file, text tokenized as it is read, or the embedded corpus with its fitted tokenizer
        Tokenizer tokenizer;
        TokenData data;
        if (o.data() != null) {
            Path tok = ModelFiles.findTokenizer(o.tokenizer(), o.data(), o.init());
            tokenizer = tok == null ? null : ModelFiles.readTokenizer(tok, config.vocabSize());
            data = TokenData.open(o.data(), tokenizer, config.vocabSize(), config.seqLen(), TokenShard.Dtype.of(o.dataDtype()));
            if (tokenizer != null && !tokenizer.isTokenizerJson() && tokenizer.vocabSize() < config.vocabSize()) {
                data.close();
                throw new IllegalArgumentException("[tokenizer] " + tok + ": vocabulary of " + tokenizer.vocabSize() + " tokens is smaller than model "
                        + config.name() + "'s " + config.vocabSize() + " (the data's ids reach " + data.maxToken() + "), so the sample after training could not "
                        + "be decoded; give the tokenizer the data was made with (--tokenizer FILE, or next to " + o.data().getFileName() + ")");
            }
        } else {
            if (o.tokenizer() != null)
                throw new IllegalArgumentException("[tokenizer] --tokenizer " + o.tokenizer() + " without --data: the embedded corpus has its own tokenizer; "
                        + "give --data FILE (tokens, .txt or .jsonl) made with that tokenizer, or drop --tokenizer");
            tokenizer = EmbeddedCorpus.tokenizer();
            if (tokenizer.vocabSize() > config.vocabSize())
                throw new IllegalArgumentException("[train] the embedded corpus needs a vocabulary of " + tokenizer.vocabSize() + " but model " + config.name() + " has " + config.vocabSize());
            data = TokenData.of(TokenShard.of(EmbeddedCorpus.train(o.seed(), EMBEDDED_TRAIN_TOKENS), config.vocabSize(), config.seqLen()));
        }
        // held-out data: --val-data, else the embedded corpus's validation split, else the data file's tail (valFraction);
        // which tokens train depends on valData and valFraction only, never on evalEvery, so validation on or off
        // trains the same numbers
        int seq = config.seqLen();
        // (a text file's tail starts at a document)
        long tail = o.data() == null || o.valData() != null ? 0 : data.size() - data.splitPoint(o.valFraction());
        if (tail > 0 && (tail < seq + 1 || data.size() - tail < seq + 1)) {
            log.accept("[eval] " + o.data().getFileName() + ": " + data.size() + " tokens are too few to hold out " + o.valFraction() + " of them (" + tail
                    + ") and keep one window of " + (seq + 1) + " for each side; training on all of them, no validation (give --val-data FILE)");
            tail = 0;
        }
        long trainTokens = data.size() - tail;
        TokenData valShard = null;
        Validation.HeldOut held = null;
        try {
            if (o.valData() != null) {
                valShard = TokenData.open(o.valData(), tokenizer, config.vocabSize(), seq, TokenShard.Dtype.of(o.dataDtype()));
                held = new Validation.HeldOut(valShard, 0, valShard.size(), o.valData().getFileName().toString());
            } else if (o.data() == null) {
                int windows = Math.max(1, o.evalTokens() / seq);
                valShard = TokenData.of(TokenShard.of(EmbeddedCorpus.validation(o.seed(), windows * seq + 1), config.vocabSize(), seq));
                held = new Validation.HeldOut(valShard, 0, valShard.size(), "the embedded corpus's validation stories");
            } else if (tail > 0) {
                held = new Validation.HeldOut(data, trainTokens, data.size(), "the last " + tail + " tokens of " + o.data().getFileName());
            }
        } catch (RuntimeException e) {
            data.close();
            throw e;
        }
        boolean validate = held != null && o.evalEvery() > 0 && !o.weights().equals("static");
        // said at every start; a restart of the same run does not repeat them (Supervisor, LocalSession)
        if (held != null && o.evalEvery() > 0 && !validate)
            log.accept("[eval] weights = static: no validation during training (each would recompile every weight-bearing kernel); "
                    + "evaluate the run afterwards with ane4j eval --run " + o.runDir());
        int valWindows = validate ? Validation.windows(held, seq, o.evalTokens()) : 0;
        if (validate)
            log.accept("[eval] validation loss every " + o.evalEvery() + " steps and at the end: " + valWindows + " windows of " + seq + " tokens of " + held.description());
        return new TrainingSetup(config, params, tokenizer, data, trainTokens, validate ? held : null, valShard, valWindows, null);
    }

    private static GraphData withoutValidation(GraphData g) {
        return new GraphData(g.program(), g.layout(), g.init(), g.samples(), g.train(), null, null, g.inputs(), g.head());
    }

    private static ModelConfig resolveConfig(String model) {
        Path p = Path.of(model);
        if (model.contains("/") || model.endsWith(".txt") || model.endsWith(".conf") || Files.isRegularFile(p)) return ModelConfig.load(p);
        return ModelConfig.parse(model);
    }
}
