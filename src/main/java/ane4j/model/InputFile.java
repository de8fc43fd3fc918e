package ane4j.model;

import java.nio.file.Path;

/**
 * Input files must be regular files, checked before they are opened: opening a named pipe (FIFO) for reading blocks until
 * a writer appears, in native code where neither Ctrl-C nor SIGTERM reaches it (the 2026-12-05 reliability report, F56:
 * {@code --data fifo} hung 605 s until SIGKILL), and a character device such as /dev/zero never ends. Links are
 * followed (the Hugging Face cache is symlinks); what they point to must be a regular file.
 */
public final class InputFile {
    private InputFile() {}

    /** Null when {@code file} is a regular file or does not exist (the caller's own "no such file" applies), else the problem. */
    public static String notRegular(Path file) { return ane4j.mil.RegularFiles.notRegular(file); }

    /** Throws {@code [tag] problem} as a {@link ModelFormatException} when {@code file} is not a regular file. */
    public static void requireRegular(Path file, String tag) {
        String p = notRegular(file);
        if (p != null) throw new ModelFormatException("[" + tag + "] " + p);
    }
}
