package ane4j.worker;

import ane4j.run.StepMetrics;
import ane4j.backend.TensorSpec;
import ane4j.mil.DType;
import ane4j.mil.TensorType;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The frames and message bodies of the supervisor ↔ worker channel; the layout is documented in {@code package-info}. */
final class Protocol {
    private Protocol() {}

    static final int MAX_FRAME = 64 << 20;

    // requests (parent → worker)
    static final byte COMPILE = 1, EVALUATE = 2, RELEASE_KERNEL = 3, RELEASE_REGION = 4, TRAIN = 5, STOP_TRAINING = 6,
            STATUS = 7, SHUTDOWN = 8, START = 9, WARM_UP = 10;
    // replies and events (worker → parent)
    static final byte READY = 32, OK = 33, ERROR = 34, STEP = 35, MESSAGE = 36, TRAIN_END = 37, EXITING = 38, PROGRESS = 39;

    static final byte END_DONE = 0, END_STOPPED = 1, END_FAILED = 2;

    record Frame(int id, byte type, byte[] body) {
        Reader reader() { return new Reader(body); }
    }

    /** {@code u32 length | u32 id | u8 type | body}, big-endian; length counts id, type and body. */
    static void write(DataOutputStream out, int id, byte type, byte[] body) throws IOException {
        out.writeInt(5 + body.length);
        out.writeInt(id);
        out.writeByte(type);
        out.write(body);
        out.flush();
    }

    /** The next frame, or null at end of stream. @throws IOException on a malformed frame */
    static Frame read(DataInputStream in) throws IOException {
        int len;
        try {
            len = in.readInt();
        } catch (EOFException e) {
            return null;
        }
        if (len < 5 || len > MAX_FRAME) throw new IOException("[worker] malformed frame (length " + len + "): something else wrote to the worker's stdout");
        int id = in.readInt();
        byte type = in.readByte();
        byte[] body = new byte[len - 5];
        in.readFully(body);
        return new Frame(id, type, body);
    }

    /** Builds a message body. */
    static final class Writer {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final DataOutputStream out = new DataOutputStream(bytes);

        Writer i32(int v) { try { out.writeInt(v); } catch (IOException e) { throw new UncheckedIOException(e); } return this; }
        Writer i64(long v) { try { out.writeLong(v); } catch (IOException e) { throw new UncheckedIOException(e); } return this; }
        Writer f32(float v) { return i32(Float.floatToRawIntBits(v)); }
        Writer f64(double v) { return i64(Double.doubleToRawLongBits(v)); }
        Writer bool(boolean v) { return i32(v ? 1 : 0); }

        Writer str(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            i32(b.length);
            bytes.write(b, 0, b.length);   // DataOutputStream is unbuffered: the bytes land in order
            return this;
        }

        Writer type(TensorType t) {
            str(t.dtype().milName());
            int[] shape = t.shape();
            i32(shape.length);
            for (int d : shape) i32(d);
            return this;
        }

        Writer specs(List<TensorSpec> specs) {
            i32(specs.size());
            for (TensorSpec s : specs) str(s.name()).type(s.type());
            return this;
        }

        Writer map(Map<String, String> m) {
            i32(m.size());
            m.forEach((k, v) -> str(k).str(v));
            return this;
        }

        byte[] bytes() { return bytes.toByteArray(); }
    }

    /** Reads a message body. */
    static final class Reader {
        private final ByteBuffer b;

        Reader(byte[] body) { this.b = ByteBuffer.wrap(body); }

        int i32() { return b.getInt(); }
        long i64() { return b.getLong(); }
        float f32() { return Float.intBitsToFloat(b.getInt()); }
        double f64() { return Double.longBitsToDouble(b.getLong()); }
        boolean bool() { return b.getInt() != 0; }

        String str() {
            byte[] s = new byte[b.getInt()];
            b.get(s);
            return new String(s, StandardCharsets.UTF_8);
        }

        TensorType type() {
            String name = str();
            DType d = DType.fromMilName(name);
            if (d == null) throw new IllegalArgumentException("[worker] unknown dtype " + name);
            int[] shape = new int[i32()];
            for (int i = 0; i < shape.length; i++) shape[i] = i32();
            return TensorType.of(d, shape);
        }

        List<TensorSpec> specs() {
            int n = i32();
            List<TensorSpec> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) out.add(new TensorSpec(str(), type()));
            return List.copyOf(out);
        }

        /** True while the body has bytes left (a field added at the end of a message). */
        boolean hasMore() { return b.hasRemaining(); }

        Map<String, String> map() {
            int n = i32();
            Map<String, String> m = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) m.put(str(), str());
            return m;
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // training options and step metrics

    /** The options as the explicit key → value map {@link TrainOptions#of} reads back to equal options (every key of the table). */
    static Map<String, String> toMap(TrainOptions o) {
        return new LinkedHashMap<>(o.toMap());
    }

    static byte[] step(StepMetrics m) {
        Writer w = new Writer().i64(m.step()).i64(m.steps()).f32(m.loss()).f32(m.lr()).f32(m.lossScale()).f32(m.gradNorm())
                .bool(m.updated()).bool(m.skipped()).f64(m.msPerStep()).f64(m.tokensPerSecond()).i32(m.phaseMs().size());
        m.phaseMs().forEach((k, v) -> w.str(k).f64(v));
        return w.i64(m.stagedActivationBytes()).i64(m.stagedWeightBytes()).f32(m.valLoss()).f64(m.valMs()).bytes();
    }

    static byte[] progress(ane4j.run.SetupProgress p) {
        return new Writer().i32(p.stage().ordinal()).i32(p.done()).i32(p.total()).str(p.kernel()).bytes();
    }

    static ane4j.run.SetupProgress progress(Reader r) {
        var stages = ane4j.run.SetupProgress.Stage.values();
        int stage = r.i32();
        if (stage < 0 || stage >= stages.length) throw new IllegalArgumentException("[worker] unknown setup stage " + stage);
        return new ane4j.run.SetupProgress(stages[stage], r.i32(), r.i32(), r.str());
    }

    static StepMetrics step(Reader r) {
        long step = r.i64(), steps = r.i64();
        float loss = r.f32(), lr = r.f32(), scale = r.f32(), norm = r.f32();
        boolean updated = r.bool(), skipped = r.bool();
        double ms = r.f64(), tps = r.f64();
        int n = r.i32();
        Map<String, Double> phases = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) phases.put(r.str(), r.f64());
        long activationBytes = r.i64(), weightBytes = r.i64();
        float valLoss = r.f32();
        double valMs = r.f64();
        return new StepMetrics(step, steps, loss, lr, scale, norm, updated, skipped, ms, tps, phases, activationBytes, weightBytes, valLoss, valMs);
    }
}
