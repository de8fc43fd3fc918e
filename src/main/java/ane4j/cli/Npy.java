package ane4j.cli;

import ane4j.backend.TensorBuffer;
import ane4j.mil.TensorType;
import java.nio.file.Path;

/** The command line's face of {@link ane4j.train.Npy} (numpy {@code .npy} files): a bad file is a {@link CliException}, one line. */
public final class Npy {
    private Npy() {}

    /** Reads {@code file} into a buffer of {@code expected}'s type (dtype and shape must match). */
    public static TensorBuffer read(Path file, TensorType expected, String name) {
        try {
            return ane4j.train.Npy.read(file, expected, name);
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage(), e);
        }
    }

    /** Writes a buffer as a version 1.0 .npy file. */
    public static void write(Path file, TensorBuffer buffer) {
        try {
            ane4j.train.Npy.write(file, buffer);
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage(), e);
        }
    }
}
