package ane4j.notebook;

import ane4j.notebook.kernel.CellQueue;
import java.io.IOException;
import java.nio.channels.Selector;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.dflib.jjava.jupyter.channels.JupyterConnection;
import org.dflib.jjava.jupyter.channels.JupyterSocket;
import org.dflib.jjava.jupyter.channels.ShellChannel;
import org.dflib.jjava.jupyter.channels.ShellHandler;
import org.dflib.jjava.jupyter.channels.ShellReplyEnvironment;
import org.dflib.jjava.jupyter.kernel.KernelConnectionProperties;
import org.dflib.jjava.jupyter.messages.Message;
import org.dflib.jjava.jupyter.messages.MessageContext;
import org.dflib.jjava.jupyter.messages.publish.PublishStatus;
import org.dflib.jjava.jupyter.messages.reply.InputReply;
import org.dflib.jjava.jupyter.messages.request.InputRequest;
import org.zeromq.ZMQ;

/**
 * jjava-jupyter 1.0-a6's connection with the kernel's own read loops for the shell and control ports and its own read of
 * stdin, all through {@link WireReader}: a forged, truncated, malformed or replayed message is dropped and logged, and the
 * loop goes on (jjava's loop thread died on the first badly signed message; docs/reliability.md, K6/K7). The heartbeat
 * is the kernel's own echo loop too (jjava's died on a multipart ping). jjava's sockets are kept, bound here without
 * starting jjava's loops; iopub (a PUB socket: it reads nothing) is jjava's. Every socket is bound with a maximum message
 * size, so an oversized frame disconnects its sender instead of filling the heap.
 */
final class KernelConnection extends JupyterConnection {
    private final KernelConnectionProperties props;
    private final WireReader reader;
    private volatile boolean running;
    private Thread shellLoop, controlLoop, heartbeatLoop;
    private final AtomicLong dropped = new AtomicLong();

    KernelConnection(KernelConnectionProperties props) throws java.security.GeneralSecurityException {
        super(props);
        this.props = props;
        this.reader = new WireReader(props.createHMACGenerator(), this::logDropped);
    }

    /** The shell socket as the cell queue reads it while a cell runs (the shell thread owns the socket). */
    CellQueue.Shell cellQueueShell() {
        ShellChannel socket = (ShellChannel) shell;
        return new CellQueue.Shell() {
            @Override
            public boolean hasRequest() {
                return (socket.getEvents() & ZMQ.Poller.POLLIN) != 0;
            }

            @Override
            public Message<?> read() {
                return reader.read(socket, "shell");
            }

            @Override
            public ShellReplyEnvironment replyEnv(Message<?> request) {
                return prepareReplyEnv(socket, request);
            }

            @Override
            public void handle(Message<?> request) {
                KernelConnection.this.handle(socket, request);
            }
        };
    }

    /** Messages dropped so far (all channels). */
    long dropped() {
        return dropped.get();
    }

    /** One line on stderr (Jupyter's log) for each of the first 20 drops, then one for every 1000th: a flood stays readable. */
    private void logDropped(String channel, String why) {
        long n = dropped.incrementAndGet();
        if (n <= 20 || n % 1000 == 0)
            System.err.println("[notebook] dropped message " + n + " on the " + channel + " port: " + why
                    + "; the kernel goes on (a client with the wrong key, or another process on this machine?)");
    }

    @Override
    public void connect() {
        long max = WireReader.maxMessageBytes();
        for (JupyterSocket s : List.of(heartbeat, shell, control, stdin, iopub)) s.setMaxMsgSize(max);
        iopub.bind(props);
        stdin.bind(props);
        shell.bind(address(props.getShellPort()));
        control.bind(address(props.getControlPort()));
        heartbeat.bind(address(props.getHbPort()));
        running = true;
        shellLoop = loop(shell, "shell", "ane4j-shell");
        controlLoop = loop(control, "control", "ane4j-control");
        heartbeatLoop = heartbeat();
        getIOPub().sendMessage(new Message<>(null, PublishStatus.MESSAGE_TYPE, PublishStatus.STARTING));
    }

    private String address(int port) {
        return props.getTransport() + "://" + props.getIp() + ":" + port;
    }

    private Thread loop(ShellChannel socket, String channel, String name) {
        Thread t = new Thread(() -> {
            try (Selector selector = Selector.open()) {
                ZMQ.PollItem[] items = {new ZMQ.PollItem(socket, ZMQ.Poller.POLLIN)};
                while (running) {
                    if (ZMQ.poll(selector, items, 100) <= 0 || !items[0].isReadable()) continue;
                    Message<?> m = reader.read(socket, channel);
                    if (m != null) handle(socket, m);
                }
            } catch (IOException e) {
                System.err.println("[notebook] the " + channel + " loop cannot poll: " + e.getMessage());
            } catch (RuntimeException e) {
                if (running) {   // a closed socket during shutdown ends the loop quietly
                    System.err.println("[notebook] the " + channel + " loop stopped: " + e);
                    throw e;
                }
            }
        }, name);
        t.start();
        return t;
    }

    /**
     * The heartbeat: echoes each message back whole, as ipykernel's heartbeat device does. jjava's echoed only the first
     * frame of a multipart message, and the REP socket's refusal of that send killed its heartbeat thread.
     */
    private Thread heartbeat() {
        Thread t = new Thread(() -> {
            try (Selector selector = Selector.open()) {
                ZMQ.PollItem[] items = {new ZMQ.PollItem(heartbeat, ZMQ.Poller.POLLIN)};
                while (running) {
                    if (ZMQ.poll(selector, items, 100) <= 0 || !items[0].isReadable()) continue;
                    List<byte[]> frames = new java.util.ArrayList<>();
                    synchronized (heartbeat) {
                        do {
                            byte[] f = heartbeat.recv(0);
                            if (f != null && frames.size() < 16) frames.add(f);
                        } while (heartbeat.hasReceiveMore());
                        for (int i = 0; i < frames.size(); i++) {
                            boolean more = i < frames.size() - 1;
                            if (!(more ? heartbeat.sendMore(frames.get(i)) : heartbeat.send(frames.get(i)))) break;
                        }
                    }
                }
            } catch (IOException e) {
                System.err.println("[notebook] the heartbeat cannot poll: " + e.getMessage());
            } catch (RuntimeException e) {
                if (running) System.err.println("[notebook] the heartbeat stopped: " + e);
            }
        }, "ane4j-heartbeat");
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** As jjava's ShellChannel loop: the handler of the type, its deferrals, shutdown when it marks the environment. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    void handle(ShellChannel socket, Message<?> m) {
        ShellHandler handler = getHandler(m.getHeader().getType());
        if (handler == null) {
            System.err.println("[notebook] no handler for a " + m.getHeader().getType().getName() + " message; ignored");
            return;
        }
        ShellReplyEnvironment env = prepareReplyEnv(socket, m);
        try {
            handler.handle(env, m);
        } catch (Exception e) {
            System.err.println("[notebook] handling " + m.getHeader().getType().getName() + " failed: " + e);
        } finally {
            env.resolveDeferrals();
        }
        if (env.isMarkedForShutdown()) close();
    }

    /** Reply environments whose stdin read goes through {@link WireReader} (jjava's threw on a forged input_reply). */
    @Override
    public ShellReplyEnvironment prepareReplyEnv(ShellChannel socket, MessageContext context) {
        return new ShellReplyEnvironment(socket, stdin, iopub, context) {
            @Override
            public String readFromStdIn(String prompt, boolean password) {
                stdin.sendMessage(new Message<>(getContext(), InputRequest.MESSAGE_TYPE, new InputRequest(prompt, password)));
                try (Selector selector = Selector.open()) {
                    ZMQ.PollItem[] items = {new ZMQ.PollItem(stdin, ZMQ.Poller.POLLIN)};
                    while (running) {
                        if (ZMQ.poll(selector, items, 100) <= 0 || !items[0].isReadable()) continue;
                        Message<?> m = reader.read(stdin, "stdin");
                        if (m == null) continue;
                        if (m.getContent() instanceof InputReply r) return r.getValue() + System.lineSeparator();
                        logDropped("stdin", "a " + m.getHeader().getType().getName() + " where an input_reply was expected");
                    }
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                throw new IllegalStateException("the kernel is shutting down");
            }
        };
    }

    @Override
    public void close() {
        running = false;
        for (Thread t : new Thread[] {shellLoop, controlLoop, heartbeatLoop}) {
            if (t != null && t != Thread.currentThread()) {
                try {
                    t.join(2000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        super.close();
    }

    @Override
    public void waitUntilClose() {
        for (Thread t : new Thread[] {shellLoop, controlLoop}) {
            if (t == null) continue;
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        super.waitUntilClose();
    }
}
