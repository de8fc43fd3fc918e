package ane4j.worker;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/** One worker JVM seen from the supervisor: its process, the frame channel, requests in flight, and how it ended. */
final class WorkerProcess {
    /** Receives what the worker sends besides replies, and its death. */
    interface Events {
        void onEvent(WorkerProcess w, Protocol.Frame f);

        void onDeath(WorkerProcess w, String cause);
    }

    /** The worker went away while a request was in flight. */
    static final class DiedException extends WorkerException {
        DiedException(String cause) { super(cause); }
    }

    private static final int TAIL = 12;
    private static final String INCUBATOR_WARNING = "WARNING: Using incubator modules";

    final Process process;
    final long pid;
    private final DataOutputStream out;
    private final DataInputStream in;
    private final Events events;
    private final Map<Integer, CompletableFuture<Protocol.Frame>> pending = new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger();
    private final CompletableFuture<Protocol.Frame> ready = new CompletableFuture<>();
    private final CompletableFuture<String> death = new CompletableFuture<>();
    private final Deque<String> stderrTail = new ArrayDeque<>();
    private volatile String exitReason;
    volatile boolean quiet;           // a restarted worker's start-up chatter is kept for errors, not shown
    volatile boolean madeProgress;
    String backend;
    long compileBudget;

    private WorkerProcess(Process process, Events events, Consumer<String> log, boolean quiet) {
        this.process = process;
        this.quiet = quiet;
        this.pid = process.pid();
        this.events = events;
        this.out = new DataOutputStream(new BufferedOutputStream(process.getOutputStream(), 1 << 16));
        this.in = new DataInputStream(new BufferedInputStream(process.getInputStream(), 1 << 16));
        Thread.ofPlatform().daemon().name("ane4j-worker-" + pid + "-stderr").start(() -> forwardStderr(log));
        Thread.ofPlatform().daemon().name("ane4j-worker-" + pid + "-reader").start(this::readLoop);
    }

    /**
     * Starts the worker and waits for its READY frame. @throws WorkerException naming why it did not start
     *
     * @param startupHint where the user changes the worker's JVM options, named when it does not start
     */
    static WorkerProcess start(List<String> command, byte[] startFrame, Events events, Consumer<String> log, Duration timeout, boolean quiet, String startupHint) {
        Process p;
        try {
            p = new ProcessBuilder(command).start();
        } catch (IOException e) {
            throw new WorkerException("[worker] cannot run " + command.getFirst() + ": " + e.getMessage());
        }
        WorkerProcess w = new WorkerProcess(p, events, log, quiet);
        w.post(Protocol.START, startFrame);   // the backend's settings: the worker reads them before anything else
        try {
            CompletableFuture.anyOf(w.ready, w.death).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            w.kill();
            throw new WorkerException("[worker] the worker JVM did not report ready within " + timeout.toSeconds() + " s" + w.tail());
        } catch (InterruptedException e) {
            w.kill();
            Thread.currentThread().interrupt();
            throw new WorkerException("[worker] interrupted while starting the worker");
        } catch (ExecutionException e) {
            throw new AssertionError(e);
        }
        if (!w.ready.isDone()) {
            throw new WorkerException("[worker] the worker JVM did not start: it " + w.death.join() + w.tail()
                    + "; check " + startupHint);
        }
        Protocol.Reader r = w.ready.join().reader();
        r.i64();
        w.backend = r.str();
        w.compileBudget = r.i64();
        return w;
    }

    /** Sends a request and waits for its reply. @throws WorkerException for an ERROR reply, DiedException, or a timeout */
    Protocol.Frame call(byte type, byte[] body, Duration timeout) throws TimeoutException {
        return call(newId(), type, body, timeout);
    }

    /** {@link #call} with an id from {@link #newId} (training events carry their TRAIN request's id). */
    Protocol.Frame call(int id, byte type, byte[] body, Duration timeout) throws TimeoutException {
        CompletableFuture<Protocol.Frame> f = new CompletableFuture<>();
        pending.put(id, f);
        if (death.isDone()) pending.remove(id).completeExceptionally(new DiedException(death.join()));
        else send(id, type, body);
        try {
            Protocol.Frame reply = f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (reply.type() == Protocol.ERROR) throw new WorkerException(reply.reader().str());
            return reply;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof WorkerException we) throw we;
            throw new WorkerException("[worker] " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new WorkerException("[worker] interrupted while waiting for the worker");
        } finally {
            pending.remove(id);
        }
    }

    /** Sends a request without waiting for its reply (releases). */
    void post(byte type, byte[] body) {
        if (!death.isDone()) send(ids.incrementAndGet(), type, body);
    }

    int newId() { return ids.incrementAndGet(); }

    private void send(int id, byte type, byte[] body) {
        synchronized (out) {
            try {
                Protocol.write(out, id, type, body);
            } catch (IOException e) {
                // the worker is gone: the reader sees end of stream and fails every pending request with the cause
            }
        }
    }

    boolean isAlive() { return !death.isDone(); }

    /** Why the worker ended (blocks until it has). */
    String awaitDeath() { return death.join(); }

    void kill() { process.destroyForcibly(); }

    private void readLoop() {
        String problem = null;
        try {
            Protocol.Frame f;
            while ((f = Protocol.read(in)) != null) {
                switch (f.type()) {
                    case Protocol.READY -> ready.complete(f);
                    case Protocol.OK, Protocol.ERROR -> {
                        CompletableFuture<Protocol.Frame> p = pending.get(f.id());
                        if (p != null) p.complete(f);
                    }
                    case Protocol.EXITING -> {
                        Protocol.Reader r = f.reader();
                        r.i32();
                        exitReason = r.str();
                    }
                    default -> events.onEvent(this, f);
                }
            }
        } catch (IOException e) {
            problem = e.getMessage();
            kill();
        } catch (RuntimeException e) {
            problem = "[worker] event handling failed: " + e;
            kill();
        }
        String cause;
        try {
            int status = process.waitFor(10, TimeUnit.SECONDS) ? process.exitValue() : -1;
            if (status < 0) {
                kill();
                process.waitFor();
                status = process.exitValue();
            }
            cause = exitReason != null ? exitReason : problem != null ? problem : ExitCode.describe(status);
        } catch (InterruptedException e) {
            cause = "lost (interrupted)";
        }
        death.complete(cause);
        DiedException died = new DiedException(cause);
        for (CompletableFuture<Protocol.Frame> p : pending.values()) p.completeExceptionally(died);
        events.onDeath(this, cause);
    }

    private void forwardStderr(Consumer<String> log) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                synchronized (stderrTail) {
                    stderrTail.addLast(line);
                    if (stderrTail.size() > TAIL) stderrTail.removeFirst();
                }
                if (!quiet && !line.startsWith(INCUBATOR_WARNING)) log.accept(line);
            }
        } catch (IOException ignored) {
            // the worker is gone
        }
    }

    /** The last stderr lines, for start-up errors. */
    private String tail() {
        try {
            process.waitFor(2, TimeUnit.SECONDS);   // let the stderr reader catch up with a JVM that refused to start
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (stderrTail) {
            List<String> lines = stderrTail.stream().filter(l -> !l.isBlank() && !l.startsWith("WARNING:")).toList();
            return lines.isEmpty() ? "" : ": " + String.join(" | ", lines.subList(Math.max(0, lines.size() - 3), lines.size()));
        }
    }
}
