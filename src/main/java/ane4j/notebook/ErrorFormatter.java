package ane4j.notebook;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import jdk.jshell.EvalException;
import jdk.jshell.JShellException;
import jdk.jshell.UnresolvedReferenceException;

/** Turns compile errors and exceptions into short tracebacks: what went wrong, where in the user's code, then a few library frames. */
final class ErrorFormatter {
    static final String RED = "\u001B[31;1m", DIM = "\u001B[2m", RESET = "\u001B[0m";
    static final int LIBRARY_FRAMES = 5;

    /** Where a snippet came from: the cell (execution count), its first line in that cell, its source. */
    record Origin(int cell, int firstLine, String source) {
        String line(int lineInSnippet) {
            String[] lines = source.split("\n", -1);
            return lineInSnippet >= 1 && lineInSnippet <= lines.length ? lines[lineInSnippet - 1].strip() : "";
        }
    }

    /** One compile diagnostic: message, the snippet, the error span inside it. */
    record Problem(String message, Origin origin, int start, int end) {}

    private ErrorFormatter() {}

    static CellError compileError(List<Problem> problems) {
        List<String> tb = new ArrayList<>();
        for (Problem p : problems) {
            String[] msg = p.message().split("\n");
            String src = p.origin().source();
            int pos = Math.max(0, Math.min(p.start(), src.length()));
            int lineStart = src.lastIndexOf('\n', pos - 1) + 1;
            int lineEnd = src.indexOf('\n', pos);
            if (lineEnd < 0) lineEnd = src.length();
            int lineInSnippet = 1 + (int) src.substring(0, lineStart).chars().filter(c -> c == '\n').count();
            String line = src.substring(lineStart, lineEnd);
            int width = Math.max(1, Math.min(p.end(), lineEnd) - pos);
            tb.add(RED + "error: " + msg[0] + RESET + DIM + "  (" + where(p.origin(), lineInSnippet) + ")" + RESET);
            tb.add("    " + line);
            tb.add("    " + " ".repeat(pos - lineStart) + RED + "^" + "~".repeat(width - 1) + RESET);
            for (int i = 1; i < msg.length; i++) tb.add("  " + msg[i].strip());
        }
        String first = problems.isEmpty() ? "compile error" : problems.getFirst().message().split("\n")[0];
        return new CellError("CompilationError", first, tb);
    }

    /** An exception thrown by cell code; frames whose file is "#id" are the user's snippets. */
    static CellError evalError(JShellException e, Function<String, Origin> origins) {
        if (e instanceof UnresolvedReferenceException u) {
            String msg = "'" + u.getSnippet().name() + "' uses something that is not defined yet; define it, then run the cell again";
            return new CellError("UnresolvedReference", msg, List.of(RED + "error: " + msg + RESET, DIM + u.getSnippet().source().strip() + RESET));
        }
        EvalException ee = (EvalException) e;
        String cls = ee.getExceptionClassName();
        if (CellExecutionControl.INTERRUPTED.equals(cls)) {
            return new CellError("Interrupted", "the cell was interrupted", List.of(RED + "Interrupted: the cell was stopped" + RESET));
        }
        if (CellExecutionControl.STILL_RUNNING.equals(cls)) {
            return new CellError("StillRunning", ee.getMessage(), List.of(RED + "Interrupted, but " + ee.getMessage() + RESET));
        }
        if (cls.equals(CellGuard.ExitRefused.class.getName())) {
            List<String> tb = new ArrayList<>(List.of(RED + ee.getMessage() + RESET));
            frames(ee.getStackTrace(), origins).stream().takeWhile(l -> !l.contains("in library code")).limit(1).forEach(tb::add);
            return new CellError("ExitRefused", ee.getMessage(), tb);
        }
        String ename = cls.substring(cls.lastIndexOf('.') + 1);
        String msg = ee.getMessage() == null ? null : clean(ee.getMessage());
        if (cls.equals(MagicException.class.getName())) {
            return new CellError("MagicError", msg, List.of(RED + msg + RESET));
        }
        List<String> tb = new ArrayList<>();
        tb.add(RED + cls + RESET + (msg == null ? "" : ": " + msg));
        tb.addAll(frames(ee.getStackTrace(), origins));
        for (Throwable c = ee.getCause(); c instanceof EvalException ce; c = ce.getCause()) {
            tb.add("Caused by: " + ce.getExceptionClassName() + (ce.getMessage() == null ? "" : ": " + clean(ce.getMessage())));
            tb.addAll(frames(ce.getStackTrace(), origins).stream().limit(3).toList());
        }
        return new CellError(ename, msg == null ? "" : msg, tb);
    }

    /** Any other exception (from the kernel or a magic): name, message, the first few frames. */
    static CellError otherError(Throwable t) {
        List<String> tb = new ArrayList<>();
        tb.add(RED + t.getClass().getName() + RESET + (t.getMessage() == null ? "" : ": " + t.getMessage()));
        StackTraceElement[] st = t.getStackTrace();
        for (int i = 0; i < Math.min(st.length, LIBRARY_FRAMES + 3); i++) tb.add(DIM + "    at " + st[i] + RESET);
        if (t.getCause() != null && t.getCause() != t) tb.add("Caused by: " + t.getCause());
        return new CellError(t.getClass().getSimpleName(), t.getMessage() == null ? "" : t.getMessage(), tb);
    }

    /** User frames first (innermost first), then up to LIBRARY_FRAMES frames of the library code they called. */
    static List<String> frames(StackTraceElement[] st, Function<String, Origin> origins) {
        List<String> user = new ArrayList<>();
        int firstUser = -1;
        for (int i = 0; i < st.length; i++) {
            StackTraceElement f = st[i];
            String file = f.getFileName();
            if (file == null || !file.startsWith("#")) continue;
            if (firstUser < 0) firstUser = i;
            Origin o = origins.apply(file.substring(1));
            String m = f.getMethodName();
            String method = m == null || m.isBlank() || m.startsWith("do_it$") ? "" : m + " ";
            String at = o == null ? file + ":" + f.getLineNumber() : where(o, f.getLineNumber());
            String code = o == null ? "" : ": " + o.line(f.getLineNumber());
            user.add("    at " + method + "(" + at + ")" + code);
        }
        List<String> out = new ArrayList<>(user);
        int libEnd = firstUser < 0 ? Math.min(st.length, LIBRARY_FRAMES + 3) : firstUser;
        if (libEnd > 0) {
            out.add(DIM + "  in library code:" + RESET);
            for (int i = 0; i < libEnd && i < LIBRARY_FRAMES; i++) out.add(DIM + "    at " + st[i] + RESET);
            if (libEnd > LIBRARY_FRAMES) out.add(DIM + "    ... " + (libEnd - LIBRARY_FRAMES) + " more" + RESET);
        }
        return out;
    }

    /** JShell's wrapper class names mean nothing to the user: "REPL.$JShell$7.o" is the variable "o". */
    static String clean(String message) {
        return message.replaceAll("REPL\\.\\$JShell\\$\\d+[A-Za-z]?\\.", "");
    }

    static String where(Origin o, int lineInSnippet) {
        String cell = o.cell() > 0 ? "In[" + o.cell() + "]" : "startup";
        return cell + " line " + (o.firstLine() + lineInSnippet - 1);
    }
}
