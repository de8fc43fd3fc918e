package ane4j.cli;

import ane4j.backend.TensorBuffer;
import ane4j.golden.TensorCheck;
import ane4j.mil.DType;
import ane4j.mil.TensorType;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code mil grad} then {@code mil run} on .npy files, against the PyTorch goldens; and its one-line refusals. */
class MilGradCommandTest {
    @TempDir Path dir;

    static JsonObject golden(String id) throws Exception {
        try (var in = MilGradCommandTest.class.getResourceAsStream("/golden/grad/grad.json")) {
            for (JsonElement e : JsonParser.parseReader(new InputStreamReader(in, StandardCharsets.UTF_8)).getAsJsonObject().getAsJsonArray("cases"))
                if (e.getAsJsonObject().get("id").getAsString().equals(id)) return e.getAsJsonObject();
        }
        throw new AssertionError(id);
    }

    static TensorBuffer tensor(JsonObject t) {
        var sh = t.getAsJsonArray("shape");
        int[] shape = new int[sh.size()];
        for (int i = 0; i < shape.length; i++) shape[i] = sh.get(i).getAsInt();
        TensorBuffer b = TensorBuffer.allocate(TensorType.of(DType.fromMilName(t.get("dtype").getAsString()), shape));
        var d = t.getAsJsonArray("data");
        for (int i = 0; i < d.size(); i++) b.set(i, d.get(i).getAsFloat());
        return b;
    }

    int cli(ByteArrayOutputStream out, ByteArrayOutputStream err, String... args) {
        System.setProperty("ane4j.backend", "ref");
        try {
            return Main.run(args, new PrintStream(out), new PrintStream(err));
        } finally {
            System.clearProperty("ane4j.backend");
        }
    }

    @Test
    void gradThenRunWritesTheGradientsPyTorchComputes() throws Exception {
        for (String id : List.of("conv2d_groups.fp32", "attention.fp16")) {
            JsonObject c = golden(id);
            Path work = dir.resolve(id);
            Files.createDirectories(work);
            Files.writeString(work.resolve("prog.mil"), c.get("mil").getAsString());
            List<String> wrt = new ArrayList<>();
            for (JsonElement w : c.getAsJsonArray("wrt")) wrt.add(w.getAsString());
            var out = new ByteArrayOutputStream();
            var err = new ByteArrayOutputStream();
            int rc = cli(out, err, "mil", "grad", work.resolve("prog.mil").toString(), "--loss", c.get("loss").getAsString(), "--wrt", String.join(",", wrt),
                    "--out", work.resolve("g").toString());
            assertEquals(0, rc, err.toString());
            List<String> run = new ArrayList<>(List.of("mil", "run", work.resolve("g/grad.mil").toString(), "--output", work.resolve("o").toString()));
            for (var e : c.getAsJsonObject("inputs").entrySet()) {
                Path f = work.resolve(e.getKey() + ".npy");
                Npy.write(f, tensor(e.getValue().getAsJsonObject()));
                run.add("--input");
                run.add(e.getKey() + "=" + f);
            }
            rc = cli(out, err, run.toArray(String[]::new));
            assertEquals(0, rc, err.toString());
            for (String w : wrt) {
                JsonObject exp = c.getAsJsonObject("expect").getAsJsonObject("d_" + w);
                TensorBuffer e = tensor(exp);
                float[] got = Npy.read(work.resolve("o/d_" + w + ".npy"), TensorType.of(DType.fromMilName(c.get("dtype").getAsString()), e.shape()), "d_" + w).toFloatArray();
                float[] want = e.toFloatArray();
                double max = 0;
                for (float v : want) max = Math.max(max, Math.abs(v));
                var tol = c.getAsJsonArray("tol");
                var r = TensorCheck.compare(id + " d_" + w, want, got, tol.get(0).getAsDouble() + tol.get(1).getAsDouble() * max, 0, e.shape());
                assertTrue(r.ok(), r.line());
            }
        }
    }

    @Test
    void badRequestsAreOneLineWithFileLineAndColumn() throws Exception {
        JsonObject c = golden("mlp.fp32");
        Path prog = dir.resolve("mlp.mil");
        Files.writeString(prog, c.get("mil").getAsString());
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int rc = cli(out, err, "mil", "grad", prog.toString(), "--loss", "linear_99", "--wrt", "w1", "--out", dir.resolve("g").toString());
        assertEquals(1, rc);
        String msg = err.toString().strip();
        assertEquals(1, msg.lines().count(), msg);
        assertTrue(msg.contains("mlp.mil:4:10: [grad] loss 'linear_99' is not an output of function main at 4:10"), msg);
        err.reset();
        rc = cli(out, err, "mil", "grad", prog.toString(), "--loss", c.get("loss").getAsString(), "--wrt", "x2", "--out", dir.resolve("g").toString());
        assertEquals(1, rc);
        assertTrue(err.toString().contains("[grad] wrt 'x2' is not an input of function main at 4:10; inputs: x, w1, b1, w2, b2, t"), err.toString());
        assertTrue(Files.notExists(dir.resolve("g/grad.mil")), "nothing written on a refusal");
    }
}
