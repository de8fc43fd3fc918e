package ane4j.notebook;

/**
 * A busy loop outside cell code (loaded from the class path, so it has no stop checks and ignores interrupts): what a
 * cell stuck in library code looks like to the kernel. Tests call it from cells and end it with {@link #release}.
 */
public final class LibraryLoop {
    private static volatile boolean released;

    private LibraryLoop() {}

    public static long spin() {
        long n = 0;
        while (!released) n++;
        return n;
    }

    public static void release() {
        released = true;
    }
}
