package ane4j.backend.ane;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.backend.ane.ffm.FakeObjc;
import ane4j.backend.ref.RefBackend;
import ane4j.mil.MilParser;
import ane4j.mil.Program;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Makes the fake runtime's evaluate run the reference interpreter on the request's surfaces: it parses the
 * {@code model.mil} and weight files the fake's compile found in {@code <tmpdir>/<hex>/} (so the text the ANE would get
 * is what runs), compiles them once per hex id with {@link RefBackend}, and binds the surfaces in the order the fake
 * received them (alphabetical by MIL name, {@link SurfacePlan#BINDING_ORDER}).
 */
final class RefOnFake implements AutoCloseable {
    private final FakeObjc fake;
    private final Path tmp;
    private final RefBackend ref = new RefBackend();
    private final Map<String, Kernel> kernels = new HashMap<>();
    private final List<String> evaluated = new ArrayList<>();

    RefOnFake(FakeObjc fake, Path tmp) {
        this.fake = fake;
        this.tmp = tmp;
        fake.setEvaluateHook(this::evaluate);
    }

    /** The fake whose evaluate this is. */
    FakeObjc fake() { return fake; }

    /** Hex ids in evaluation order. */
    List<String> evaluated() { return evaluated; }

    /** The program the fake's compile saw for this hex id, parsed back from its files. */
    static Program parse(Path dir) {
        try {
            return MilParser.parse(Files.readString(dir.resolve("model.mil")), dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void evaluate(List<MemorySegment> in, List<MemorySegment> out) {
        String hex = fake.evaluatingHex();
        Kernel k = kernels.computeIfAbsent(hex, h -> ref.compile(parse(tmp.resolve(h))));
        evaluated.add(hex);
        k.evaluate(bind(k.inputs(), in), bind(k.outputs(), out));
    }

    /** The surfaces as tensors named by the specs in binding order (alphabetical); one surface per spec. */
    static Map<String, TensorBuffer> bind(List<TensorSpec> specs, List<MemorySegment> surfaces) {
        List<TensorSpec> sorted = new ArrayList<>(specs);
        sorted.sort((a, b) -> a.name().compareTo(b.name()));
        if (sorted.size() != surfaces.size()) throw new IllegalStateException(surfaces.size() + " surfaces for " + sorted);
        Map<String, TensorBuffer> m = new LinkedHashMap<>();
        for (int i = 0; i < sorted.size(); i++) m.put(sorted.get(i).name(), TensorBuffer.wrap(surfaces.get(i), sorted.get(i).type()));
        return m;
    }

    @Override
    public void close() {
        kernels.values().forEach(Kernel::close);
        kernels.clear();
    }
}
