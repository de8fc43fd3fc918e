package ane4j.train;

import ane4j.run.MetricsLog;
import ane4j.run.StepMetrics;
import ane4j.backend.TensorBuffer;
import ane4j.model.ParameterView;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.zip.CRC32;

/**
 * Trains the parameters of a {@link GraphStep} (any differentiated MIL graph) with the run layer's pieces: AdamW
 * ({@link AdamW}, decay on matrices only), warm-up + cosine ({@link LrSchedule}), global-norm clipping, a static loss
 * scale (the graph's loss is multiplied by it; gradients are unscaled before clipping, a step with a non-finite
 * gradient is skipped), validation every {@code evalEvery} steps, {@code metrics.jsonl} lines as the preset runs write
 * ({@link StepMetrics}), and checkpoints every {@code checkpointEvery} steps from which a new trainer on the same
 * run folder resumes bit-identically (the batches are a function of the step number).
 */
public final class GraphTrainer {
    /** The run's settings; {@code runDir} null: no metrics file and no checkpoints. */
    public record Options(int steps, float lr, float minLr, int warmup, float weightDecay, float clip, float lossScale,
                          int evalEvery, int checkpointEvery, Path runDir) {
        public Options {
            if (steps < 1) throw new IllegalArgumentException("[fit] steps " + steps + " must be at least 1");
            if (!(lr > 0) || !(minLr >= 0) || minLr > lr) throw new IllegalArgumentException("[fit] lr " + lr + " must be > 0 and minLr " + minLr + " in [0, lr]");
            if (warmup < 0 || !(clip > 0) || !(lossScale > 0) || weightDecay < 0)
                throw new IllegalArgumentException("[fit] warmup ≥ 0, clip > 0, lossScale > 0 and weightDecay ≥ 0 are required (warmup " + warmup + ", clip " + clip
                        + ", lossScale " + lossScale + ", weightDecay " + weightDecay + ")");
        }

        /** 200 steps, AdamW lr 1e-2 (warm-up 10, cosine to 1e-3), weight decay 0, clip 1, no loss scale, validation every 50. */
        public static Options defaults() { return new Options(200, 1e-2f, 1e-3f, 10, 0f, 1f, 1f, 50, 0, null); }

        public Options withSteps(int n) { return new Options(n, lr, minLr, warmup, weightDecay, clip, lossScale, evalEvery, checkpointEvery, runDir); }
        public Options withLr(float max, float min) { return new Options(steps, max, min, warmup, weightDecay, clip, lossScale, evalEvery, checkpointEvery, runDir); }
        public Options withWarmup(int n) { return new Options(steps, lr, minLr, n, weightDecay, clip, lossScale, evalEvery, checkpointEvery, runDir); }
        public Options withWeightDecay(float wd) { return new Options(steps, lr, minLr, warmup, wd, clip, lossScale, evalEvery, checkpointEvery, runDir); }
        public Options withClip(float c) { return new Options(steps, lr, minLr, warmup, weightDecay, c, lossScale, evalEvery, checkpointEvery, runDir); }
        public Options withLossScale(float s) { return new Options(steps, lr, minLr, warmup, weightDecay, clip, s, evalEvery, checkpointEvery, runDir); }
        public Options withEvalEvery(int n) { return new Options(steps, lr, minLr, warmup, weightDecay, clip, lossScale, n, checkpointEvery, runDir); }
        public Options withCheckpoints(Path dir, int every) { return new Options(steps, lr, minLr, warmup, weightDecay, clip, lossScale, evalEvery, every, dir); }
    }

    /** The training batch of step {@code step} (a function of the step, so a resumed run sees the same data). */
    @FunctionalInterface
    public interface Batches {
        Map<String, TensorBuffer> batch(long step);
    }

    private static final int MAGIC = 0x41344747, VERSION = 1;   // "A4GG"

    private final GraphStep step;
    private final float[] params, grads, m, v;
    private final Options o;
    private final List<StepMetrics> history = new ArrayList<>();
    private long next;

    /** Trains {@code params} (the step's flat layout) in place; resumes from the newest checkpoint of the run folder if any. */
    public GraphTrainer(GraphStep step, float[] params, Options o) {
        if (params.length != step.size()) throw new IllegalArgumentException("[fit] " + params.length + " parameters given, the graph trains " + step.size());
        this.step = step;
        this.params = params;
        this.o = o;
        this.grads = new float[params.length];
        this.m = new float[params.length];
        this.v = new float[params.length];
        if (o.runDir() != null) {
            Path ck = newest();
            if (ck != null) load(ck);
            if (next > 0) for (StepMetrics s : MetricsLog.read(o.runDir().resolve("metrics.jsonl"), o.steps(), w -> {})) if (s.step() < next) history.add(s);
        }
    }

    /** The step the next {@link #fit} call starts at (after a resume: the checkpoint's). */
    public long nextStep() { return next; }

    public List<StepMetrics> history() { return List.copyOf(history); }

    /**
     * Runs the remaining steps. {@code validation} (null: none) is evaluated every {@code evalEvery} steps and after the
     * last; {@code listener} sees each step's figures (the notebook's live plot).
     */
    public List<StepMetrics> fit(Batches train, Map<String, TensorBuffer> validation, Consumer<StepMetrics> listener) {
        LrSchedule lr = new LrSchedule(o.lr(), o.minLr(), o.warmup(), o.steps());
        AdamW adamw = new AdamW(0.9f, 0.999f, 1e-8f, o.weightDecay());
        MetricsLog log = null;
        if (o.runDir() != null) {
            try {
                Files.createDirectories(o.runDir().resolve("checkpoints"));
            } catch (IOException e) {
                throw new UncheckedIOException("[fit] cannot create " + o.runDir() + ": " + e.getMessage(), e);
            }
            log = new MetricsLog(o.runDir().resolve("metrics.jsonl"));
        }
        for (; next < o.steps(); next++) {
            long t0 = System.nanoTime();
            float loss = step.forwardBackward(params, grads, train.batch(next)) / o.lossScale();
            // unscale, clip by the global norm, AdamW; a non-finite gradient skips the update (and is forgotten)
            float k = 1f / o.lossScale();
            float norm = (float) Math.sqrt(AdamW.sumOfSquares(grads, k));
            float rate = lr.at(next);
            boolean skipped = !Float.isFinite(norm);
            if (skipped) java.util.Arrays.fill(grads, 0f);
            else adamw.step(step.views(), params, grads, m, v, adamStep() + 1, rate, k * AdamW.clipFactor(norm, o.clip()), true);
            if (!skipped) adamSteps++;
            double ms = (System.nanoTime() - t0) / 1e6;
            StepMetrics sm = new StepMetrics(next, o.steps(), loss, rate, o.lossScale(), norm, !skipped, skipped, ms, 0, Map.of());
            boolean last = next == o.steps() - 1;
            if (validation != null && (last || (o.evalEvery() > 0 && (next + 1) % o.evalEvery() == 0))) {
                long v0 = System.nanoTime();
                float val = step.loss(params, validation) / o.lossScale();
                sm = sm.withValidation(val, (System.nanoTime() - v0) / 1e6);
            }
            history.add(sm);
            if (log != null) log.append(sm);
            if (listener != null) listener.accept(sm);
            if (o.runDir() != null && (last || (o.checkpointEvery() > 0 && (next + 1) % o.checkpointEvery() == 0))) save(next + 1);
        }
        return history();
    }

    private int adamSteps;

    private int adamStep() { return adamSteps; }

    // ---------------------------------------------------------------------------------------------------------------
    // checkpoints: magic, version, next step, AdamW step, n, params, m, v (float32 LE), CRC32 of everything before it;
    // written to a temporary file and moved into place, the two newest kept

    private Path dir() { return o.runDir().resolve("checkpoints"); }

    private Path newest() {
        try (var s = Files.list(dir())) {
            return s.filter(p -> p.getFileName().toString().matches("graph-\\d{8}\\.ckpt")).sorted().reduce((a, b) -> b).orElse(null);
        } catch (IOException e) {
            return null;
        }
    }

    private void save(long nextStep) {
        Path file = dir().resolve(String.format("graph-%08d.ckpt", nextStep)), tmp = dir().resolve(file.getFileName() + ".tmp");
        try {
            ByteBuffer b = ByteBuffer.allocate(4 * 3 + 8 + 4 + 12 * params.length).order(ByteOrder.LITTLE_ENDIAN);
            b.putInt(MAGIC).putInt(VERSION).putLong(nextStep).putInt(adamSteps).putInt(params.length);
            for (float[] a : new float[][] {params, m, v}) for (float f : a) b.putFloat(f);
            CRC32 crc = new CRC32();
            crc.update(b.array(), 0, b.position());
            try (DataOutputStream out = new DataOutputStream(Files.newOutputStream(tmp))) {
                out.write(b.array(), 0, b.position());
                out.writeLong(crc.getValue());
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            try (var s = Files.list(dir())) {
                List<Path> all = s.filter(p -> p.getFileName().toString().matches("graph-\\d{8}\\.ckpt")).sorted().toList();
                for (int i = 0; i < all.size() - 2; i++) Files.deleteIfExists(all.get(i));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("[fit] cannot write checkpoint " + file + ": " + e.getMessage(), e);
        }
    }

    private void load(Path file) {
        try (DataInputStream in = new DataInputStream(Files.newInputStream(file))) {
            byte[] all = in.readAllBytes();
            if (all.length < 32) throw new IllegalStateException("[fit] " + file + " is truncated; delete it to start from the previous checkpoint");
            CRC32 crc = new CRC32();
            crc.update(all, 0, all.length - 8);
            ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
            long stored = ByteBuffer.wrap(all, all.length - 8, 8).getLong();
            if (b.getInt() != MAGIC || b.getInt() != VERSION || stored != crc.getValue())
                throw new IllegalStateException("[fit] " + file + " is not an intact graph checkpoint (magic, version or checksum); delete it to start from the previous one");
            long step = b.getLong();
            int adam = b.getInt(), n = b.getInt();
            if (n != params.length) throw new IllegalStateException("[fit] " + file + " holds " + n + " parameters but the graph trains " + params.length + "; use a new run folder");
            for (float[] a : new float[][] {params, m, v}) for (int i = 0; i < n; i++) a[i] = b.getFloat();
            next = step;
            adamSteps = adam;
        } catch (IOException e) {
            throw new UncheckedIOException("[fit] cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    /** The parameter views of the trained graph (for reading results by name). */
    public List<ParameterView> views() { return step.views(); }
}
