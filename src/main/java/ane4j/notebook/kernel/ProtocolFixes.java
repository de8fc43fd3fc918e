package ane4j.notebook.kernel;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.List;
import org.dflib.jjava.jupyter.channels.ShellReplyEnvironment;
import org.dflib.jjava.jupyter.kernel.HelpLink;
import org.dflib.jjava.jupyter.kernel.JupyterIO;
import org.dflib.jjava.jupyter.kernel.LanguageInfo;
import org.dflib.jjava.jupyter.messages.Header;
import org.dflib.jjava.jupyter.messages.Message;
import org.dflib.jjava.jupyter.messages.reply.ExecuteReply;
import org.dflib.jjava.jupyter.messages.reply.HistoryReply;
import org.dflib.jjava.jupyter.messages.reply.InterruptReply;
import org.dflib.jjava.jupyter.messages.reply.KernelInfoReply;

/**
 * What jjava-jupyter 1.0-a6 gets wrong or leaves out of the Jupyter protocol, fixed on this side: replies without
 * {@code "status"} (jupyter_kernel_test's schema check refuses them: tools/kernel_conformance_test.py), no "aborted" execute
 * reply, a header date parser that refuses the microseconds every client sends, and a JupyterIO whose attach/detach
 * calls are protected. The kernel's handlers use these; nothing here holds state.
 */
public final class ProtocolFixes {
    private ProtocolFixes() {}

    // ---- replies that jjava-jupyter 1.0-a6 sends without "status"

    public static final class KernelInfoOk extends KernelInfoReply {
        @SuppressWarnings("unused") private final String status = "ok";

        public KernelInfoOk(String implementation, String version, LanguageInfo info, String banner, List<HelpLink> links) {
            super(Header.PROTOCOL_VERISON, implementation, version, info, banner, links);
        }
    }

    public static final class HistoryOk extends HistoryReply {
        @SuppressWarnings("unused") private final String status = "ok";

        public HistoryOk() {
            super(List.of());
        }
    }

    public static final class InterruptOk extends InterruptReply {
        @SuppressWarnings("unused") private final String status = "ok";
    }

    // ---- the execute reply jjava has no type for

    /** IPython's reply to an execute request aborted after an earlier error: status "aborted", no execution count. */
    public static final class Aborted {
        @SuppressWarnings("unused") private final String status = "aborted";
    }

    /** Replies "aborted" to the execute request of {@code env} (busy, then the reply, then idle). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static void abort(ShellReplyEnvironment env) {
        env.setBusyDeferIdle();
        env.defer().reply(new Message(env.getContext(), ExecuteReply.MESSAGE_TYPE, new Aborted()));
    }

    // ---- header dates

    /** True when the client sent the request before {@code instant} (a request without a readable date counts as queued). */
    public static boolean sentBefore(Message<?> message, Instant instant) {
        var ts = message.getHeader().getTimestamp();
        Instant sent = ts == null ? null : parseDate(ts.getDateString());
        return sent == null || !sent.isAfter(instant);
    }

    /** A Jupyter header date: ISO 8601 with microseconds, usually with Z or an offset (jjava's own parser refuses microseconds). */
    public static Instant parseDate(String s) {
        if (s == null) return null;
        try {
            return OffsetDateTime.parse(s).toInstant();
        } catch (DateTimeParseException e) {
            try {
                return LocalDateTime.parse(s).toInstant(ZoneOffset.UTC);
            } catch (DateTimeParseException e2) {
                return null;
            }
        }
    }

    // ---- output streams

    /** jjava's JupyterIO with the attach/detach calls the kernel's execute handler needs. */
    public static final class KernelIO extends JupyterIO {
        public KernelIO() {
            super(StandardCharsets.UTF_8);
        }

        public void attach(ShellReplyEnvironment env) {
            setEnv(env);
        }

        public void detach(ShellReplyEnvironment env) {
            retractEnv(env);
        }

        public void stdinEnabled(boolean enabled) {
            setJupyterInEnabled(enabled);
        }
    }
}
