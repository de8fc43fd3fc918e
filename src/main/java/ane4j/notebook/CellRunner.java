package ane4j.notebook;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntSupplier;
import java.util.function.UnaryOperator;

/**
 * Runs the code of one cell: a cell of only magics through the one magic route ({@link MagicDispatch#runCell}) without
 * JShell, any other as Java in JShell with its magics first rewritten into calls of that route; then the Java code that
 * magics asked for while the cell's snippets ran (bindings, {@code %load}), which JShell cannot evaluate nested.
 */
final class CellRunner {
    private final JShellEvaluator jshell;
    private final MagicDispatch magics;
    /** Java code with its magics rewritten into calls of the route ({@link MagicDispatch.Transpiler}, through jjava's parser). */
    private final UnaryOperator<String> rewriteMagics;
    /** The execution count of the cell that runs now, for JShell's snippet names and traceback lines. */
    private final IntSupplier cell;
    /** Java code magics asked for while a snippet ran, evaluated right after the cell ({@link #evalForMagic}). */
    private final List<String> afterCell = new ArrayList<>();
    /** JShell is evaluating a snippet now: a magic called from it cannot evaluate code at once (JShell does not nest). */
    private volatile boolean inSnippet;

    CellRunner(JShellEvaluator jshell, MagicDispatch magics, UnaryOperator<String> rewriteMagics, IntSupplier cell) {
        this.jshell = jshell;
        this.magics = magics;
        this.rewriteMagics = rewriteMagics;
        this.cell = cell;
    }

    /** The cell's value (null: none), or a {@link CellError}/{@link MagicException}. */
    Object run(String code) {
        Object result = MagicDispatch.isMagicCell(code) ? magics.runCell(code) : java(rewriteMagics.apply(code));
        List<String> todo;
        synchronized (afterCell) {
            todo = List.copyOf(afterCell);
            afterCell.clear();
        }
        for (String c : todo) java(c);
        return result;
    }

    /**
     * Java code a magic wants evaluated. Runs now when the magic was called outside JShell (a magic cell); when it was
     * called from inside a running snippet it runs right after the cell (and this returns null).
     */
    Object evalForMagic(String code) {
        if (!inSnippet) return java(rewriteMagics.apply(code));
        synchronized (afterCell) {
            afterCell.add(code);
        }
        return null;
    }

    private Object java(String code) {
        boolean outer = inSnippet;
        inSnippet = true;
        try {
            return jshell.eval(code, cell.getAsInt());
        } finally {
            inSnippet = outer;
        }
    }
}
