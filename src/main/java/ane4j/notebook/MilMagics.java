package ane4j.notebook;

import ane4j.mil.MilParseException;
import ane4j.mil.MilParser;
import ane4j.mil.Program;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** {@code %%mil NAME}: a cell of MIL text, parsed, compiled in the current session and bound to a notebook variable. */
final class MilMagics {
    private final Map<String, CompiledProgram> bound = new ConcurrentHashMap<>();

    @Magic(value = "mil", cell = true, help = "%%mil [NAME] — the cell is MIL text: parsed (errors point into the cell), compiled, "
            + "and bound to NAME (a CompiledProgram: NAME.run(Map.of(\"x\", values))); without NAME it is checked and shown")
    Object mil(MagicCall call) {
        String name = call.args().isEmpty() ? null : call.args().getFirst();
        if (name != null && !name.matches("[A-Za-z_$][A-Za-z0-9_$]*"))
            throw new MagicException("[%%mil] '" + name + "' is not a Java variable name; use letters, digits and _");
        Program p;
        try {
            p = MilParser.parse(call.body(), Path.of("").toAbsolutePath());
        } catch (MilParseException e) {
            throw parseError(call.body(), e);
        }
        if (name == null) return p;
        CompiledProgram k = Ane.compile(name, p);
        CompiledProgram old = bound.put(name, k);
        if (old != null) old.close();
        call.bind(name, CompiledProgram.class, k);
        return k;
    }

    /** A long line shows this many characters around the error, so the caret stays under it when the frontend wraps. */
    static final int WINDOW = 72;

    /**
     * The error in the cell's coordinates (the body starts on the cell's line 2, under {@code %%mil}), the line (or a
     * window of it) and a caret under the token, {@code ^~~~} under a span such as a declared type.
     */
    static CellError parseError(String body, MilParseException e) {
        int cellLine = e.line() + 1;
        String where = e.line() > 0 ? "line " + cellLine + ", column " + e.column() + ": " : "";
        String msg = where + e.detail();
        List<String> tb = new ArrayList<>();
        tb.add(ErrorFormatter.RED + "MilParseError: " + msg + ErrorFormatter.RESET);
        List<String> lines = body.lines().toList();
        if (e.line() >= 1 && e.line() <= lines.size()) {
            String src = lines.get(e.line() - 1).replace('\t', ' ');
            int col = Math.max(1, Math.min(e.column(), src.length() + 1));
            int end = Math.max(col, Math.min(e.endColumn(), src.length()));
            // a window of the line: [from, to) around the span, "…" where it was cut
            int from = 0, to = src.length();
            if (src.length() > WINDOW) {
                from = Math.max(0, Math.min(col - 1 - WINDOW / 3, src.length() - WINDOW));
                to = Math.min(src.length(), from + WINDOW);
                end = Math.min(end, to);
            }
            String shown = (from > 0 ? "…" : "") + src.substring(from, to) + (to < src.length() ? "…" : "");
            String label = "line " + cellLine + " │ ";
            tb.add(label + shown);
            int caretAt = col - 1 - from + (from > 0 ? 1 : 0);
            tb.add(" ".repeat(label.length() - 2) + "│ " + " ".repeat(caretAt) + ErrorFormatter.RED + "^" + "~".repeat(end - col) + ErrorFormatter.RESET);
        }
        return new CellError("MilParseError", msg, tb);
    }
}
