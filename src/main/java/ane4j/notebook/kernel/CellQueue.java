package ane4j.notebook.kernel;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Deque;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntSupplier;
import org.dflib.jjava.jupyter.channels.ShellReplyEnvironment;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;
import org.dflib.jjava.jupyter.messages.Message;
import org.dflib.jjava.jupyter.messages.publish.PublishExecuteInput;
import org.dflib.jjava.jupyter.messages.publish.PublishExecuteResult;
import org.dflib.jjava.jupyter.messages.reply.ExecuteReply;
import org.dflib.jjava.jupyter.messages.request.ExecuteRequest;

/**
 * What happens to the shell's requests around a running cell (the kernel calls it from its execute handler, on the
 * shell thread):
 * <ul>
 *   <li>the cell is evaluated on its own thread ({@code ane4j-eval}) while the shell thread keeps reading the shell
 *       socket ({@link #evaluate});</li>
 *   <li>a request read meanwhile is answered at once when {@link AtOnce} has an answer for it (the kernel's: the
 *       magics that say so, {@code %train stop} and {@code %train status} during a run); any other is held and handled in arrival order
 *       right after the cell, before anything still on the socket ({@link #finished});</li>
 *   <li>after a cell failed with {@code stop_on_error}, the execute requests sent before the failure are aborted, as
 *       IPython does: Run All stops at the first error ({@link #failed}, {@link #abortIfQueued}).</li>
 * </ul>
 * It knows the Jupyter messages but nothing of ane4j, so its tests need neither a client nor a kernel (CellQueueTest).
 */
public final class CellQueue {
    /** The shell socket as the queue uses it; only the shell thread calls it. */
    public interface Shell {
        /** A request waits on the socket. */
        boolean hasRequest();

        /** The next request, or null when it was dropped (forged, malformed). */
        Message<?> read();

        /** The reply environment for a request read here. */
        ShellReplyEnvironment replyEnv(Message<?> request);

        /** Handles a request as the shell loop would have: its handler, its deferrals, shutdown when it asks. */
        void handle(Message<?> request);
    }

    /** Cells that may be answered while another cell runs. */
    public interface AtOnce {
        /**
         * What the cell {@code code} shows when answered now, or null when it must wait its turn. {@code count} hands
         * out the cell's execution count (the same one each time it is asked); an answer that declines does not ask.
         */
        DisplayData answer(String code, IntSupplier count);
    }

    private final AtOnce atOnce;
    private final IntSupplier nextCount;
    private volatile Shell shell;
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
    private volatile ShellReplyEnvironment runningCell;
    private volatile boolean closing;

    /** {@code nextCount} hands out execution counts (the kernel's counter), also to cells answered at once. */
    public CellQueue(AtOnce atOnce, IntSupplier nextCount) {
        this.atOnce = atOnce;
        this.nextCount = nextCount;
    }

    /** The shell socket to read while a cell runs; without one (a kernel without connection) nothing is read. */
    public void connect(Shell shell) {
        this.shell = shell;
    }

    /** The kernel is going: the sockets close under a running cell, which is no error. */
    public void close() {
        closing = true;
    }

    public boolean closing() {
        return closing;
    }

    /** The environment of the cell that runs now, or null. */
    public ShellReplyEnvironment runningCell() {
        return runningCell;
    }

    // ---- abort after an error

    /**
     * True when {@code request} was aborted (replied "aborted") because it was sent before a cell failed with
     * stop_on_error; the abort ends with the first request sent later, or when nothing waits any more.
     */
    public boolean abortIfQueued(ShellReplyEnvironment env, Message<?> request) {
        if (abortSentBefore == null) return false;
        if (ProtocolFixes.sentBefore(request, abortSentBefore)) {
            ProtocolFixes.abort(env);
            if (!requestsWaiting()) abortSentBefore = null;
            return true;
        }
        abortSentBefore = null;
        return false;
    }

    /** The running cell failed: with {@code stopOnError} the requests waiting now are aborted when their turn comes. */
    public void failed(boolean stopOnError) {
        if (stopOnError && requestsWaiting()) abortSentBefore = Instant.now();
    }

    /** Requests are waiting: held while the cell ran, or on the shell socket (called on the shell thread, which owns the socket). */
    private boolean requestsWaiting() {
        Shell s = shell;
        return !held.isEmpty() || s != null && s.hasRequest();
    }

    // ---- the running cell

    /**
     * Evaluates the cell of {@code env} on the eval thread while this (the shell) thread keeps reading the shell
     * socket: what {@link AtOnce} answers is answered now, every other request is held for {@link #finished}.
     */
    public <T> T evaluate(ShellReplyEnvironment env, Callable<T> cell) throws Exception {
        runningCell = env;
        env.defer(() -> runningCell = null);
        Future<T> result = evalThread.submit(cell);
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
        Shell s = shell;
        if (s == null) return;
        try {
            while (s.hasRequest()) {
                Message<?> m = s.read();   // null: dropped (forged, malformed)
                if (m != null && !answerAtOnce(s, m)) held.add(m);
            }
        } catch (RuntimeException e) {
            if (!closing) throw e;   // shutting down: the sockets are closed under the running cell
        }
    }

    @SuppressWarnings("unchecked")
    private boolean answerAtOnce(Shell s, Message<?> m) {
        if (!ExecuteRequest.MESSAGE_TYPE.equals(m.getHeader().getType())) return false;
        String code = ((Message<ExecuteRequest>) m).getContent().getCode();
        ShellReplyEnvironment running = runningCell;
        if (running == null) return false;
        int[] drawn = {-1};
        IntSupplier count = () -> drawn[0] >= 0 ? drawn[0] : (drawn[0] = nextCount.getAsInt());
        DisplayData answer = atOnce.answer(code, count);
        if (answer == null) return false;
        ShellReplyEnvironment env = s.replyEnv(m);
        env.setStatusBusy();
        env.publish(new PublishExecuteInput(code, count.getAsInt()));
        env.publish(new PublishExecuteResult(count.getAsInt(), answer));
        env.reply(new ExecuteReply(count.getAsInt(), Collections.emptyMap()));
        env.setStatusIdle();
        // a frontend takes any idle for the whole kernel's: the running cell still runs
        running.setStatusBusy();
        return true;
    }

    /**
     * The cell of {@code env} has ended (replied): the requests that came while it ran go next, in order, before
     * anything still on the socket. Their own execute handling does not recurse into this.
     */
    public void finished(ShellReplyEnvironment env) {
        if (dispatchingHeld || held.isEmpty()) return;
        env.resolveDeferrals();
        dispatchingHeld = true;
        try {
            for (Message<?> m; (m = held.poll()) != null; ) shell.handle(m);
        } finally {
            dispatchingHeld = false;
        }
    }
}
