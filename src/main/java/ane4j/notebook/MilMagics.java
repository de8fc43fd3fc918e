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

    /** The error with the cell line it points at and a caret under the column. */
    static CellError parseError(String cell, MilParseException e) {
        List<String> tb = new ArrayList<>();
        tb.add(ErrorFormatter.RED + "MilParseError: " + e.getMessage() + ErrorFormatter.RESET);
        List<String> lines = cell.lines().toList();
        if (e.line() >= 1 && e.line() <= lines.size()) {
            String src = lines.get(e.line() - 1).replace('\t', ' ');
            String label = "line " + e.line() + " │ ";
            tb.add(label + src);
            int col = Math.max(1, Math.min(e.column(), src.length() + 1));
            tb.add(" ".repeat(label.length() - 2) + "│ " + " ".repeat(col - 1) + ErrorFormatter.RED + "^" + ErrorFormatter.RESET);
        }
        return new CellError("MilParseError", e.getMessage(), tb);
    }
}
