package ane4j.cli;

import ane4j.model.HfExport;
import ane4j.model.Llama2Bin;
import ane4j.model.Parameters;
import ane4j.model.Safetensors;
import ane4j.model.Tokenizer;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ane4j export}: a trained model for other tools — a Hugging Face folder ({@code model.safetensors},
 * {@code config.json}, the run's {@code tokenizer.bin}) or a llama2.c {@code .bin} (v0, float32) that {@code run.c} reads.
 */
@Command(name = "export", sortOptions = false, sortSynopsis = false, description = "A trained model for other tools: a Hugging Face folder or a llama2.c .bin.")
final class ExportCommand implements Callable<Integer> {
    @Mixin Cli.HelpOption help;
    @Option(names = "--run", paramLabel = "DIR", description = "the newest checkpoint of a run folder")
    String run;
    @Option(names = "--checkpoint", paramLabel = "FILE", description = "an ane4j checkpoint")
    String checkpoint;
    @Option(names = "--model", paramLabel = "FILE|DIR", description = "a llama2.c .bin or a safetensors file or folder")
    String model;
    @Option(names = "--format", paramLabel = "safetensors|llama2c", description = {
            "--format safetensors: a Hugging Face folder: model.safetensors, config.json (LlamaForCausalLM, or Qwen3ForCausalLM with QK-norm), tokenizer.bin; default --out RUN/export/hf",
            "--format llama2c: a llama2.c v0 .bin (float32) and tokenizer.bin beside it; default --out RUN/export/model.bin"})
    String format;
    @Option(names = "--dtype", paramLabel = "f32|f16|bf16", defaultValue = "f32", description = "safetensors only: f32 (default), f16 or bf16 (round to nearest even)")
    String dtypeName;
    @Option(names = "--out", paramLabel = "DIR|FILE", description = "where to write (default: beside the source, see --format)")
    String outPath;
    @Option(names = "--tokenizer", paramLabel = "FILE", description = "a llama2.c tokenizer.bin to include (default: the model's)")
    String tokenizer;
    @Option(names = "--adapter", paramLabel = "DIR", description = "a LoRA adapter in the PEFT layout for --merge (default: a LoRA run's own)")
    String adapter;
    @Option(names = "--merge", description = "write the fused model: W + (alpha/r)·B·A of the LoRA adapter in place of each adapted W")
    boolean merge;

    private final PrintStream out;

    ExportCommand(PrintStream out) { this.out = out; }

    @Override
    public Integer call() {
        if (format == null || !(format.equals("safetensors") || format.equals("llama2c")))
            throw new CliException((format == null ? "no --format" : "--format " + format + " is not known") + "; use --format safetensors or --format llama2c");
        Safetensors.DType dtype = dtype(dtypeName);
        if (format.equals("llama2c") && dtype != Safetensors.DType.F32)
            throw new CliException("llama2.c v0 files are float32; drop --dtype " + dtypeName + " or export --format safetensors");
        ModelSource src = ModelSource.open(run, checkpoint, model, tokenizer, "export");
        var lora = merge ? AdapterSource.find(src, adapter) : null;
        if (merge && lora == null)
            throw new CliException("--merge needs a LoRA adapter: give --adapter DIR (adapter_model.safetensors, adapter_config.json) or the --run of a LoRA training");
        if (merge) src = AdapterSource.fused(src, lora, AdapterSource.from(src, adapter));
        else if (adapter != null || src.checkpointAdapters() != null) out.println("note: exporting the base model without the LoRA adapter" + (adapter != null ? " " + adapter
                : src.runDir() != null ? " of this run (" + src.runDir().resolve("adapter") + ")" : "s this checkpoint holds") + "; add --merge for the fused model");
        Path dest = outPath != null ? Path.of(outPath) : defaultOut(src);
        refuseOverwritingTheSource(dest);
        if (format.equals("safetensors")) safetensors(src.params(), src.tokenizer(), dest, dtype, out);
        else llama2c(src.params(), src.tokenizer(), dest, out);
        if (src.tokenizer() == null)
            out.println("note: no tokenizer known for " + src.description() + "; none written (give --tokenizer FILE to include one)");
        return 0;
    }

    /**
     * The end of {@code train}: both formats into {@code RUN/export/} ({@code hf/} and {@code model.bin}, the latter when
     * llama2.c can hold the model), one line each. A failed export is a note, not a failed run: the checkpoint is written,
     * and the note names the command that retries it.
     */
    static void exportRun(Path runDir, Parameters params, Tokenizer tokenizer, PrintStream out) {
        Path dir = runDir.resolve("export");
        var c = params.config();
        if (tokenizer != null && (tokenizer.isTokenizerJson() ? tokenizer.vocabSize() > c.vocabSize() : tokenizer.vocabSize() != c.vocabSize()))
            tokenizer = null; // not the model's: export none
        try {
            safetensors(params, tokenizer, dir.resolve("hf"), Safetensors.DType.F32, out);
            if (!c.qkNorm() && c.headDim() * c.nHeads() == c.dim() && c.residualScale() == 1f) llama2c(params, tokenizer, dir.resolve("model.bin"), out);
        } catch (RuntimeException e) {
            out.println("note: export skipped (" + e.getMessage() + "); the checkpoint is intact: ane4j export --run " + runDir + " --format safetensors");
        }
    }

    static Path safetensors(Parameters params, Tokenizer tokenizer, Path dir, Safetensors.DType dtype, PrintStream out) {
        if (Files.isRegularFile(dir)) throw new CliException("--out " + dir + " is a file; a safetensors export is a folder (model.safetensors, config.json)");
        Path st = HfExport.write(dir, params, dtype);
        boolean tok = writeTokenizer(tokenizer, dir.resolve(tokenizer == null ? "tokenizer.bin" : tokenizer.fileName()), out);
        // the chat template goes along, so transformers, mlx-lm and ane4j render chats alike from the export
        boolean chat = tok && ane4j.model.TokenizerConfig.write(dir, tokenizer.chatTemplate());
        out.printf(Locale.ROOT, "exported %s (%,d parameters, %s) → %s: model.safetensors (%s), config.json (%s)%s%s%n", params.config().name(),
                params.data().length, dtype, dir, mb(st), params.config().qkNorm() ? "Qwen3ForCausalLM" : "LlamaForCausalLM", tok ? ", " + tokenizer.fileName() : "",
                chat ? ", tokenizer_config.json (chat template)" : "");
        return st;
    }

    static Path llama2c(Parameters params, Tokenizer tokenizer, Path dest, PrintStream out) {
        Path file = Files.isDirectory(dest) ? dest.resolve("model.bin") : dest;
        try {
            if (file.toAbsolutePath().getParent() != null) Files.createDirectories(file.toAbsolutePath().getParent());
        } catch (IOException e) {
            throw new CliException("cannot create the folder of " + file + ": " + e.getMessage());
        }
        Llama2Bin.write(file, params);
        if (tokenizer != null && tokenizer.isTokenizerJson()) {
            out.println("note: the model's tokenizer is a tokenizer.json, which llama2.c's run.c cannot read; none written beside " + file.getFileName());
            tokenizer = null;
        }
        boolean tok = writeTokenizer(tokenizer, file.resolveSibling("tokenizer.bin"), out);
        out.printf(Locale.ROOT, "exported %s (%,d parameters) → %s (llama2.c v0, float32, %s)%s%n", params.config().name(), params.data().length,
                file, mb(file), tok ? " and tokenizer.bin beside it" : "");
        return file;
    }

    // never replaces a different tokenizer.bin (llama2.c keeps its own at the repo root)
    private static boolean writeTokenizer(Tokenizer tokenizer, Path file, PrintStream out) {
        if (tokenizer == null) return false;
        if (Files.exists(file)) {
            Tokenizer there;
            try {
                there = Tokenizer.read(file);
            } catch (RuntimeException e) {
                there = null;
            }
            if (there != null && sameTokenizer(there, tokenizer)) return true;
            out.println("note: " + file + " exists and is another tokenizer; left it as it is (give --out a folder of its own)");
            return false;
        }
        tokenizer.write(file);
        return true;
    }

    private static boolean sameTokenizer(Tokenizer a, Tokenizer b) {
        if (a.vocabSize() != b.vocabSize()) return false;
        for (int i = 0; i < a.vocabSize(); i++)
            if (!java.util.Arrays.equals(a.pieceBytes(i), b.pieceBytes(i)) || Float.compare(a.score(i), b.score(i)) != 0) return false;
        return true;
    }

    private Path defaultOut(ModelSource src) {
        boolean st = format.equals("safetensors");
        if (src.runDir() != null && run != null) return src.runDir().resolve("export").resolve(st ? "hf" : "model.bin");
        Path from = Path.of(checkpoint != null ? checkpoint : model).toAbsolutePath();
        String stem = from.getFileName().toString().replaceFirst("\\.[^.]*$", "");
        Path parent = from.getParent();
        Path d = parent.resolve(st ? stem + "-hf" : stem + ".bin");
        return d.equals(from) || Files.isDirectory(from) && !st ? parent.resolve(stem + "-export" + (st ? "" : ".bin")) : d;
    }

    // an export into the model's own folder or file would replace what the user had (their config.json, their .bin)
    private void refuseOverwritingTheSource(Path dest) {
        String from = model != null ? model : checkpoint;
        if (from == null) return;
        Path src = Path.of(from).toAbsolutePath().normalize(), d = dest.toAbsolutePath().normalize();
        Path srcFolder = Files.isDirectory(src) ? src : src.getParent();
        boolean same = format.equals("safetensors") ? d.equals(srcFolder) : (Files.isDirectory(d) ? d.resolve("model.bin") : d).equals(src);
        if (same) throw new CliException("--out " + dest + " is where " + from + " is read from; export to another " + (format.equals("safetensors") ? "folder" : "file"));
    }

    static Safetensors.DType dtype(String s) {
        return switch (s.toLowerCase(Locale.ROOT)) {
            case "f32", "fp32", "float32" -> Safetensors.DType.F32;
            case "f16", "fp16", "float16" -> Safetensors.DType.F16;
            case "bf16", "bfloat16" -> Safetensors.DType.BF16;
            default -> throw new CliException("--dtype " + s + " is not known; use f32, f16 or bf16");
        };
    }

    private static String mb(Path f) {
        try {
            return String.format(Locale.ROOT, "%.1f MB", Files.size(f) / 1e6);
        } catch (IOException e) {
            return "?";
        }
    }
}
