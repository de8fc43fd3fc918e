package ane4j.cli;

import ane4j.model.EmbeddedCorpus;
import ane4j.model.ModelFiles;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.Parameters;
import ane4j.model.Tokenizer;
import ane4j.train.Checkpoint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where {@code export} and {@code generate} take a model from: a run folder (its newest readable checkpoint), an ane4j
 * checkpoint, a llama2.c {@code .bin}, or a safetensors file or folder — and the tokenizer that goes with it.
 */
record ModelSource(Parameters params, Tokenizer tokenizer, String tokenizerFrom, Path runDir, String description, float[] checkpointAdapters) {

    /** A source without LoRA adapters of its own. */
    ModelSource(Parameters params, Tokenizer tokenizer, String tokenizerFrom, Path runDir, String description) {
        this(params, tokenizer, tokenizerFrom, runDir, description, null);
    }

    /** From {@code --run DIR}, {@code --checkpoint FILE} or {@code --model FILE}: exactly one of them. */
    static ModelSource open(String run, String checkpoint, String model, String tokenizerFile, String command) {
        int given = (run != null ? 1 : 0) + (checkpoint != null ? 1 : 0) + (model != null ? 1 : 0);
        if (given != 1)
            throw new CliException((given == 0 ? "no model given" : "give only one of --run, --checkpoint, --model")
                    + " (ane4j " + command + " --run DIR, --checkpoint FILE.ane4j or --model FILE.bin|DIR|FILE.safetensors)");
        // a Hugging Face id (Qwen/Qwen3-0.6B): its snapshot in the huggingface_hub cache, fetched when missing
        model = ane4j.hub.HfHub.resolveArgument(model);
        tokenizerFile = ane4j.hub.HfHub.resolveArgument(tokenizerFile);
        ModelSource s;
        if (run != null) s = fromRun(Path.of(run));
        else {
            Path p = Path.of(checkpoint != null ? checkpoint : model);
            if (!Files.exists(p)) throw new CliException("[model] " + p + ": no such file or folder");
            s = checkpoint != null || isCheckpoint(p) ? fromCheckpoint(p, null) : fromModelFile(p);
        }
        if (tokenizerFile != null) {
            Path t = ModelFiles.findTokenizer(Path.of(tokenizerFile), null, null);
            s = new ModelSource(s.params, Tokenizer.read(t), t.toString(), s.runDir, s.description, s.checkpointAdapters);
        }
        return s;
    }

    private static boolean isCheckpoint(Path p) {
        if (!Files.isRegularFile(p)) return false;
        try (var in = Files.newInputStream(p)) {
            return java.util.Arrays.equals(in.readNBytes(8), "ANE4JCKP".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        } catch (IOException e) {
            throw new CliException("[model] cannot read " + p + ": " + e.getMessage());
        }
    }

    static ModelSource fromRun(Path dir) {
        if (!Files.isDirectory(dir)) throw new CliException("[run] " + dir + ": no such run folder (give the --run-dir of a train, e.g. runs/latest)");
        Checkpoint.Found f = Checkpoint.findNewestWeights(dir.resolve("checkpoints"));
        if (f.contents() == null)
            throw new CliException("[run] " + dir + ": no readable checkpoint in " + dir.resolve("checkpoints")
                    + (f.unreadable().isEmpty() ? "" : " (" + String.join("; ", f.unreadable().values()) + ")") + "; train it first (ane4j train --run-dir " + dir + ")");
        return fromCheckpoint(f.file(), dir);
    }

    private static ModelSource fromCheckpoint(Path file, Path runDir) {
        Checkpoint.Contents c = Checkpoint.loadWeights(file);
        if (c.state().graph() != null)
            throw new CliException("[run] " + file + " is a checkpoint of a graph run (" + c.state().graph().graph() + "), not of a transformer: there is no model to generate with, "
                    + "evaluate or export; its trained parameters are NAME.npy in the run folder's params/ (ane4j train --graph writes them)");
        ModelConfig config = c.state().config();
        Parameters p = new Parameters(new ParameterLayout(config), c.params());
        Path dir = runDir != null ? runDir : runDirOf(file);
        Tokenizer tok = null;
        String from = null;
        if (dir != null) {
            // the run's tokenizer: its --tokenizer, else the one beside its data or init model, else the embedded corpus's
            String data = runSetting(dir, "data"), given = runSetting(dir, "tokenizer"), init = runSetting(dir, "init");
            if (data == null || data.equals("embedded corpus")) {
                Tokenizer t = EmbeddedCorpus.tokenizer();
                if (t.vocabSize() <= config.vocabSize()) { tok = t; from = "the embedded corpus"; }
            } else {
                Path t = ModelFiles.findTokenizer(given == null || given.isEmpty() || !Files.exists(Path.of(given)) ? null : Path.of(given), Path.of(data),
                        init == null || init.isEmpty() ? null : Path.of(init));
                if (t != null) { tok = Tokenizer.read(t); from = t.toString(); }
            }
        }
        // a LoRA run's checkpoint: params are the frozen base, c.lora() the adapters as of this step
        return new ModelSource(p, tok, from, dir, file + " (step " + c.state().step() + ")", c.lora());
    }

    // a checkpoint in RUN/checkpoints/ belongs to RUN when RUN has a run.txt
    private static Path runDirOf(Path checkpoint) {
        Path parent = checkpoint.toAbsolutePath().getParent();
        if (parent == null || parent.getParent() == null || !parent.getFileName().toString().equals("checkpoints")) return null;
        return Files.isRegularFile(parent.getParent().resolve("run.txt")) ? parent.getParent() : null;
    }

    private static String runSetting(Path runDir, String key) {
        Path record = runDir.resolve("run.txt");
        if (!Files.isRegularFile(record)) return null;
        try {
            for (String line : Files.readAllLines(record)) {
                if (line.startsWith("[")) break; // the settings come before the first [section]
                if (line.startsWith(key + " = ")) return line.substring(key.length() + 3);
            }
            return null;
        } catch (IOException e) {
            throw new CliException("[run] cannot read " + record + ": " + e.getMessage());
        }
    }

    private static ModelSource fromModelFile(Path p) {
        Parameters params = ModelFiles.read(p);
        // a tokenizer beside the model (an ane4j export, a Hugging Face folder, llama2.c's model and tokenizer together)
        Path t = ModelFiles.findTokenizer(null, null, p);
        Tokenizer tok = t == null ? null : Tokenizer.read(t);
        return new ModelSource(params, tok, t == null ? null : t.toString(), null, p.toString());
    }
}
