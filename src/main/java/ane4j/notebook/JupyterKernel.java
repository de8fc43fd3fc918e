package ane4j.notebook;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.dflib.jjava.jupyter.channels.JupyterSocket;
import org.dflib.jjava.jupyter.channels.ShellChannel;
import org.dflib.jjava.jupyter.channels.ShellHandler;
import org.dflib.jjava.jupyter.channels.ShellReplyEnvironment;
import org.dflib.jjava.jupyter.kernel.BaseKernel;
import org.dflib.jjava.jupyter.kernel.HelpLink;
import org.dflib.jjava.jupyter.kernel.JupyterIO;
import org.dflib.jjava.jupyter.kernel.KernelConnectionProperties;
import org.dflib.jjava.jupyter.kernel.LanguageInfo;
import org.dflib.jjava.jupyter.kernel.ReplacementOptions;
import org.dflib.jjava.jupyter.kernel.comm.CommManager;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;
import org.dflib.jjava.jupyter.kernel.display.Renderer;
import org.dflib.jjava.jupyter.kernel.magic.MagicParser;
import org.dflib.jjava.jupyter.kernel.magic.MagicTranspiler;
import org.dflib.jjava.jupyter.kernel.magic.MagicsRegistry;
import org.dflib.jjava.jupyter.kernel.magic.ParsedCellMagic;
import org.dflib.jjava.jupyter.kernel.magic.ParsedLineMagic;
import org.dflib.jjava.jupyter.kernel.magic.UndefinedMagicException;
import org.dflib.jjava.jupyter.kernel.util.StringStyler;
import org.dflib.jjava.jupyter.kernel.util.TextColor;
import org.dflib.jjava.jupyter.messages.Header;
import org.dflib.jjava.jupyter.messages.Message;
import org.dflib.jjava.jupyter.messages.publish.PublishError;
import org.dflib.jjava.jupyter.messages.publish.PublishExecuteInput;
import org.dflib.jjava.jupyter.messages.publish.PublishExecuteResult;
import org.dflib.jjava.jupyter.messages.reply.ErrorReply;
import org.dflib.jjava.jupyter.messages.reply.ExecuteReply;
import org.dflib.jjava.jupyter.messages.reply.HistoryReply;
import org.dflib.jjava.jupyter.messages.reply.InterruptReply;
import org.dflib.jjava.jupyter.messages.reply.KernelInfoReply;
import org.dflib.jjava.jupyter.messages.request.ExecuteRequest;
import org.dflib.jjava.jupyter.messages.request.HistoryRequest;
import org.dflib.jjava.jupyter.messages.request.InterruptRequest;
import org.dflib.jjava.jupyter.messages.request.KernelInfoRequest;
import org.zeromq.ZMQ;

/**
 * The ane4j Jupyter kernel: JShell cells on jjava-jupyter's protocol layer. This class is the only adapter to the
 * jjava base classes (together with {@link KernelIO}); everything ane4j-specific comes in through {@link Ane4jExtension}.
 * Started by Jupyter with the connection file: {@code java -cp ane4j.jar:lib/* ane4j.notebook.JupyterKernel FILE}.
 */
public final class JupyterKernel extends BaseKernel {
    /** Magic syntax as in IJava: a line magic at the start of a line or after '=', a cell magic on the first line. */
    static final String LINE_MAGIC_START = "(?<=(?:^|=))\\s*%", CELL_MAGIC_START = "%%";
    private static final Pattern LINE_MAGIC = Pattern.compile("^\\s*%(?!%)(\\w\\S*)(.*)$");

    private final JShellEvaluator evaluator;
    /** %maven's resolver; its private working folder is removed at shutdown (and by a shutdown hook on any exit). */
    private final MavenResolver maven = new MavenResolver();
    private final KernelIO kio;
    private final Map<String, MagicRegistry.Entry> described = new ConcurrentHashMap<>();
    private final List<String> afterCell = new ArrayList<>();
    private volatile int cell;
    private boolean inDirectMagic;
    private volatile ShellReplyEnvironment runningCell;
    private volatile boolean closing;
    /**
     * The connection and its shell socket; null without a connection. Only the shell thread touches the socket: while a
     * cell runs on {@link #evalThread} it keeps reading it ({@link #listenWhileRunning}).
     */
    private volatile KernelConnection connection;
    private volatile JupyterSocket shell;
    /** Where cells are evaluated, so the shell thread stays free to read the shell socket meanwhile. */
    private final ExecutorService evalThread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "ane4j-eval");
        t.setDaemon(true);
        return t;
    });
    /** Requests read off the shell socket while a cell ran, handled in arrival order once it has ended (shell thread only). */
    private final Deque<Message<?>> held = new ArrayDeque<>();
    private boolean dispatchingHeld;
    /** After a failed cell with stop_on_error: the execute requests sent before this instant are aborted. */
    private volatile Instant abortSentBefore;

    private JupyterKernel(JShellEvaluator evaluator, KernelIO io, boolean extensions) {
        super("ane4j", AneMagics.version(), languageInfo(), List.of(new HelpLink("ane4j", "https://github.com/ane4j/ane4j")),
                null, io, new CommManager(), new Renderer(),
                new MagicParser(LINE_MAGIC_START, CELL_MAGIC_START, new Transpiler()), new MagicsRegistry(),
                extensions, new StringStyler.Builder().addPrimaryStyle(TextColor.BOLD_RESET_FG)
                        .addSecondaryStyle(TextColor.BOLD_RED_FG).addHighlightStyle(TextColor.BOLD_RESET_FG).build());
        this.evaluator = evaluator;
        this.kio = io;
        Runtime.getRuntime().addShutdownHook(new Thread(maven::close, "ane4j-maven-cleanup"));
    }

    /** A kernel with the core magics; {@link #onStartup()} then installs extensions (ane4j's among them). */
    public static JupyterKernel create(boolean extensions) {
        List<String> opts = new ArrayList<>();
        String extra = System.getenv("ANE4J_COMPILER_OPTS");
        if (extra != null && !extra.isBlank()) opts.addAll(MagicRegistry.splitArgs(extra));
        JupyterKernel k = new JupyterKernel(new JShellEvaluator(opts), new KernelIO(), extensions);
        MagicRegistry core = new MagicRegistry().add(new CoreMagics(k, k.maven));
        core.installInto(k, false);
        k.describe(core);
        return k;
    }

    private static LanguageInfo languageInfo() {
        return new LanguageInfo.Builder("Java").version(Runtime.version().toString()).mimetype("text/x-java-source")
                .fileExtension(".jshell").pygments("java").codemirror("java").build();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: java -cp 'ane4j.jar:lib/*' ane4j.notebook.JupyterKernel CONNECTION_FILE  (Jupyter runs this from kernel.json)");
            System.exit(2);
        }
        if (System.getProperty("java.awt.headless") == null) System.setProperty("java.awt.headless", "true");
        // library log lines (backend and BLAS choice) as one line each in the cell: INFO on stdout, WARNING on stderr
        if (System.getProperty("java.util.logging.SimpleFormatter.format") == null)
            System.setProperty("java.util.logging.SimpleFormatter.format", "%4$s: %5$s%6$s%n");
        CellLogHandler.install();
        KernelConnectionProperties props = KernelConnectionProperties.parse(Files.readString(Path.of(args[0])));
        KernelConnection connection = new KernelConnection(props);
        JupyterKernel kernel = create(!"0".equals(System.getenv("ANE4J_LOAD_EXTENSIONS")));
        kernel.connection = connection;
        kernel.shell = connection.shell();
        kernel.onStartup();
        String cp = System.getenv("ANE4J_CLASSPATH");
        if (cp != null && !cp.isBlank()) {
            for (String entry : cp.split(java.io.File.pathSeparator)) {
                for (Path p : CoreMagics.glob(entry)) kernel.addToClasspath(p);
            }
        }
        kernel.becomeHandlerForConnection(connection);
        Runtime.getRuntime().addShutdownHook(new Thread(kernel::noticeUnrefusedExit, "ane4j-exit-notice"));
        connection.connect();
        kernel.warmUp();
        connection.waitUntilClose();
        kernel.closing = true;
        System.exit(0);
    }

    /**
     * Cells' own System.exit / Runtime.exit / Runtime.halt calls are refused ({@link CellInstrumenter}); an exit the
     * kernel cannot see coming (from library code, reflection or a method handle) still ends the process. Then this
     * shutdown hook at least tells the running cell why the kernel is going, instead of a silent death.
     */
    void noticeUnrefusedExit() {
        ShellReplyEnvironment env = runningCell;
        if (closing || env == null) return;
        String caller = exitCaller();
        if (caller == null) return;   // a signal or the JVM ending on its own, not a call
        String msg = "[notebook] the kernel is exiting: System.exit was called from " + caller + ", which the kernel cannot refuse;"
                + " the notebook's variables are lost. Restart the kernel (Kernel > Restart)";
        try {
            List<String> tb = List.of(ErrorFormatter.RED + msg + ErrorFormatter.RESET);
            env.publish(new PublishError("KernelExit", msg, tb));
            ErrorReply reply = new ErrorReply("KernelExit", msg, tb);
            reply.setExecutionCount(cell);
            env.replyError(ExecuteReply.MESSAGE_TYPE.error(), reply);
            env.setStatusIdle();
            Thread.sleep(300);   // ZeroMQ sends in the background; give it time before the JVM halts
        } catch (RuntimeException | InterruptedException e) {
            // the connection is already closing: nothing more to tell
        }
    }

    /** The first frame outside the JDK of the thread that called exit, or null when no thread did. */
    static String exitCaller() {
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            StackTraceElement[] st = e.getValue();
            int i = 0;
            while (i < st.length && !(st[i].getClassName().equals("java.lang.Shutdown") && st[i].getMethodName().equals("exit"))) i++;
            if (i == st.length || e.getKey().getName().startsWith("SIG")) continue;
            while (i < st.length && (st[i].getClassName().startsWith("java.") || st[i].getClassName().startsWith("jdk.internal."))) i++;
            if (i == st.length) return "JDK code on thread " + e.getKey().getName();
            StackTraceElement f = st[i];
            boolean cellFrame = f.getClassName().startsWith("REPL.") || f.getFileName() != null && f.getFileName().startsWith("#");
            return cellFrame ? "the cell through reflection or a method handle" : "library code at " + f;
        }
        return null;
    }

    /** Compiles the startup imports in the background so the first cell does not pay for JShell's first compile. */
    void warmUp() {
        Thread t = new Thread(evaluator::warmUp, "ane4j-warmup");
        t.setDaemon(true);
        t.start();
    }

    // ---- evaluation

    @Override
    public Object evalRaw(String code) {
        Object result;
        if (code.startsWith(CELL_MAGIC_START)) {
            int nl = code.indexOf('\n');
            List<String> head = MagicRegistry.splitArgs(code.substring(2, nl < 0 ? code.length() : nl));
            if (head.isEmpty()) throw new MagicException("a cell magic needs a name after %%; %lsmagic lists them");
            String body = nl < 0 ? "" : code.substring(nl + 1);
            result = direct(() -> magicsRegistry.evalCellMagic(this, head.getFirst(), head.subList(1, head.size()), body), head.getFirst(), false);
        } else if (onlyLineMagics(code)) {
            result = null;
            for (String line : code.split("\n")) {
                Matcher m = LINE_MAGIC.matcher(line);
                if (!m.matches()) continue;
                List<String> args = MagicRegistry.splitArgs(m.group(2));
                result = direct(() -> magicsRegistry.evalLineMagic(this, m.group(1), args), m.group(1), true);
            }
        } else {
            result = evaluator.eval(magicParser.resolveMagics(code), cell);
        }
        runAfterCell();
        return result;
    }

    private interface MagicBody {
        Object run() throws Exception;
    }

    private Object direct(MagicBody body, String name, boolean line) {
        boolean outer = inDirectMagic;
        inDirectMagic = true;
        try {
            return body.run();
        } catch (UndefinedMagicException e) {
            throw new MagicException("unknown magic " + (line ? "%" : "%%") + name + "; %lsmagic lists the magics");
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new MagicException("[%" + name + "] " + e.getMessage(), e);
        } finally {
            inDirectMagic = outer;
        }
    }

    static boolean onlyLineMagics(String code) {
        boolean any = false;
        for (String line : code.split("\n")) {
            if (line.isBlank()) continue;
            if (!LINE_MAGIC.matcher(line).matches()) return false;
            any = true;
        }
        return any;
    }

    /**
     * Java code a magic wants evaluated (bindings, %load). Runs now when the magic was called directly; when the magic
     * was called from inside a running snippet it runs right after the cell, because JShell cannot nest evaluations.
     */
    Object evalAfterMagic(String code) {
        if (inDirectMagic) return evaluator.eval(magicParser.resolveMagics(code), cell);
        synchronized (afterCell) {
            afterCell.add(code);
        }
        return null;
    }

    private void runAfterCell() {
        List<String> todo;
        synchronized (afterCell) {
            todo = List.copyOf(afterCell);
            afterCell.clear();
        }
        for (String code : todo) evaluator.eval(code, cell);
    }

    @Override
    public DisplayData eval(String code) {
        Object r = evalRaw(code);
        if (r == null || r instanceof DisplayHandle) return null;
        return r instanceof DisplayData d ? d : getRenderer().render(r);
    }

    /** Like the base handler, but errors carry the real exception name and our short traceback. */
    @Override
    protected synchronized void handleExecuteRequest(ShellReplyEnvironment env, Message<ExecuteRequest> message) {
        if (abortSentBefore != null) {
            if (sentBefore(message, abortSentBefore)) {
                abort(env);
                if (!requestsWaiting()) abortSentBefore = null;
                return;
            }
            abortSentBefore = null;
        }
        commManager.setMessageContext(message);
        ExecuteRequest request = message.getContent();
        int count = executionCount.getAndIncrement();
        cell = count;
        env.setBusyDeferIdle();
        env.publish(new PublishExecuteInput(request.getCode(), count));
        replaceOutputStreams(env);
        kio.attach(env);
        env.defer(() -> kio.detach(env));
        runningCell = env;
        env.defer(() -> runningCell = null);
        kio.stdinEnabled(request.isStdinEnabled());
        try {
            DisplayData out = evalListening(request.getCode());
            if (out != null) env.publish(new PublishExecuteResult(count, out));
            env.defer().reply(new ExecuteReply(count, Collections.emptyMap()));
        } catch (Exception e) {
            CellError err = toCellError(e);
            env.publish(new PublishError(err.ename(), err.evalue(), err.traceback()));
            ErrorReply reply = new ErrorReply(err.ename(), err.evalue(), err.traceback());
            reply.setExecutionCount(count);
            env.defer().replyError(ExecuteReply.MESSAGE_TYPE.error(), reply);
            // as IPython: a failed cell aborts the cells queued behind it (Run All stops there), unless the frontend sent
            // stop_on_error false (nbclient does for a cell tagged raises-exception, and with --allow-errors)
            if (request.shouldStopOnError() && requestsWaiting()) abortSentBefore = Instant.now();
        }
        if (dispatchingHeld || held.isEmpty()) return;
        // the requests that came while the cell ran go next, in order, before anything still on the socket
        env.resolveDeferrals();
        dispatchingHeld = true;
        try {
            for (Message<?> m; (m = held.poll()) != null; ) dispatch(m);
        } finally {
            dispatchingHeld = false;
        }
    }

    /**
     * Evaluates a cell on {@link #evalThread} while this (the shell) thread keeps reading the shell socket: a cell that
     * is only {@code %train stop} or {@code %train status} while a training run is running is answered at once
     * ({@link #answerAtOnce}); every other request is held and handled in arrival order after this cell, as before.
     */
    private DisplayData evalListening(String code) throws Exception {
        Future<DisplayData> result = evalThread.submit(() -> eval(code));
        while (true) {
            try {
                return result.get(20, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                listenWhileRunning();
            } catch (ExecutionException e) {
                if (e.getCause() instanceof Exception x) throw x;
                throw (Error) e.getCause();
            }
        }
    }

    private void listenWhileRunning() {
        JupyterSocket s = shell;
        if (s == null) return;
        try {
            while ((s.getEvents() & ZMQ.Poller.POLLIN) != 0) {
                Message<?> m = connection.reader().read(s, "shell");   // null: dropped (forged, malformed)
                if (m != null && !answerAtOnce(m)) held.add(m);
            }
        } catch (RuntimeException e) {
            if (!closing) throw e;   // shutting down: the sockets are closed under the running cell
        }
    }

    /** The cell commands answered while another cell runs (IPython queues every cell; these only read or stop a run). */
    static String atOnceCommand(String code) {
        String c = code.strip();
        if (c.contains("\n")) return null;
        List<String> words = c.startsWith("%train") ? MagicRegistry.splitArgs(c.substring(1)) : List.of();
        return words.size() == 2 && words.getFirst().equals("train") && (words.get(1).equals("stop") || words.get(1).equals("status")) ? words.get(1) : null;
    }

    @SuppressWarnings("unchecked")
    private boolean answerAtOnce(Message<?> m) {
        if (!ExecuteRequest.MESSAGE_TYPE.equals(m.getHeader().getType())) return false;
        String code = ((Message<ExecuteRequest>) m).getContent().getCode();
        String what = atOnceCommand(code);
        TrainingRun run = TrainingRun.current();
        ShellReplyEnvironment running = runningCell;
        if (what == null || run == null || !run.running() || running == null) return false;
        ShellReplyEnvironment env = connection.prepareReplyEnv((ShellChannel) shell, m);
        int count = executionCount.getAndIncrement();
        env.setStatusBusy();
        env.publish(new PublishExecuteInput(code, count));
        String text = what.equals("stop") ? run.stopFromCell(count) : run.status();
        env.publish(new PublishExecuteResult(count, getRenderer().render(text)));
        env.reply(new ExecuteReply(count, Collections.emptyMap()));
        env.setStatusIdle();
        // a frontend takes any idle for the whole kernel's: the running cell still runs
        running.setStatusBusy();
        return true;
    }

    /** Handles a held request as the shell loop would have (jjava's ShellChannel: handler, deferrals, shutdown). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private void dispatch(Message<?> m) {
        ShellHandler handler = connection.getHandler(m.getHeader().getType());
        if (handler == null) return;
        ShellReplyEnvironment env = connection.prepareReplyEnv((ShellChannel) shell, m);
        try {
            handler.handle(env, m);
        } catch (RuntimeException e) {
            System.err.println("[notebook] handling a queued " + m.getHeader().getType().getName() + " failed: " + e);
        } finally {
            env.resolveDeferrals();
        }
        if (env.isMarkedForShutdown()) connection.close();
    }

    /** True when the client sent the request before {@code instant} (a request without a readable date counts as queued). */
    static boolean sentBefore(Message<?> message, Instant instant) {
        var ts = message.getHeader().getTimestamp();
        Instant sent = ts == null ? null : parseDate(ts.getDateString());
        return sent == null || !sent.isAfter(instant);
    }

    /** A Jupyter header date: ISO 8601 with microseconds, usually with Z or an offset (jjava's own parser refuses microseconds). */
    static Instant parseDate(String s) {
        if (s == null) return null;
        try {
            return java.time.OffsetDateTime.parse(s).toInstant();
        } catch (java.time.format.DateTimeParseException e) {
            try {
                return java.time.LocalDateTime.parse(s).toInstant(java.time.ZoneOffset.UTC);
            } catch (java.time.format.DateTimeParseException e2) {
                return null;
            }
        }
    }

    /** Requests are waiting: held while the cell ran, or on the shell socket (called on the shell thread, which owns the socket). */
    private boolean requestsWaiting() {
        JupyterSocket s = shell;
        return !held.isEmpty() || s != null && (s.getEvents() & ZMQ.Poller.POLLIN) != 0;
    }

    /** IPython's reply to an execute request aborted after an earlier error: status "aborted", no execution count. */
    static final class Aborted {
        @SuppressWarnings("unused") private final String status = "aborted";
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void abort(ShellReplyEnvironment env) {
        env.setBusyDeferIdle();
        env.defer().reply(new Message(env.getContext(), ExecuteReply.MESSAGE_TYPE, new Aborted()));
    }

    static CellError toCellError(Throwable e) {
        if (e instanceof CellError c) return c;
        if (e instanceof MagicException m) {
            return new CellError("MagicError", m.getMessage(), List.of(ErrorFormatter.RED + m.getMessage() + ErrorFormatter.RESET));
        }
        if (e instanceof UndefinedMagicException u) {
            String msg = "unknown magic " + (u.isLineMagic() ? "%" : "%%") + u.getMagicName() + "; %lsmagic lists the magics";
            return new CellError("MagicError", msg, List.of(ErrorFormatter.RED + msg + ErrorFormatter.RESET));
        }
        return ErrorFormatter.otherError(e);
    }

    @Override
    public List<String> formatError(Throwable e) {
        return toCellError(e).traceback();
    }

    // ---- completion, inspection, is_complete

    @Override
    public ReplacementOptions complete(String code, int at) {
        int lineStart = code.lastIndexOf('\n', Math.max(0, at - 1)) + 1;
        Matcher m = Pattern.compile("^\\s*(%%?)(\\w*)$").matcher(code.substring(lineStart, at));
        if (m.matches()) {
            boolean cellMagic = m.group(1).length() == 2;
            var names = cellMagic ? magicsRegistry.getCellMagicNames() : magicsRegistry.getLineMagicNames();
            List<String> hits = names.stream().filter(n -> n.startsWith(m.group(2))).sorted().toList();
            return new ReplacementOptions(hits, at - m.group(2).length(), at);
        }
        JShellEvaluator.Completion c = evaluator.complete(code, at);
        return new ReplacementOptions(c.matches(), c.start(), c.end());
    }

    @Override
    public DisplayData inspect(String code, int at, boolean extraDetail) {
        String doc = evaluator.documentation(code, at);
        return doc == null ? null : new DisplayData(doc);
    }

    @Override
    public String isComplete(String code) {
        if (code.startsWith(CELL_MAGIC_START)) return code.strip().contains("\n") ? IS_COMPLETE_YES : "";
        if (onlyLineMagics(code)) return IS_COMPLETE_YES;
        return evaluator.isComplete(code);
    }

    @Override
    public void interrupt() {
        Notebook.interruptHooks();
        evaluator.interrupt();
    }

    // ---- protocol fixes: replies that jjava-jupyter 1.0-a6 sends without "status"

    static final class KernelInfoOk extends KernelInfoReply {
        @SuppressWarnings("unused") private final String status = "ok";

        KernelInfoOk(String implementation, String version, LanguageInfo info, String banner, List<HelpLink> links) {
            super(Header.PROTOCOL_VERISON, implementation, version, info, banner, links);
        }
    }

    static final class HistoryOk extends HistoryReply {
        @SuppressWarnings("unused") private final String status = "ok";

        HistoryOk() {
            super(List.of());
        }
    }

    static final class InterruptOk extends InterruptReply {
        @SuppressWarnings("unused") private final String status = "ok";
    }

    @Override
    protected void handleKernelInfoRequest(ShellReplyEnvironment env, Message<KernelInfoRequest> message) {
        env.setBusyDeferIdle();
        env.reply(new KernelInfoOk(name, version, getLanguageInfo(), getBanner(), getHelpLinks()));
    }

    @Override
    protected void handleHistoryRequest(ShellReplyEnvironment env, Message<HistoryRequest> message) {
        env.setBusyDeferIdle();
        env.reply(new HistoryOk());
    }

    @Override
    protected void handleInterruptRequest(ShellReplyEnvironment env, Message<InterruptRequest> message) {
        env.setBusyDeferIdle();
        env.defer().reply(new InterruptOk());
        interrupt();
    }

    @Override
    public String getBanner() {
        return "Java " + Runtime.version() + " :: ane4j " + version + " — %lsmagic lists the magics, %ane shows the backend";
    }

    @Override
    public void onShutdown(boolean restarting) {
        closing = true;
        super.onShutdown(restarting);
        Ane.shutdown();
        evaluator.close();
        maven.close();
    }

    // ---- hooks for magics and the extension

    /** Adds a jar or directory to the cells' class path and installs any extension it declares. */
    public String addToClasspath(Path path) {
        String p = path.toAbsolutePath().normalize().toString();
        evaluator.addToClasspath(p);
        if (extensionsEnabled) installExtensions(p);
        return p;
    }

    /** Java code evaluated before the first cell (e.g. imports). */
    public void addStartup(String code) {
        evaluator.addStartup(code);
    }

    void describe(MagicRegistry registry) {
        for (MagicRegistry.Entry e : registry.entries()) described.put((e.cell() ? "%%" : "%") + e.name(), e);
    }

    /** Every registered magic once (aliases folded into their magic), sorted by name, a line magic before its cell magic. */
    List<MagicRegistry.Help> magicHelp() {
        List<MagicRegistry.Help> out = new ArrayList<>();
        for (boolean cellMagic : new boolean[] {false, true}) {
            var names = cellMagic ? magicsRegistry.getCellMagicNames() : magicsRegistry.getLineMagicNames();
            for (String n : names) {
                MagicRegistry.Entry e = described.get((cellMagic ? "%%" : "%") + n);
                if (e == null) out.add(new MagicRegistry.Help(n, cellMagic, List.of(), "", ""));
                else if (e.isPrimary()) out.add(e.describe());
            }
        }
        out.sort(java.util.Comparator.comparing(MagicRegistry.Help::name).thenComparing(MagicRegistry.Help::cell));
        return out;
    }

    JShellEvaluator evaluator() {
        return evaluator;
    }

    Map<String, Object> extensionsInstalled() {
        return Collections.unmodifiableMap(extensions);
    }

    /** Runs a cell in-process without a Jupyter connection (tests, scripts): the value, or a CellError. */
    Object run(String code) {
        cell = executionCount.getAndIncrement();
        return evalRaw(code);
    }

    /** Emits calls to {@link Notebook#lineMagic}/{@link Notebook#cellMagic}, whose value shows as the cell's result. */
    static final class Transpiler extends MagicTranspiler {
        private static final Pattern QUOTE = Pattern.compile("(?<!\\\\)\"");

        @Override
        public String transpileCell(ParsedCellMagic magic) {
            return "ane4j.notebook.Notebook.cellMagic(" + lit(magic.magicCall.name) + ", java.util.List.of("
                    + String.join(",", magic.magicCall.args.stream().map(Transpiler::lit).toList()) + "), "
                    + lit(magic.magicCall.body) + ");";
        }

        @Override
        public String transpileLine(ParsedLineMagic magic) {
            if (QUOTE.matcher(magic.linePrefix).results().count() % 2 == 1) return magic.raw;
            return "ane4j.notebook.Notebook.lineMagic(" + lit(magic.magicCall.name) + ", java.util.List.of("
                    + String.join(",", magic.magicCall.args.stream().map(Transpiler::lit).toList()) + "));";
        }

        /** A Java expression for {@code s}: Base64 avoids every escaping problem. */
        static String lit(String s) {
            return "new String(java.util.Base64.getDecoder().decode(\""
                    + java.util.Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8))
                    + "\"), java.nio.charset.StandardCharsets.UTF_8)";
        }
    }

    /** jjava's JupyterIO with the attach/detach calls this kernel's execute handler needs. */
    static final class KernelIO extends JupyterIO {
        KernelIO() {
            super(StandardCharsets.UTF_8);
        }

        void attach(ShellReplyEnvironment env) {
            setEnv(env);
        }

        void detach(ShellReplyEnvironment env) {
            retractEnv(env);
        }

        void stdinEnabled(boolean enabled) {
            setJupyterInEnabled(enabled);
        }
    }
}
