package ane4j.notebook;

import java.util.List;

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
