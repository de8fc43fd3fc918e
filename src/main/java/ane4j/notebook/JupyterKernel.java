package ane4j.notebook;

import ane4j.notebook.kernel.CellQueue;
import ane4j.notebook.kernel.ProtocolFixes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.dflib.jjava.jupyter.channels.ShellReplyEnvironment;
import org.dflib.jjava.jupyter.kernel.BaseKernel;
import org.dflib.jjava.jupyter.kernel.HelpLink;
import org.dflib.jjava.jupyter.kernel.KernelConnectionProperties;
import org.dflib.jjava.jupyter.kernel.LanguageInfo;
import org.dflib.jjava.jupyter.kernel.ReplacementOptions;
import org.dflib.jjava.jupyter.kernel.comm.CommManager;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;
import org.dflib.jjava.jupyter.kernel.display.Renderer;
import org.dflib.jjava.jupyter.kernel.magic.MagicParser;
import org.dflib.jjava.jupyter.kernel.magic.MagicsRegistry;
import org.dflib.jjava.jupyter.kernel.util.StringStyler;
import org.dflib.jjava.jupyter.kernel.util.TextColor;
import org.dflib.jjava.jupyter.messages.Message;
import org.dflib.jjava.jupyter.messages.publish.PublishError;
import org.dflib.jjava.jupyter.messages.publish.PublishExecuteInput;
import org.dflib.jjava.jupyter.messages.publish.PublishExecuteResult;
import org.dflib.jjava.jupyter.messages.reply.ErrorReply;
import org.dflib.jjava.jupyter.messages.reply.ExecuteReply;
import org.dflib.jjava.jupyter.messages.request.ExecuteRequest;
import org.dflib.jjava.jupyter.messages.request.HistoryRequest;
import org.dflib.jjava.jupyter.messages.request.InterruptRequest;
import org.dflib.jjava.jupyter.messages.request.KernelInfoRequest;

/**
 * The ane4j Jupyter kernel: JShell cells on jjava-jupyter's protocol layer. This class is the only adapter to the
 * jjava base classes, and it wires the parts, each in its own class with one job:
 * <ul>
 *   <li>the protocol: this BaseKernel subclass's handlers (execute, complete, inspect, is_complete, interrupt,
 *       shutdown), what they fix in jjava 1.0-a6 ({@link ProtocolFixes}), the connection's read loops
 *       ({@link KernelConnection});</li>
 *   <li>the cell queue ({@link CellQueue}): the cell evaluated while the shell socket is read, requests held meanwhile or
 *       answered at once, abort after an error;</li>
 *   <li>the cell runner ({@link CellRunner}): a magic cell or Java in JShell ({@link JShellEvaluator});</li>
 *   <li>the one route of magics ({@link MagicDispatch}), which the runner, Java code and the queue's at-once answers
 *       all take.</li>
 * </ul>
 * Everything ane4j-specific (magics, displays, the training API) comes in through {@link Ane4jExtension}.
 * Started by Jupyter with the connection file: {@code java -cp ane4j.jar:lib/* ane4j.notebook.JupyterKernel FILE}.
 */
public final class JupyterKernel extends BaseKernel {
    private final JShellEvaluator evaluator;
    /** %maven's resolver; its private working folder is removed at shutdown (and by a shutdown hook on any exit). */
    private final MavenResolver maven = new MavenResolver();
    private final ProtocolFixes.KernelIO kio;
    private final MagicDispatch magics;
    private final CellRunner cells;
    private final CellQueue queue;
    /** The execution count of the cell that runs now. */
    private volatile int cell;

    private JupyterKernel(JShellEvaluator evaluator, ProtocolFixes.KernelIO io, boolean extensions) {
        super("ane4j", AneMagics.version(), languageInfo(), List.of(new HelpLink("ane4j", "https://github.com/ane4j/ane4j")),
                null, io, new CommManager(), new Renderer(),
                new MagicParser(MagicDispatch.LINE_MAGIC_START, MagicDispatch.CELL_MAGIC_START, new MagicDispatch.Transpiler()),
                new MagicsRegistry(), extensions, new StringStyler.Builder().addPrimaryStyle(TextColor.BOLD_RESET_FG)
                        .addSecondaryStyle(TextColor.BOLD_RED_FG).addHighlightStyle(TextColor.BOLD_RESET_FG).build());
        this.evaluator = evaluator;
        this.kio = io;
        this.magics = new MagicDispatch(this);
        this.cells = new CellRunner(evaluator, magics, magicParser::resolveMagics, () -> cell);
        this.queue = new CellQueue(magics::answerAtOnce, executionCount::getAndIncrement);
        Runtime.getRuntime().addShutdownHook(new Thread(maven::close, "ane4j-maven-cleanup"));
    }

    /** A kernel with the core magics; {@link #onStartup()} then installs extensions (ane4j's among them). */
    public static JupyterKernel create(boolean extensions) {
        List<String> opts = new ArrayList<>();
        String extra = System.getenv("ANE4J_COMPILER_OPTS");
        if (extra != null && !extra.isBlank()) opts.addAll(MagicRegistry.splitArgs(extra));
        JupyterKernel k = new JupyterKernel(new JShellEvaluator(opts), new ProtocolFixes.KernelIO(), extensions);
        new MagicRegistry().add(new CoreMagics(k, k.maven)).installInto(k, false);
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
        CellLogHandler.install();   // library log lines (backend and BLAS choice) as one line each in the cell
        KernelConnectionProperties props = KernelConnectionProperties.parse(Files.readString(Path.of(args[0])));
        KernelConnection connection = new KernelConnection(props);
        JupyterKernel kernel = create(!"0".equals(System.getenv("ANE4J_LOAD_EXTENSIONS")));
        kernel.queue.connect(connection.cellQueueShell());
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
        kernel.queue.close();
        System.exit(0);
    }

    /** An exit the kernel could not refuse: the running cell says why the kernel goes ({@link ExitNotice}). */
    void noticeUnrefusedExit() {
        ShellReplyEnvironment env = queue.runningCell();
        if (!queue.closing() && env != null) ExitNotice.tell(env, cell);
    }

    /** Compiles the startup imports in the background so the first cell does not pay for JShell's first compile. */
    void warmUp() {
        Thread t = new Thread(evaluator::warmUp, "ane4j-warmup");
        t.setDaemon(true);
        t.start();
    }

    // ---- execute: the cell queue around the cell runner

    @Override
    public Object evalRaw(String code) {
        return cells.run(code);
    }

    /** Java code a magic wants evaluated (bindings, %load): now, or after the cell when a snippet runs ({@link CellRunner#evalForMagic}). */
    Object evalAfterMagic(String code) {
        return cells.evalForMagic(code);
    }

    @Override
    public DisplayData eval(String code) {
        Object r = evalRaw(code);
        if (r == null || r instanceof DisplayHandle) return null;
        return r instanceof DisplayData d ? d : getRenderer().render(r);
    }

    /** Like the base handler, but the cell runs through the {@link CellQueue}, and errors carry the real exception name and our short traceback. */
    @Override
    protected synchronized void handleExecuteRequest(ShellReplyEnvironment env, Message<ExecuteRequest> message) {
        if (queue.abortIfQueued(env, message)) return;
        commManager.setMessageContext(message);
        ExecuteRequest request = message.getContent();
        int count = executionCount.getAndIncrement();
        cell = count;
        env.setBusyDeferIdle();
        env.publish(new PublishExecuteInput(request.getCode(), count));
        replaceOutputStreams(env);
        kio.attach(env);
        env.defer(() -> kio.detach(env));
        kio.stdinEnabled(request.isStdinEnabled());
        try {
            DisplayData out = queue.evaluate(env, () -> eval(request.getCode()));
            if (out != null) env.publish(new PublishExecuteResult(count, out));
            env.defer().reply(new ExecuteReply(count, Collections.emptyMap()));
        } catch (Exception e) {
            CellError err = CellError.of(e);
            env.publish(new PublishError(err.ename(), err.evalue(), err.traceback()));
            ErrorReply reply = new ErrorReply(err.ename(), err.evalue(), err.traceback());
            reply.setExecutionCount(count);
            env.defer().replyError(ExecuteReply.MESSAGE_TYPE.error(), reply);
            // as IPython: a failed cell aborts the cells queued behind it (Run All stops there), unless the frontend sent
            // stop_on_error false (nbclient does for a cell tagged raises-exception, and with --allow-errors)
            queue.failed(request.shouldStopOnError());
        }
        queue.finished(env);
    }

    @Override
    public List<String> formatError(Throwable e) {
        return CellError.of(e).traceback();
    }

    // ---- completion, inspection, is_complete, interrupt

    @Override
    public ReplacementOptions complete(String code, int at) {
        ReplacementOptions magicName = magics.completeName(code, at);
        if (magicName != null) return magicName;
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
        String magic = MagicDispatch.isComplete(code);
        return magic != null ? magic : evaluator.isComplete(code);
    }

    @Override
    public void interrupt() {
        Notebook.interruptHooks();
        evaluator.interrupt();
    }

    // ---- the handlers whose jjava replies lack "status"

    @Override
    protected void handleKernelInfoRequest(ShellReplyEnvironment env, Message<KernelInfoRequest> message) {
        env.setBusyDeferIdle();
        env.reply(new ProtocolFixes.KernelInfoOk(name, version, getLanguageInfo(), getBanner(), getHelpLinks()));
    }

    @Override
    protected void handleHistoryRequest(ShellReplyEnvironment env, Message<HistoryRequest> message) {
        env.setBusyDeferIdle();
        env.reply(new ProtocolFixes.HistoryOk());
    }

    @Override
    protected void handleInterruptRequest(ShellReplyEnvironment env, Message<InterruptRequest> message) {
        env.setBusyDeferIdle();
        env.defer().reply(new ProtocolFixes.InterruptOk());
        interrupt();
    }

    @Override
    public String getBanner() {
        return "Java " + Runtime.version() + " :: ane4j " + version + " — %lsmagic lists the magics, %ane shows the backend";
    }

    @Override
    public void onShutdown(boolean restarting) {
        queue.close();
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

    /** The one route of magics: run them, complete their names, list them. */
    MagicDispatch magics() {
        return magics;
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
}
