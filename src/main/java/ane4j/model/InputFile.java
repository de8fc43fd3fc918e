package ane4j.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Input files must be regular files, checked before they are opened: opening a named pipe (FIFO) for reading blocks until
 * a writer appears, in native code where neither Ctrl-C nor SIGTERM reaches it (the 2026-12-05 reliability report, F56:
 * {@code --data fifo} hung 605 s until SIGKILL), and a character device such as /dev/zero never ends. Links are
 * followed (the Hugging Face cache is symlinks); what they point to must be a regular file.
 */
public final class InputFile {
    private InputFile() {}

    /** Null when {@code file} is a regular file or does not exist (the caller's own "no such file" applies), else the problem. */
    public static String notRegular(Path file) {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(file, BasicFileAttributes.class);
        } catch (IOException e) {
            return null;
        }
        if (a.isRegularFile()) return null;
        if (a.isDirectory()) return file + " is a folder, not a file";
        return file + " is " + kind(file) + ", not a regular file; reading it could block forever: give a regular file"
                + " (copy the contents into one first)";
    }

    /** "a named pipe (FIFO)", "a socket", "a character device", "a block device" or "not a regular file". */
    static String kind(Path file) {
        try {
            int mode = (Integer) Files.getAttribute(file, "unix:mode");
            return switch (mode & 0170000) {
                case 0010000 -> "a named pipe (FIFO)";
                case 0140000 -> "a socket";
                case 0020000 -> "a character device";
                case 0060000 -> "a block device";
                default -> "a special file";
            };
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
            return "a special file";
        }
    }

    /** Throws {@code [tag] problem} as a {@link ModelFormatException} when {@code file} is not a regular file. */
    public static void requireRegular(Path file, String tag) {
        String p = notRegular(file);
        if (p != null) throw new ModelFormatException("[" + tag + "] " + p);
    }
}
