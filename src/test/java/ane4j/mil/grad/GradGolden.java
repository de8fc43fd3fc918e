package ane4j.mil.grad;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.mil.DType;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The cases of {@code golden/grad/grad.json} (tools/gen_grad_golden.py: PyTorch autograd) and how to run a program on them. */
public final class GradGolden {
    private GradGolden() {}

    public record Tensor(DType dtype, int[] shape, float[] data) {
        public TensorType type() { return TensorType.of(dtype, shape); }

        public TensorBuffer buffer() {
            TensorBuffer b = TensorBuffer.allocate(type());
            for (int i = 0; i < data.length; i++) b.set(i, data[i]);
            return b;
        }
    }

    public record Case(String id, String dtype, String mil, String loss, List<String> wrt, Map<String, Tensor> inputs,
                Map<String, Tensor> expect, double atol, double rtol) {
        @Override public String toString() { return id; }
    }

    public static List<Case> load() {
        try (InputStream in = GradGolden.class.getResourceAsStream("/golden/grad/grad.json")) {
            if (in == null) throw new IllegalStateException("[golden] golden/grad/grad.json is missing; regenerate with /usr/bin/python3 tools/gen_grad_golden.py");
            JsonObject root = JsonParser.parseReader(new InputStreamReader(in, StandardCharsets.UTF_8)).getAsJsonObject();
            List<Case> cases = new ArrayList<>();
            for (JsonElement e : root.getAsJsonArray("cases")) {
                JsonObject c = e.getAsJsonObject();
                List<String> wrt = new ArrayList<>();
                for (JsonElement w : c.getAsJsonArray("wrt")) wrt.add(w.getAsString());
                JsonArray tol = c.getAsJsonArray("tol");
                cases.add(new Case(c.get("id").getAsString(), c.get("dtype").getAsString(), c.get("mil").getAsString(), c.get("loss").getAsString(), wrt,
                        tensors(c.getAsJsonObject("inputs")), tensors(c.getAsJsonObject("expect")), tol.get(0).getAsDouble(), tol.get(1).getAsDouble()));
            }
            return cases;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Map<String, Tensor> tensors(JsonObject o) {
        Map<String, Tensor> m = new LinkedHashMap<>();
        for (var e : o.entrySet()) {
            JsonObject t = e.getValue().getAsJsonObject();
            JsonArray sh = t.getAsJsonArray("shape"), d = t.getAsJsonArray("data");
            int[] shape = new int[sh.size()];
            for (int i = 0; i < shape.length; i++) shape[i] = sh.get(i).getAsInt();
            float[] data = new float[d.size()];
            for (int i = 0; i < data.length; i++) data[i] = d.get(i).getAsFloat();
            m.put(e.getKey(), new Tensor(DType.fromMilName(t.get("dtype").getAsString()), shape, data));
        }
        return m;
    }

    /** Runs {@code p}'s main on the reference backend (fp16 values stored as fp16, as on the ANE) and returns every output. */
    public static Map<String, float[]> run(Program p, Map<String, Tensor> inputs) {
        RefBackend ref = new RefBackend(RefBackend.Options.ANE_LIKE);
        try (Kernel k = ref.compile(p)) {
            Map<String, TensorBuffer> in = new LinkedHashMap<>();
            for (var s : k.inputs()) {
                Tensor t = inputs.get(s.name());
                if (t == null) throw new AssertionError("no value for input " + s.name());
                in.put(s.name(), t.buffer());
            }
            Map<String, float[]> out = new LinkedHashMap<>();
            for (var e : k.evaluate(in).entrySet()) out.put(e.getKey(), e.getValue().toFloatArray());
            return out;
        } catch (Exception e) {
            if (e instanceof RuntimeException r) throw r;
            throw new IllegalStateException(e);
        }
    }
}
