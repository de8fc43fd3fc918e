package ane4j.session;

import ane4j.run.RunSpec;
import ane4j.train.Checkpoint;
import ane4j.run.RunFolder;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;

/**
 * The one rule for run folders, for the CLI, {@code %%train} and {@code Ane.train} alike: the {@code runDir} given;
 * else, with {@code resume} alone, the run {@code runs/latest} points at; else a new {@code runs/<model>-<time>}
 * (with {@code -2}, {@code -3} … when that second already has one), which {@code runs/latest} points at once its first
 * step is done. {@code runs} is relative to the working directory (a notebook's is the notebook's folder), or the
 * folder the system property {@value #PROPERTY} names.
 */
public final class RunDirs {
    private RunDirs() {}

    public static final String PROPERTY = "ane4j.runs";

    /** Where new run folders go. */
    public static Path runsFolder() {
        return Path.of(System.getProperty(PROPERTY, "runs"));
    }

    /** A run described without a run folder gets one by the rule; {@link Placed#isNew()} says whether it was created now. */
    public record Placed(RunSpec spec, boolean isNew) {
        public Path runDir() { return spec.train().runDir(); }
    }

    public static Placed place(RunSpec spec) {
        if (spec.train().runDir() != null) return new Placed(spec, false);
        Path runs = runsFolder(), latest = runs.resolve("latest");
        if (spec.train().resume()) {
            if (!Files.exists(latest))
                throw new IllegalArgumentException("[run] --resume without --run-dir (resume = true without runDir) continues " + latest + ", but there is none; give --run-dir DIR");
            Path dir;
            try {
                dir = latest.toRealPath();
            } catch (IOException e) {
                throw new IllegalArgumentException("[run] cannot resolve " + latest + ": " + RunFolder.reason(e), e);
            }
            if (Checkpoint.list(dir.resolve("checkpoints")).isEmpty())
                throw new IllegalArgumentException("[run] --resume: " + latest + " is " + dir + ", which has no checkpoint to resume from; start a new run without "
                        + "--resume, or give --run-dir DIR of a run that wrote checkpoints");
            return new Placed(spec.with("runDir", dir.toString()), false);
        }
        String model = Path.of(spec.modelName()).getFileName().toString().replaceAll("[^A-Za-z0-9._-]", "_");
        String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
        for (int n = 1; ; n++) {
            Path dir = runs.resolve(model + "-" + stamp + (n == 1 ? "" : "-" + n));
            try {
                Files.createDirectories(runs);
                Files.createDirectory(dir);
                return new Placed(spec.with("runDir", dir.toString()), true);
            } catch (FileAlreadyExistsException taken) {
                // a run started in the same second: the next suffix
            } catch (IOException e) {
                throw new IllegalArgumentException("[run] cannot create " + dir + ": " + RunFolder.reason(e) + "; give runDir (--run-dir DIR) somewhere writable", e);
            }
        }
    }

    /** runs/latest → {@code dir}, once its run has really started (its first step); a failed start leaves it alone. */
    public static void pointLatestAt(Path dir) {
        Path latest = runsFolder().resolve("latest");
        try {
            if (!dir.toAbsolutePath().getParent().equals(runsFolder().toAbsolutePath())) return;   // only runs/ folders are "latest"
            Files.deleteIfExists(latest);
            Files.createSymbolicLink(latest, dir.getFileName());
        } catch (IOException | UnsupportedOperationException e) {
            // symlinks are a convenience; the run directory is printed anyway
        }
    }

    /** A new run folder that never reached step 0 holds nothing the user had: it goes (runs/latest still names the previous run). */
    public static void removeIfUnused(Placed p) {
        if (!p.isNew()) return;
        Path dir = p.runDir();
        try {
            try (var files = Files.list(dir)) {   // the worker's run.lock alone is not something the user had
                if (files.allMatch(f -> f.getFileName().toString().equals(RunFolder.LOCK_FILE)))
                    Files.deleteIfExists(dir.resolve(RunFolder.LOCK_FILE));
            }
            Files.deleteIfExists(dir);
        } catch (IOException notEmpty) {
            // it holds something: kept
        }
    }
}
