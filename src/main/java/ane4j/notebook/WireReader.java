package ane4j.notebook;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import com.google.gson.reflect.TypeToken;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.SequencedSet;
import org.dflib.jjava.jupyter.kernel.ExpressionValue;
import org.dflib.jjava.jupyter.kernel.history.HistoryEntry;
import org.dflib.jjava.jupyter.messages.HMACGenerator;
import org.dflib.jjava.jupyter.messages.Header;
import org.dflib.jjava.jupyter.messages.KernelTimestamp;
import org.dflib.jjava.jupyter.messages.Message;
import org.dflib.jjava.jupyter.messages.MessageType;
import org.dflib.jjava.jupyter.messages.ReplyType;
import org.dflib.jjava.jupyter.messages.adapters.ExpressionValueAdapter;
import org.dflib.jjava.jupyter.messages.adapters.HeaderAdapter;
import org.dflib.jjava.jupyter.messages.adapters.HistoryEntryAdapter;
import org.dflib.jjava.jupyter.messages.adapters.HistoryRequestAdapter;
import org.dflib.jjava.jupyter.messages.adapters.KernelTimestampAdapter;
import org.dflib.jjava.jupyter.messages.adapters.MessageTypeAdapter;
import org.dflib.jjava.jupyter.messages.adapters.PublishStatusAdapter;
import org.dflib.jjava.jupyter.messages.adapters.ReplyTypeAdapter;
import org.dflib.jjava.jupyter.messages.publish.PublishStatus;
import org.dflib.jjava.jupyter.messages.request.HistoryRequest;
import org.zeromq.ZMQ;

/**
 * Reads one Jupyter wire-protocol message off a kernel socket, and drops (with one logged line) whatever is not a
 * well-formed message signed with the connection key. It replaces the read of jjava-jupyter 1.0-a6
 * ({@code JupyterSocket.readMessage}), which
 * <ul>
 *   <li>throws {@code SecurityException} on a bad signature, and that exception ends the channel's read loop: one
 *       message from any local process without the key stopped every later cell (docs/reliability.md, probe K6/K7);</li>
 *   <li>reads a fixed number of frames, so a truncated message took frames of the next (genuine) one;</li>
 *   <li>compares signatures with {@code String.equals} (not constant time) and accepts a replayed signed message.</li>
 * </ul>
 * What it does instead, as ipykernel's {@code Session.deserialize} does: it takes exactly the frames of one ZeroMQ
 * multipart message (ZeroMQ delivers them together), checks the HMAC over header, parent header, metadata and content
 * in constant time, refuses a signature it has already seen (the last 65536, ipykernel's digest history size), and only
 * then parses the JSON, with the same Gson type adapters jjava uses. Oversized frames never reach it: the sockets are
 * bound with a maximum message size ({@link #maxMessageBytes}), and ZeroMQ disconnects a peer that sends more.
 */
final class WireReader {
    static final byte[] DELIMITER = "<IDS|MSG>".getBytes(StandardCharsets.US_ASCII);
    /** ipykernel's Session.digest_history_size. */
    static final int REPLAY_HISTORY = 1 << 16;
    /** Frames kept of one message (identities + 6 + buffers); beyond this the rest is read and discarded. */
    static final int MAX_FRAMES = 4096;

    private static final java.lang.reflect.Type MAP = new TypeToken<Map<String, Object>>() {}.getType();

    private final HMACGenerator hmac;
    private final Gson gson;
    private final SequencedSet<String> seen = new LinkedHashSet<>();
    private final Log log;

    /** Where dropped messages are reported (the kernel's stderr, which Jupyter keeps in its log). */
    interface Log {
        void dropped(String channel, String why);
    }

    WireReader(HMACGenerator hmac, Log log) {
        this.hmac = hmac;
        this.log = log;
        // the same adapters, in the same order, as jjava-jupyter 1.0-a6's JupyterSocket (so messages parse the same)
        Gson replyGson = new GsonBuilder().registerTypeAdapter(HistoryEntry.class, HistoryEntryAdapter.INSTANCE)
                .registerTypeAdapter(ExpressionValue.class, ExpressionValueAdapter.INSTANCE).create();
        this.gson = new GsonBuilder().registerTypeAdapter(KernelTimestamp.class, KernelTimestampAdapter.INSTANCE)
                .registerTypeAdapter(Header.class, HeaderAdapter.INSTANCE)
                .registerTypeAdapter(MessageType.class, MessageTypeAdapter.INSTANCE)
                .registerTypeAdapter(PublishStatus.class, PublishStatusAdapter.INSTANCE)
                .registerTypeAdapter(HistoryRequest.class, HistoryRequestAdapter.INSTANCE)
                .registerTypeHierarchyAdapter(ReplyType.class, new ReplyTypeAdapter(replyGson)).create();
    }

    /** Largest frame a kernel socket accepts: ANE4J_KERNEL_MAX_MESSAGE_MB (default 256 MB). */
    static long maxMessageBytes() {
        String v = System.getenv("ANE4J_KERNEL_MAX_MESSAGE_MB");
        long mb = 256;
        if (v != null && !v.isBlank()) {
            try {
                mb = Math.max(1, Long.parseLong(v.strip()));
            } catch (NumberFormatException e) {
                System.err.println("[notebook] ANE4J_KERNEL_MAX_MESSAGE_MB=" + v + " is not a number; using 256");
            }
        }
        return mb << 20;
    }

    /**
     * Reads the frames of the one multipart message waiting on {@code socket} (call when it polls readable) and returns
     * it parsed, or null when it was dropped. Synchronised on the socket, as jjava's own reads and sends are.
     */
    Message<?> read(ZMQ.Socket socket, String channel) {
        List<byte[]> frames = new ArrayList<>();
        synchronized (socket) {
            byte[] f = socket.recv(0);
            if (f == null) return null;
            frames.add(f);
            while (socket.hasReceiveMore()) {
                f = socket.recv(0);
                if (frames.size() < MAX_FRAMES && f != null) frames.add(f);
            }
        }
        return parse(frames, channel);
    }

    /** The message of {@code frames}, or null (logged) when they are not a well-formed message signed with the key. */
    Message<?> parse(List<byte[]> frames, String channel) {
        int d = 0;
        while (d < frames.size() && !Arrays.equals(frames.get(d), DELIMITER)) d++;
        if (d == frames.size()) return drop(channel, "no <IDS|MSG> delimiter in its " + frames.size() + " frame(s)");
        if (frames.size() - d - 1 < 5)
            return drop(channel, "truncated: " + (frames.size() - d - 1) + " frame(s) after <IDS|MSG>, a message has at least 5");
        byte[] sig = frames.get(d + 1), header = frames.get(d + 2), parent = frames.get(d + 3), meta = frames.get(d + 4),
                content = frames.get(d + 5);
        String expected;
        synchronized (hmac) {
            expected = hmac.calculateSignature(header, parent, meta, content);
        }
        if (expected != null) {   // null: the connection has no key (signature_scheme without key), as jjava
            if (!MessageDigest.isEqual(expected.getBytes(StandardCharsets.US_ASCII), sig))
                return drop(channel, sig.length == 0 ? "unsigned (empty signature)" : "wrong HMAC signature");
            synchronized (seen) {
                if (!seen.add(expected)) return drop(channel, "a replay of a message already received (same signature)");
                if (seen.size() > REPLAY_HISTORY) seen.removeFirst();
            }
        }
        try {
            JsonElement h = JsonParser.parseString(utf8(header, "header"));
            if (!h.isJsonObject()) return drop(channel, "its header is not a JSON object");
            Header<?> hdr = gson.fromJson(h, Header.class);
            if (hdr == null || hdr.getType() == null) return drop(channel, "its header has no msg_type");
            Header<?> parentHeader = null;
            JsonElement p = JsonParser.parseString(utf8(parent, "parent header"));
            if (p.isJsonObject() && !p.getAsJsonObject().isEmpty()) parentHeader = gson.fromJson(p, Header.class);
            Map<String, Object> metadata = gson.fromJson(utf8(meta, "metadata"), MAP);
            JsonElement c = JsonParser.parseString(utf8(content, "content"));
            if (!c.isJsonObject()) return drop(channel, "its content is not a JSON object");
            Object body = gson.fromJson(c, hdr.getType().getContentType());
            List<byte[]> identities = new ArrayList<>(frames.subList(0, d));
            List<byte[]> buffers = new ArrayList<>(frames.subList(d + 6, frames.size()));
            @SuppressWarnings({"unchecked", "rawtypes"})
            Message<?> m = new Message(identities, hdr, parentHeader, metadata, body, buffers);
            return m;
        } catch (CharacterCodingException e) {
            return drop(channel, e.getMessage());
        } catch (RuntimeException e) {   // Gson's JsonParseException, IllegalStateException, NumberFormatException...
            return drop(channel, "not a valid Jupyter message (" + firstLine(e) + ")");
        }
    }

    private Message<?> drop(String channel, String why) {
        log.dropped(channel, why);
        return null;
    }

    private static String utf8(byte[] b, String what) throws CharacterCodingException {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            throw new CharacterCodingException() {
                @Override
                public String getMessage() {
                    return "its " + what + " is not UTF-8";
                }
            };
        }
    }

    private static String firstLine(Throwable e) {
        String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        int nl = m.indexOf('\n');
        m = nl < 0 ? m : m.substring(0, nl);
        return m.length() > 160 ? m.substring(0, 160) + "…" : m;
    }
}
