package ane4j.mil;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * MIL text and BLOBFILE weights must be regular files, checked before they are opened: a named pipe as
 * weights/weight.bin blocked {@code mil check} in open (the 2026-12-05 reliability report, H-k). Here because mil depends
 * on no other ane4j package (docs/DESIGN.md §2); the model package's InputFile uses it for every other input file.
 */
public final class RegularFiles {
    private RegularFiles() {}

    /** Null when {@code file} is a regular file (links followed) or does not exist, else the problem in words. */
    public static String notRegular(Path file) {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(file, BasicFileAttributes.class);
        } catch (IOException e) {
            return null;
        }
        if (a.isRegularFile()) return null;
        if (a.isDirectory()) return file + " is a folder, not a file";
        String kind = "a special file";
        try {
            kind = switch ((Integer) Files.getAttribute(file, "unix:mode") & 0170000) {
                case 0010000 -> "a named pipe (FIFO)";
                case 0140000 -> "a socket";
                case 0020000 -> "a character device";
                case 0060000 -> "a block device";
                default -> kind;
            };
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
            // no unix attribute view: the generic word
        }
        return file + " is " + kind + ", not a regular file; reading it could block forever: give a regular file (copy the contents into one first)";
    }
}
