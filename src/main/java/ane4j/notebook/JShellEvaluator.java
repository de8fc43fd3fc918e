package ane4j.notebook;

import java.io.File;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import jdk.jshell.Diag;
import jdk.jshell.JShell;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.SourceCodeAnalysis.Completeness;

/**
 * The Java side of the kernel: one JShell running in this JVM. Splits a cell into snippets, evaluates them in order,
 * returns the raw value of the last expression, and answers completion, documentation and is-complete queries.
 */
final class JShellEvaluator implements AutoCloseable {
    /** The snippet kinds whose value is the cell's result (an expression or a bare variable name). */
    private static final Set<Snippet.SubKind> RESULT_KINDS = Set.of(
            Snippet.SubKind.VAR_VALUE_SUBKIND, Snippet.SubKind.OTHER_EXPRESSION_SUBKIND,
            Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND);

    private final JShell shell;
    private final CellExecutionControl control;
    private final Map<String, ErrorFormatter.Origin> origins = new ConcurrentHashMap<>();
    private final List<String> startup = new ArrayList<>();
    private final Set<String> classpath = new LinkedHashSet<>();
    private boolean startupDone;
    private RuntimeException startupError;

    JShellEvaluator(List<String> compilerOptions) {
        CellExecutionControl.Provider provider = new CellExecutionControl.Provider();
        this.shell = JShell.builder()
                .executionEngine(provider, Map.of())
                .compilerOptions(compilerOptions.toArray(String[]::new))
                .build();
        this.control = provider.control();
    }

    /** Code run before the first cell (imports, helpers); errors surface in that cell, not at kernel start. */
    synchronized void addStartup(String code) {
        if (startupDone) evalCell(code, 0);
        else startup.add(code);
    }

    /** Evaluates every snippet of the cell in order; returns the value of the last one if it is an expression. */
    synchronized Object eval(String code, int cell) {
        control.beginCell();
        runStartup();
        if (startupError != null) {
            RuntimeException e = startupError;
            startupError = null;
            throw e;
        }
        return evalCell(code, cell);
    }

    /** Runs the startup code now (kernel start, in the background); an error is reported by the first cell. */
    synchronized void warmUp() {
        control.warmUp();
        try {
            runStartup();
        } catch (RuntimeException e) {
            startupError = e;
        }
    }

    private void runStartup() {
        if (startupDone) return;
        startupDone = true;
        for (String s : startup) evalCell(s, 0);
        startup.clear();
    }

    private Object evalCell(String code, int cell) {
        SourceCodeAnalysis sca = shell.sourceCodeAnalysis();
        Object last = null;
        String remaining = code;
        try {
            while (!remaining.isBlank()) {
                int offset = code.length() - remaining.length();
                SourceCodeAnalysis.CompletionInfo info = sca.analyzeCompletion(remaining);
                if (info.completeness() == Completeness.EMPTY) break;
                String source = (info.completeness().isComplete() ? info.source() : remaining).stripLeading();
                int lead = leadingBlank(code, offset);
                int firstLine = 1 + (int) code.substring(0, offset + lead).chars().filter(c -> c == '\n').count();
                last = evalSnippet(source, new ErrorFormatter.Origin(cell, firstLine, source));
                remaining = info.completeness().isComplete() ? info.remaining() : "";
            }
            return last;
        } finally {
            control.clearResults();
        }
    }

    private Object evalSnippet(String source, ErrorFormatter.Origin origin) {
        List<SnippetEvent> events = shell.eval(source);
        Object value = null;
        List<ErrorFormatter.Problem> problems = new ArrayList<>();
        for (SnippetEvent ev : events) {
            if (ev.causeSnippet() != null) continue;
            Snippet s = ev.snippet();
            origins.put(s.id(), origin);
            if (ev.exception() != null) throw ErrorFormatter.evalError(ev.exception(), origins::get);
            if (ev.status() == Snippet.Status.REJECTED) {
                shell.diagnostics(s).filter(Diag::isError).forEach(d -> problems.add(new ErrorFormatter.Problem(
                        d.getMessage(null), origin, (int) d.getStartPosition(), (int) d.getEndPosition())));
                if (problems.isEmpty()) problems.add(new ErrorFormatter.Problem("the code was rejected", origin, 0, 0));
                continue;
            }
            if (RESULT_KINDS.contains(s.subKind()) && control.hasResult(ev.value())) {
                value = control.takeResult(ev.value());
            }
        }
        if (!problems.isEmpty()) throw ErrorFormatter.compileError(problems);
        return value;
    }

    private static int leadingBlank(String code, int from) {
        int i = from;
        while (i < code.length() && Character.isWhitespace(code.charAt(i))) i++;
        return i - from;
    }

    /** Completion candidates at the cursor and the start of the text they replace. */
    synchronized Completion complete(String code, int cursor) {
        int[] anchor = new int[1];
        List<SourceCodeAnalysis.Suggestion> suggestions = shell.sourceCodeAnalysis().completionSuggestions(code, cursor, anchor);
        LinkedHashSet<String> out = new LinkedHashSet<>();
        suggestions.stream().filter(SourceCodeAnalysis.Suggestion::matchesType).forEach(s -> out.add(s.continuation()));
        suggestions.forEach(s -> out.add(s.continuation()));
        return new Completion(List.copyOf(out), anchor[0], cursor);
    }

    record Completion(List<String> matches, int start, int end) {}

    /** Signature and Javadoc of the method or type at the cursor, or null. */
    synchronized String documentation(String code, int cursor) {
        int at = Math.min(cursor, code.length());
        while (at < code.length() && Character.isJavaIdentifierPart(code.charAt(at))) at++;
        if (at < code.length() && code.charAt(at) == '(') at++;
        List<SourceCodeAnalysis.Documentation> docs = shell.sourceCodeAnalysis().documentation(code, at, true);
        if (docs.isEmpty() && at > 0 && code.charAt(at - 1) != '(') {
            docs = shell.sourceCodeAnalysis().documentation(code + "(", at + 1, true);
        }
        if (docs.isEmpty()) return null;
        StringBuilder sb = new StringBuilder();
        for (SourceCodeAnalysis.Documentation d : docs) {
            sb.append(d.signature()).append('\n');
            if (d.javadoc() != null && !d.javadoc().isBlank()) sb.append(d.javadoc().strip()).append("\n\n");
        }
        return sb.toString().strip();
    }

    /** "complete", "invalid", or the indent for the next line when the code is unfinished. */
    synchronized String isComplete(String code) {
        String remaining = code;
        while (!remaining.isBlank()) {
            SourceCodeAnalysis.CompletionInfo info = shell.sourceCodeAnalysis().analyzeCompletion(remaining);
            switch (info.completeness()) {
                case COMPLETE, COMPLETE_WITH_SEMI -> remaining = info.remaining();
                case EMPTY -> { return "complete"; }
                case UNKNOWN -> { return "invalid"; }
                default -> { return indentFor(remaining); }
            }
        }
        return "complete";
    }

    private static String indentFor(String code) {
        int depth = 0;
        for (char c : code.toCharArray()) {
            if (c == '{' || c == '(' || c == '[') depth++;
            else if (c == '}' || c == ')' || c == ']') depth = Math.max(0, depth - 1);
        }
        return "    ".repeat(Math.max(1, depth));
    }

    /** Adds jars or directories to the class path of the cells (and to java.class.path, with the right separator). */
    synchronized void addToClasspath(String path) {
        if (!classpath.add(path)) return;
        shell.addToClasspath(path);
        String cp = System.getProperty("java.class.path", "");
        System.setProperty("java.class.path", cp.isEmpty() ? path : cp + File.pathSeparator + path);
    }

    List<String> addedClasspath() {
        return List.copyOf(classpath);
    }

    void interrupt() {
        control.interruptAll();
    }

    /** Interrupted cells still running because their code never reached a stop check. */
    int runawayCells() {
        return control.runawayCells();
    }

    /** True while a snippet of a cell runs. */
    boolean busy() {
        return control.busy();
    }

    int uninstrumentedClasses() {
        return control.uninstrumentedClasses();
    }

    /** The active import lines. */
    synchronized List<String> imports() {
        return shell.imports().map(i -> i.source().strip()).toList();
    }

    @Override
    public void close() {
        shell.close();
    }
}
