package ane4j.notebook.kernel;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.dflib.jjava.jupyter.channels.ShellReplyEnvironment;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;
import org.dflib.jjava.jupyter.kernel.display.mime.MIMEType;
import org.dflib.jjava.jupyter.messages.Header;
import org.dflib.jjava.jupyter.messages.KernelTimestamp;
import org.dflib.jjava.jupyter.messages.Message;
import org.dflib.jjava.jupyter.messages.publish.PublishExecuteInput;
import org.dflib.jjava.jupyter.messages.publish.PublishExecuteResult;
import org.dflib.jjava.jupyter.messages.publish.PublishStatus;
import org.dflib.jjava.jupyter.messages.reply.ExecuteReply;
import org.dflib.jjava.jupyter.messages.request.ExecuteRequest;
import org.dflib.jjava.jupyter.messages.request.KernelInfoRequest;
import org.junit.jupiter.api.Test;

/**
 * The cell queue without a Jupyter client or kernel: a fake shell socket and reply environments that log what they
 * would send. The cells synchronise on latches, never on time. The same behaviour over ZMQ: tools/kernel_stop_test.py
 * and tools/kernel_client_test.py (JupyterClientTest).
 */
class CellQueueTest {
    static final Instant T0 = Instant.parse("2026-12-06T04:00:00Z");

    /** What the kernel would have sent, one line a message: "request-id type detail". */
    final List<String> log = Collections.synchronizedList(new ArrayList<>());
    /** Counted down when the reply to the request "stop" has been sent. */
    final CountDownLatch stopReplied = new CountDownLatch(1);
    final FakeShell shell = new FakeShell();
    final AtomicInteger counts = new AtomicInteger(7);
    /** Answers "stop" at once, makes every other cell wait. */
    final CellQueue queue = new CellQueue((code, count) -> code.equals("stop") ? new DisplayData("stopped by cell " + count.getAsInt()) : null,
            counts::getAndIncrement);

    @Test
    void aCommandIsAnsweredWhileTheCellRunsAndOtherRequestsWaitTheirTurnInOrder() throws Exception {
        queue.connect(shell);
        RecordingEnv running = new RecordingEnv(execute("cell", "long", T0));
        String out = queue.evaluate(running, () -> {
            // requests a frontend sends while the cell runs: two cells around the stop command, and a kernel_info
            shell.socket.add(execute("a", "1 + 1", T0));
            shell.socket.add(execute("stop", "stop", T0));
            shell.socket.add(kernelInfo("info"));
            shell.socket.add(execute("b", "2 + 2", T0));
            assertTrue(stopReplied.await(60, TimeUnit.SECONDS), "the stop cell is answered while this cell still runs");
            return "done";
        });
        assertEquals("done", out);
        assertSame(running, queue.runningCell(), "the cell's environment until its deferrals resolve");
        assertEquals(List.of("stop status busy", "stop execute_input 7 stop", "stop execute_result 7 stopped by cell 7",
                "stop execute_reply ok 7", "stop status idle", "cell status busy"), log,
                "the stop cell answered in full, then the running cell busy again (a frontend takes any idle for the kernel's)");
        assertEquals(8, counts.get(), "the answered cell took one execution count");
        assertEquals(List.of(), shell.handled, "the other requests wait for the cell");

        queue.finished(running);
        assertEquals(List.of("a", "info", "b"), shell.handled, "then go in arrival order");
        assertNull(queue.runningCell(), "the cell's deferrals ran before the held requests");
        queue.finished(running);
        assertEquals(3, shell.handled.size(), "each held request once");
    }

    @Test
    void nothingIsAnsweredAtOnceWhenNoCellRunsAndNothingIsReadWithoutAShell() throws Exception {
        RecordingEnv env = new RecordingEnv(execute("cell", "x", T0));
        assertEquals(42, queue.evaluate(env, () -> 42), "without a shell socket the cell just runs");
        queue.finished(env);
        assertEquals(List.of(), log);
    }

    @Test
    void aFailedCellAbortsTheRequestsQueuedBehindItUntilTheQueueDrains() {
        queue.connect(shell);
        Message<ExecuteRequest> x = execute("x", "1", T0), z = execute("z", "2", T0);
        shell.socket.add(x);
        shell.socket.add(z);
        queue.failed(true);
        RecordingEnv envX = new RecordingEnv(shell.socket.poll());
        assertTrue(queue.abortIfQueued(envX, x));
        envX.resolveDeferrals();   // as the shell loop does after each handler
        RecordingEnv envZ = new RecordingEnv(shell.socket.poll());
        assertTrue(queue.abortIfQueued(envZ, z), "z waited too when the cell failed");
        envZ.resolveDeferrals();
        assertEquals(List.of("x status busy", "x execute_reply aborted", "x status idle",
                "z status busy", "z execute_reply aborted", "z status idle"), log, "aborted: busy, the reply, idle");
        log.clear();
        Message<ExecuteRequest> late = execute("late", "3", T0);
        assertFalse(queue.abortIfQueued(new RecordingEnv(late), late), "the queue had drained: a request after that runs");
        assertEquals(List.of(), log);
    }

    @Test
    void theAbortEndsAtTheFirstRequestSentAfterTheFailure() {
        queue.connect(shell);
        Message<ExecuteRequest> x = execute("x", "1", T0), after = execute("after", "2", Instant.now().plusSeconds(3600)),
                y = execute("y", "3", T0);
        shell.socket.add(x);
        shell.socket.add(after);
        shell.socket.add(y);
        queue.failed(true);
        assertTrue(queue.abortIfQueued(new RecordingEnv(shell.socket.poll()), x));
        assertFalse(queue.abortIfQueued(new RecordingEnv(shell.socket.poll()), after), "sent after the failure: runs");
        assertFalse(queue.abortIfQueued(new RecordingEnv(shell.socket.poll()), y), "and the abort is over");
    }

    @Test
    void noAbortWithoutStopOnErrorOrWithNothingWaiting() {
        queue.connect(shell);
        queue.failed(true);   // nothing waits
        Message<ExecuteRequest> x = execute("x", "1", T0);
        assertFalse(queue.abortIfQueued(new RecordingEnv(x), x));
        shell.socket.add(x);
        queue.failed(false);   // stop_on_error false (nbclient's raises-exception cells, --allow-errors)
        assertFalse(queue.abortIfQueued(new RecordingEnv(shell.socket.poll()), x));
        assertEquals(List.of(), log);
    }

    @Test
    void theCellsOwnFailureComesOutUnchanged() {
        RecordingEnv env = new RecordingEnv(execute("cell", "x", T0));
        IOException io = new IOException("disk");
        assertSame(io, assertThrows(IOException.class, () -> queue.evaluate(env, () -> { throw io; })));
        StackOverflowError so = new StackOverflowError();
        assertSame(so, assertThrows(StackOverflowError.class, () -> queue.evaluate(env, () -> { throw so; })));
    }

    @Test
    void aSocketClosedUnderTheRunningCellIsNoErrorWhenTheKernelCloses() throws Exception {
        java.util.concurrent.Semaphore polled = new java.util.concurrent.Semaphore(0);
        queue.connect(new FakeShell() {
            @Override
            public boolean hasRequest() {
                polled.release();
                throw new IllegalStateException("socket closed");
            }
        });
        RecordingEnv env = new RecordingEnv(execute("cell", "x", T0));
        assertThrows(IllegalStateException.class, () -> queue.evaluate(env, () -> {
            polled.acquire();
            return null;
        }), "while the kernel runs, a broken socket is an error");
        queue.close();
        assertEquals("ok", queue.evaluate(env, () -> {
            polled.acquire(2);   // the socket threw twice under this cell, and the cell still ends normally
            return "ok";
        }));
    }

    @Test
    void headerDatesWithMicrosecondsAndRequestsWithoutDates() {
        assertEquals(Instant.parse("2026-12-06T04:00:00.123456Z"), ProtocolFixes.parseDate("2026-12-06T04:00:00.123456Z"));
        assertEquals(Instant.parse("2026-12-06T03:00:00.123456Z"), ProtocolFixes.parseDate("2026-12-06T04:00:00.123456+01:00"));
        assertEquals(Instant.parse("2026-12-06T04:00:00.123456Z"), ProtocolFixes.parseDate("2026-12-06T04:00:00.123456"), "no zone: UTC");
        assertNull(ProtocolFixes.parseDate("yesterday"));
        assertNull(ProtocolFixes.parseDate(null));
        Message<ExecuteRequest> undated = new Message<>(new Header<>("u", "user", "s", null, ExecuteRequest.MESSAGE_TYPE, "5.3"), request("1"));
        assertTrue(ProtocolFixes.sentBefore(undated, T0), "a request without a readable date counts as queued");
        assertTrue(ProtocolFixes.sentBefore(execute("x", "1", T0), T0));
        assertFalse(ProtocolFixes.sentBefore(execute("x", "1", T0.plusNanos(1000)), T0));
    }

    // ---- fakes

    static ExecuteRequest request(String code) {
        return new ExecuteRequest(code, false, true, Map.of(), false, true);
    }

    /** An execute request with the date format Jupyter clients send (microseconds, Z). */
    static Message<ExecuteRequest> execute(String id, String code, Instant sent) {
        String date = java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'")
                .withZone(java.time.ZoneOffset.UTC).format(sent);
        return new Message<>(new Header<>(id, "user", "session", new KernelTimestamp(date), ExecuteRequest.MESSAGE_TYPE, "5.3"), request(code));
    }

    static Message<KernelInfoRequest> kernelInfo(String id) {
        return new Message<>(new Header<>(id, "user", "session", new KernelTimestamp("2026-12-06T04:00:00.000000Z"),
                KernelInfoRequest.MESSAGE_TYPE, "5.3"), new KernelInfoRequest());
    }

    /** A shell socket: what the test puts in is read; what the queue hands back is recorded by request id. */
    class FakeShell implements CellQueue.Shell {
        final ConcurrentLinkedDeque<Message<?>> socket = new ConcurrentLinkedDeque<>();
        final List<String> handled = new ArrayList<>();

        @Override
        public boolean hasRequest() {
            return !socket.isEmpty();
        }

        @Override
        public Message<?> read() {
            return socket.poll();
        }

        @Override
        public ShellReplyEnvironment replyEnv(Message<?> request) {
            return new RecordingEnv(request);
        }

        @Override
        public void handle(Message<?> request) {
            handled.add(request.getHeader().getId());
        }
    }

    /** A reply environment that logs its messages instead of sending them, deferred ones when its deferrals resolve. */
    class RecordingEnv extends ShellReplyEnvironment {
        private final String id;
        private boolean deferNext;

        RecordingEnv(Message<?> request) {
            super(null, null, null, request);
            this.id = request.getHeader().getId();
        }

        @Override
        public ShellReplyEnvironment defer() {
            deferNext = true;
            return this;
        }

        @Override
        public void publish(Message<?> m) {
            send(m);
        }

        @Override
        public void reply(Message<?> m) {
            send(m);
        }

        private void send(Message<?> m) {
            if (deferNext) {
                deferNext = false;
                defer(() -> log(m));
            } else {
                log(m);
            }
        }

        private void log(Message<?> m) {
            Object c = m.getContent();
            String detail = switch (c) {
                case PublishStatus s -> s.getState().toString().toLowerCase();
                case PublishExecuteInput in -> in.getCount() + " " + in.getCode();
                case PublishExecuteResult r -> r.getCount() + " " + r.getData(MIMEType.TEXT_PLAIN);
                case ExecuteReply r -> "ok " + r.getExecutionCount();
                case ProtocolFixes.Aborted a -> "aborted";
                default -> c.getClass().getSimpleName();
            };
            log.add(id + " " + m.getHeader().getType().getName() + " " + detail);
            if (id.equals("stop") && c instanceof ExecuteReply) stopReplied.countDown();
        }
    }
}
