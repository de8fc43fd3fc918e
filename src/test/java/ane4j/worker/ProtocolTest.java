package ane4j.worker;

import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ane4j.backend.TensorSpec;
import ane4j.mil.Mil;
import ane4j.run.SetupProgress;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Frames, message bodies, training options and exit codes survive the trip unchanged. */
class ProtocolTest {
    @Test
    void setupProgressRoundTrips() {
        for (SetupProgress p : List.of(SetupProgress.startingWorker(), SetupProgress.compiling(7, 10, "sdpaBwd1"),
                SetupProgress.compiling(16, 16, "kvBwd · layer 2"), SetupProgress.firstStep()))
            assertEquals(p, Protocol.progress(new Protocol.Reader(Protocol.progress(p))));
        assertThrows(IllegalArgumentException.class, () -> Protocol.progress(new Protocol.Reader(new Protocol.Writer().i32(9).i32(0).i32(0).str("").bytes())));
    }

    @Test
    void framesRoundTripAndGarbageIsRejected() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        List<TensorSpec> specs = List.of(new TensorSpec("x", Mil.fp16(1, 768, 1, 256)), new TensorSpec("mask", Mil.int32(4)));
        Protocol.write(out, 7, Protocol.COMPILE, new Protocol.Writer().specs(specs).str("ünïcode ✓").f32(Float.NaN).bytes());
        Protocol.write(out, 8, Protocol.OK, new byte[0]);
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()));
        Protocol.Frame f = Protocol.read(in);
        assertEquals(7, f.id());
        assertEquals(Protocol.COMPILE, f.type());
        Protocol.Reader r = f.reader();
        assertEquals(specs, r.specs());
        assertEquals("ünïcode ✓", r.str());
        assertEquals(Float.floatToRawIntBits(Float.NaN), Float.floatToRawIntBits(r.f32()));
        assertEquals(8, Protocol.read(in).id());
        assertNull(Protocol.read(in));
        // a stray println on the worker's stdout is not a frame
        var garbage = new DataInputStream(new ByteArrayInputStream("hello world\n".getBytes()));
        assertThrows(IOException.class, () -> Protocol.read(garbage));
    }

    @Test
    void trainOptionsAndStepMetricsRoundTrip() {
        TrainOptions o = TrainOptions.of(Map.ofEntries(Map.entry("model", "stories15m"), Map.entry("steps", "123"), Map.entry("lr", "0.00031"),
                Map.entry("clip", "0.7"), Map.entry("seed", "-5"), Map.entry("weights", "static"), Map.entry("attention", "threestage"), Map.entry("storage", "fp32"), Map.entry("backend", "ref"),
                Map.entry("runDir", "/tmp/x y"), Map.entry("data", "/d/t.bin"), Map.entry("tokenizer", "/t/tokenizer.json"), Map.entry("resume", "true")));
        assertEquals(java.nio.file.Path.of("/t/tokenizer.json"), o.tokenizer());
        assertEquals(o, TrainOptions.of(Protocol.toMap(o)));
        assertEquals(TrainOptions.of(Map.of()), TrainOptions.of(Protocol.toMap(TrainOptions.of(Map.of()))));
        var m = new StepMetrics(41, 60, 3.1415927f, 1e-3f, 512f, Float.NaN, true, false, 12.5, 1280.25, Map.of("forward", 1.5));
        assertEquals(m.json(), Protocol.step(new Protocol.Reader(Protocol.step(m))).json());
        var validated = new StepMetrics(99, 100, 2.5f, 1e-3f, 512f, 0.8f, true, false, 12.5, 1280.25, Map.of(), 10, 20, 2.75f, 31.5);
        StepMetrics back = Protocol.step(new Protocol.Reader(Protocol.step(validated)));
        assertEquals(validated, back);
        assertTrue(back.json().endsWith(",\"valLoss\":2.75,\"valMs\":31.5}"), back.json());
    }

    @Test
    void exitCodesAreNamed() {
        assertEquals(ExitCode.RESTART_BUDGET, ExitCode.of(75));
        assertEquals("killed by SIGKILL (exit 137)", ExitCode.describe(137));
        assertEquals("killed by SIGABRT (a native crash; see the hs_err file) (exit 134)", ExitCode.describe(134));
        assertEquals("exited with status 42", ExitCode.describe(42));
        assertEquals(4, java.util.Arrays.stream(ExitCode.values()).map(c -> c.code).distinct().count() - 1);
    }
}
