package ane4j.model;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The one rule for where a model and its tokenizer come from, shared by {@code train --init}, {@code generate} and
 * {@code export}: a llama2.c {@code .bin} (v0 or v1), a safetensors file, a sharded checkpoint's
 * {@code model.safetensors.index.json}, a GGUF file, or a Hugging Face folder holding either; the tokenizer named by
 * {@code --tokenizer}, else a {@code tokenizer.json} or {@code tokenizer.bin} next to the data, else next to the model
 * (a GGUF model's own tokenizer).
 */
public final class ModelFiles {
    private ModelFiles() {}

    /** Reads a model file or Hugging Face folder (config from its config.json). */
    public static Parameters read(Path path) {
        if (Files.isDirectory(path)) {
            Path single = path.resolve("model.safetensors"), index = path.resolve(Safetensors.INDEX_FILE);
            if (Files.isRegularFile(single)) return Safetensors.read(single);
            if (Files.isRegularFile(index)) return Safetensors.readSharded(index);
            throw new ModelFormatException("[model] " + path + " is a folder without model.safetensors or " + Safetensors.INDEX_FILE
                    + "; give a Hugging Face model folder, a .safetensors file or a llama2.c .bin");
        }
        String name = path.getFileName().toString().toLowerCase(Locale.ROOT);
        if (name.endsWith(".index.json")) return Safetensors.readSharded(path);
        if (name.endsWith(".safetensors")) return Safetensors.read(path);
        if (name.endsWith(".gguf") || Gguf.isGguf(path)) return Gguf.read(path);
        return Llama2Bin.read(path);
    }

    /**
     * The tokenizer file to use: {@code given} (which must exist), else tokenizer.json or tokenizer.bin beside the
     * data file, else beside the model file (or inside the model folder); null when there is none.
     */
    public static Path findTokenizer(Path given, Path data, Path model) {
        if (given != null) {
            if (Files.isDirectory(given)) {
                Path inside = besides(given.resolve("x"));
                if (inside == null) throw new ModelFormatException("[tokenizer] " + given + " is a folder without tokenizer.json or tokenizer.bin; give the file");
                return inside;
            }
            if (!Files.isRegularFile(given))
                throw new ModelFormatException("[tokenizer] " + given + ": no such file (give a Hugging Face tokenizer.json or a llama2.c tokenizer.bin)");
            return given;
        }
        if (data != null) {
            Path t = besides(data);
            if (t != null) return t;
        }
        if (model != null) {
            // a GGUF file carries its own tokenizer (tokenizer.ggml.*), usually
            if (model.getFileName() != null && model.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".gguf") && Files.isRegularFile(model)
                    && Gguf.readHeader(model).metadata().containsKey("tokenizer.ggml.model")) return model;
            Path t = Files.isDirectory(model) ? besides(model.resolve("x")) : besides(model);
            if (t != null) return t;
        }
        return null;
    }

    private static Path besides(Path file) {
        for (String n : new String[]{"tokenizer.json", "tokenizer.bin"}) {
            Path t = file.toAbsolutePath().resolveSibling(n);
            if (Files.isRegularFile(t)) return file.resolveSibling(n);
        }
        return null;
    }

    /**
     * Reads a tokenizer for a model of {@code vocabSize}: a tokenizer.json may have fewer tokens than the model (Qwen3's
     * 151669 in a vocabulary padded to 151936), neither may have more.
     */
    public static Tokenizer readTokenizer(Path file, int vocabSize) {
        Tokenizer t = Tokenizer.read(file);
        if (t.vocabSize() > vocabSize)
            throw new ModelFormatException("[tokenizer] " + file + " has " + t.vocabSize() + " tokens but the model's vocabSize is " + vocabSize
                    + "; give the model's own tokenizer with --tokenizer FILE");
        return t;
    }
}
