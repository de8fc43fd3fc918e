package ane4j.cli;

import ane4j.train.LoraAdapters;
import ane4j.train.PeftAdapter;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The LoRA adapter that goes with a model source: {@code --adapter DIR} (a PEFT folder, ours or PEFT's own), else a
 * LoRA run's {@code RUN/adapter} (written beside every checkpoint), else none.
 */
final class AdapterSource {
    private AdapterSource() {}

    /** The adapter, or null when neither --adapter nor a LoRA run folder gives one. */
    static LoraAdapters find(ModelSource src, String adapterDir) {
        Path dir = adapterDir != null ? Path.of(adapterDir) : src.runDir() != null ? src.runDir().resolve("adapter") : null;
        if (dir == null || adapterDir == null && !Files.isRegularFile(dir.resolve(PeftAdapter.CONFIG))) return null;
        try {
            return PeftAdapter.read(dir, src.params().config());
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage());
        }
    }

    /** The source with the adapter's W + s·B·A in place of each adapted W (in memory; the files stay as they are). */
    static ModelSource fused(ModelSource src, LoraAdapters ad, String adapterFrom) {
        return new ModelSource(ad.fused(src.params()), src.tokenizer(), src.tokenizerFrom(), src.runDir(),
                src.description() + " + LoRA adapter " + adapterFrom + " (rank " + ad.rank() + ", " + String.join(",", ad.targets()) + ")");
    }
}
