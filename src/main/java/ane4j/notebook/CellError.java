package ane4j.notebook;

import java.util.List;
import org.dflib.jjava.jupyter.kernel.magic.UndefinedMagicException;

/**
 * A cell failed. Carries the error name and the short, readable traceback the notebook shows
 * (compile errors with the offending line, exceptions with the user's frames first).
 */
public final class CellError extends RuntimeException {
    private final String ename;
    private final List<String> traceback;

    CellError(String ename, String evalue, List<String> traceback) {
        super(evalue, null, false, false);
        this.ename = ename;
        this.traceback = List.copyOf(traceback);
    }

    /** What the notebook shows for {@code e}: a magic's failure as its one line, anything else by {@link ErrorFormatter}. */
    static CellError of(Throwable e) {
        if (e instanceof CellError c) return c;
        if (e instanceof MagicException m) return oneLine(m.getMessage());
        // jjava's own name for a magic its registry lacks (the dispatch turns it into a MagicException on its route)
        if (e instanceof UndefinedMagicException u)
            return oneLine("unknown magic " + (u.isLineMagic() ? "%" : "%%") + u.getMagicName() + "; %lsmagic lists the magics");
        return ErrorFormatter.otherError(e);
    }

    private static CellError oneLine(String msg) {
        return new CellError("MagicError", msg, List.of(ErrorFormatter.RED + msg + ErrorFormatter.RESET));
    }

    public String ename() {
        return ename;
    }

    public String evalue() {
        return getMessage();
    }

    public List<String> traceback() {
        return traceback;
    }
}
