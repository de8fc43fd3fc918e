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

    /**
     * The adapter, or null when neither --adapter nor a LoRA run gives one. A LoRA checkpoint's own adapters (as of its
     * step, not the newest checkpoint's) take their rank, alpha and targets from the run's adapter_config.json.
     */
    static LoraAdapters find(ModelSource src, String adapterDir) {
        Path dir = adapterDir != null ? Path.of(adapterDir) : src.runDir() != null ? src.runDir().resolve("adapter") : null;
        boolean folder = dir != null && Files.isRegularFile(dir.resolve(PeftAdapter.CONFIG));
        if (adapterDir == null && !folder) {
            if (src.checkpointAdapters() != null)
                throw new CliException("[lora] " + src.description() + " holds LoRA adapters, but there is no adapter_config.json beside it (in RUN/adapter) to say their rank and targets; give --adapter DIR (a PEFT folder of the run)");
            return null;
        }
        try {
            LoraAdapters ad = PeftAdapter.read(dir, src.params().config());
            float[] own = src.checkpointAdapters();
            if (adapterDir == null && own != null) {
                if (own.length != ad.size())
                    throw new CliException("[lora] " + src.description() + " holds " + own.length + " adapter floats, but " + dir + " (rank " + ad.rank() + ", " + String.join(",", ad.targets()) + ") needs " + ad.size() + "; give --adapter DIR");
                System.arraycopy(own, 0, ad.data(), 0, own.length);
            }
            return ad;
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage());
        }
    }

    /** The source with the adapter's W + s·B·A in place of each adapted W (in memory; the files stay as they are). */
    static ModelSource fused(ModelSource src, LoraAdapters ad, String adapterFrom) {
        return new ModelSource(ad.fused(src.params()), src.tokenizer(), src.tokenizerFrom(), src.runDir(), describe(src, ad, adapterFrom), null);
    }

    /** Where the adapter of {@link #find} came from: --adapter DIR, else the run's RUN/adapter. */
    static String from(ModelSource src, String adapterDir) {
        return adapterDir != null ? adapterDir : src.runDir().resolve("adapter").toString();
    }

    /** "SOURCE + LoRA adapter DIR (rank r, targets)". */
    static String describe(ModelSource src, LoraAdapters ad, String adapterFrom) {
        return src.description() + " + LoRA adapter " + adapterFrom + " (rank " + ad.rank() + ", " + String.join(",", ad.targets()) + ")";
    }
}
