package ane4j.train;

import ane4j.backend.Backend;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.blas.Blas;
import ane4j.blas.Layout;
import ane4j.blas.Transpose;
import ane4j.chip.Chip;
import ane4j.chip.ChipRules;
import ane4j.chip.ProgramSplit;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import ane4j.mil.grad.Grad;
import ane4j.model.ParameterView;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One training step of any MIL graph, the ANE's way (issue 31): the graph is differentiated once ({@link Grad#split}),
 * its forward and its backward are compiled once each on the backend, and every step runs forward → backward on the
 * backend while the weight gradients of matmul/linear/conv are formed on the CPU by sgemm from the saved activations and the
 * upstream gradients the backward returns (as the hand-written kernels do; {@code cpuWeights=false} keeps them in MIL).
 * Parameters travel as columns of one packed input of both programs ({@link PackedParams}; no weight files, one compile
 * each), refreshed from the flat parameter array each step. A program that breaks an error rule of the chip runs as
 * its {@link ProgramSplit} parts ({@link SplitKernel}).
 *
 * <p>Parameters live in one flat float array laid out by {@link #views()} (rank 1 or 2; a conv weight [O, I, K…] is
 * the matrix [O, I·ΠK]), so {@link AdamW}, clipping and checkpoints work on it as on the preset models.
 */
public final class GraphStep implements AutoCloseable {
    private final Grad.Split split;
    private final Kernel forward, backward;
    private final List<ParameterView> views = new ArrayList<>();
    private final Map<String, TensorType> paramTypes = new LinkedHashMap<>();
    private final Map<String, TensorBuffer> paramBuffers = new HashMap<>();
    private final Map<String, TensorBuffer> lookupBuffers = new HashMap<>();
    private final String loss;
    private final CpuLossHead head;
    private float[] headScratch;
    private TensorBuffer headGrad;
    private final int size;

    /**
     * How a step is built.
     *
     * @param cpuWeights the weight gradients of matmul/linear/conv by sgemm on the CPU (the ANE's split); false: in MIL
     * @param packed     the parameters travel as columns of one packed input ({@link PackedParams}, the default); false:
     *                   one input each. Either gives the same bits; parameters of mixed dtypes are always separate inputs
     * @param splitFor   the chip whose rules the programs must obey, or null for the backend's own (the ANE's family, or
     *                   the chip the reference backend emulates; none otherwise): a program that breaks an error rule of
     *                   it is cut at op boundaries ({@link ProgramSplit}) into parts that break none, run on the
     *                   backend, and parts no cut can make legal (a tensor past the axis cap), run on the reference
     *                   backend (the CPU); a program that breaks none is compiled whole
     * @param seedInput  the backward takes the loss's upstream gradient d_&lt;loss&gt; as an input even when the loss has
     *                   one element, so {@link #forwardBackward(float[], float[], Map, float)} can seed it with a loss
     *                   scale (the trainer's, {@link LossScaler}): every gradient is then scaled inside the backward,
     *                   where fp16 would underflow, and the loss itself is not
     */
    public record Options(boolean cpuWeights, boolean packed, Chip splitFor, boolean seedInput) {
        /** Weight gradients on the CPU, packed parameters, the backend's own chip rules, no seed input. */
        public static Options defaults() { return new Options(true, true, null, false); }

        public Options withCpuWeights(boolean b) { return new Options(b, packed, splitFor, seedInput); }

        public Options withPacked(boolean b) { return new Options(cpuWeights, b, splitFor, seedInput); }

        public Options withSplitFor(Chip c) { return new Options(cpuWeights, packed, c, seedInput); }

        public Options withSeedInput(boolean b) { return new Options(cpuWeights, packed, splitFor, b); }
    }

    /**
     * @param graph  the forward: one function whose inputs are the data and the parameters, one of whose outputs is the loss
     * @param params the inputs to train (float inputs of the graph), in the order of the flat layout
     */
    public GraphStep(Program graph, String loss, List<String> params, Backend backend, Options o) {
        this(graph, loss, null, params, backend, o);
    }

    /**
     * A step whose loss is computed on the CPU ({@link CpuLossHead}): the graph ends at the logits output
     * {@code head.logits()} [N, C], the backward takes d_logits as its upstream gradient, and the mean cross-entropy
     * against the int32 labels {@code head.labels()} of the step's data (not an input of the graph) and d_logits are
     * formed on the CPU, as the hand-written step does. {@link #forwardBackward(float[], float[], Map, float)}'s
     * scale multiplies d_logits (so every gradient); the loss returned is not scaled.
     */
    public GraphStep(Program graph, CpuLossHead head, List<String> params, Backend backend, Options o) {
        this(graph, checkHead(graph, head), head, params, backend, o.withSeedInput(false));
    }

    /** The head's logits name, once it is known to be a float output [N, C] of the graph. */
    private static String checkHead(Program graph, CpuLossHead head) {
        Value out = graph.main().outputs().stream().filter(v -> v.name().equals(head.logits())).findFirst().orElse(null);
        String outs = graph.main().outputs().stream().map(Value::name).toList().toString();
        if (out == null) throw new IllegalArgumentException("[graph] the loss head's logits '" + head.logits() + "' is not an output of the graph (outputs: " + outs + "); give the logits output");
        if (out.rank() != 2 || !out.dtype().isFloat() || out.shape()[1] < 2)
            throw new IllegalArgumentException("[graph] the loss head's logits '" + head.logits() + "' is " + out.type() + "; give a float output [N, C] with C ≥ 2 classes");
        return head.logits();
    }

    private GraphStep(Program graph, String loss, CpuLossHead head, List<String> params, Backend backend, Options o) {
        boolean cpuWeights = o.cpuWeights(), packed = o.packed(), seedInput = o.seedInput();
        Chip splitFor = o.splitFor();
        this.loss = loss;
        this.head = head;
        // embedding lookups (gather of a parameter by data indices) run on the CPU: the ANE refuses gathers with run-time
        // indices (chip rule runtime-gather); their outputs become inputs of the programs and their gradients come back
        Program g = cpuLookups(graph, params);
        List<String> wrt = new ArrayList<>();
        // a parameter read only by lookups is no input of the programs any more; any other name goes to Grad (which refuses unknown ones)
        for (String p : params)
            if (g.main().inputs().stream().anyMatch(v -> v.name().equals(p)) || lookups.stream().noneMatch(l -> l.param().equals(p))) wrt.add(p);
        for (Lookup l : lookups) wrt.add(l.output());
        this.split = Grad.split(g, null, loss, wrt, cpuWeights, seedInput);
        int offset = 0;
        for (String p : params) {
            Value in = graph.main().input(p);
            int[] s = in.shape();
            int rows = s[0], cols = (int) (in.type().count() / rows);
            ParameterView v = new ParameterView(p, offset, s.length == 1 ? new int[] {rows} : new int[] {rows, cols}, s.length > 1);
            views.add(v);
            paramTypes.put(p, in.type());
            paramBuffers.put(p, TensorBuffer.allocate(in.type()));
            offset += v.size();
        }
        this.size = offset;
        // the parameters the programs read, packed as columns of one input (when they share a dtype)
        Map<String, TensorType> inputParams = new LinkedHashMap<>();
        for (Value v : g.main().inputs()) if (paramTypes.containsKey(v.name())) inputParams.put(v.name(), v.type());
        boolean oneDtype = inputParams.values().stream().map(TensorType::dtype).distinct().count() == 1;
        this.packing = packed && oneDtype ? PackedParams.plan(freshName(g, "params"), inputParams) : null;
        this.forwardProgram = packing == null ? split.forward() : packing.rewrite(split.forward());
        this.backwardProgram = packing == null ? split.backward() : packing.rewrite(split.backward());
        for (ParameterView v : views) offsets.put(v.name(), v.offset());
        Chip chip = splitFor != null ? splitFor : chipOf(backend);
        Kernel f = compile(forwardProgram, "forward", backend, chip);
        try {
            this.backward = compile(backwardProgram, "backward", backend, chip);
        } catch (RuntimeException e) {
            f.close();
            throw e;
        }
        this.forward = f;
        // the packed parameters in the forward's direct buffer (the reference backend: fp16 held as floats, read in
        // place; the same fp16 values as a packed buffer), which the backward reads too
        this.packedBuffer = packing == null ? null : forward.allocateDirectInput(packing.input());
    }

    private final PackedParams packing;
    private final Program forwardProgram, backwardProgram;
    private final TensorBuffer packedBuffer;
    private Map<String, TensorBuffer> forwardOut, backwardOut;
    private final Map<String, Integer> offsets = new HashMap<>();

    /** {@code base}, or base_1, base_2 … when the graph has a value of that name. */
    private static String freshName(Program g, String base) {
        java.util.Set<String> names = new java.util.HashSet<>();
        for (Value v : g.main().inputs()) names.add(v.name());
        for (ane4j.mil.Operation o : g.main().operations()) for (Value v : o.outputs()) names.add(v.name());
        String n = base;
        for (int i = 1; names.contains(n); i++) n = base + "_" + i;
        return n;
    }

    /** An embedding lookup done on the CPU: output[j, :] = param[indices[j], :]. */
    record Lookup(String param, String indices, String output, TensorType type) {}

    private final List<Lookup> lookups = new ArrayList<>();

    /** The graph with each gather(param, data indices, axis 0) replaced by an input of the same name (see the constructor). */
    private Program cpuLookups(Program graph, List<String> params) {
        ane4j.mil.Function f = graph.main();
        List<ane4j.mil.Operation> ops = new ArrayList<>();
        List<Value> inputs = new ArrayList<>(f.inputs());
        java.util.Set<String> inputNames = new java.util.HashSet<>();
        for (Value v : f.inputs()) inputNames.add(v.name());
        for (ane4j.mil.Operation o : f.operations()) {
            if (o.op() == ane4j.mil.Op.GATHER && o.value("x") != null && params.contains(o.value("x").name()) && o.value("indices") != null
                    && inputNames.contains(o.value("indices").name()) && !params.contains(o.value("indices").name())
                    && o.literal("axis").intValue() == 0 && o.literal("batch_dims").intValue() == 0 && o.value("x").rank() == 2) {
                lookups.add(new Lookup(o.value("x").name(), o.value("indices").name(), o.output().name(), o.output().type()));
                inputs.add(o.output());
            } else ops.add(o);
        }
        if (lookups.isEmpty()) return graph;
        // a parameter read only by lookups is no longer an input of the programs
        java.util.Set<String> used = new java.util.HashSet<>();
        for (ane4j.mil.Operation o : ops) for (var a : o.inputs().values()) {
            if (a instanceof ane4j.mil.Arg.Ref r) used.add(r.value().name());
            if (a instanceof ane4j.mil.Arg.Tuple t) for (Value v : t.values()) used.add(v.name());
        }
        for (Value v : f.outputs()) used.add(v.name());
        inputs.removeIf(v -> lookups.stream().anyMatch(l -> l.param().equals(v.name()) || l.indices().equals(v.name())) && !used.contains(v.name()));
        return new Program(Map.of(f.name(), new ane4j.mil.Function(f.name(), inputs, ops, f.outputs())), graph.weights());
    }

    public List<ParameterView> views() { return Collections.unmodifiableList(views); }

    /** Number of parameter floats. */
    public int size() { return size; }

    public Grad.Split split() { return split; }

    /** The forward program compiled (the split's, with the parameters packed unless asked otherwise). */
    public Program forwardProgram() { return forwardProgram; }

    /** The backward program compiled. */
    public Program backwardProgram() { return backwardProgram; }

    /** {@code program} compiled whole, or as its {@link ProgramSplit} parts when it breaks an error rule of {@code chip}. */
    private static Kernel compile(Program program, String name, Backend backend, Chip chip) {
        if (chip == null || ChipRules.errors(ChipRules.check(program, chip)).isEmpty()) return backend.compile(program, name);
        Backend cpu = backend.unconstrained();
        return new SplitKernel(program, chip, Integer.MAX_VALUE, backend, cpu, name);
    }

    /** The chip family whose rules {@code backend} enforces, or null. */
    static Chip chipOf(Backend backend) {
        try {
            return backend.describeChip().family();
        } catch (RuntimeException e) {
            return null;   // a backend that cannot say (an ANE that is not available): no split
        }
    }

    /** The compiled forward and backward: {@link SplitKernel}s when split for a chip. */
    public List<Kernel> kernels() { return List.of(forward, backward); }

    /** The layout of the packed parameter input, or null when the parameters are separate inputs. */
    public PackedParams packing() { return packing; }

    /** The data inputs the forward takes (its inputs that are not parameters). */
    public List<TensorSpec> dataInputs() {
        return forward.inputs().stream().filter(s -> !paramTypes.containsKey(s.name()) && (packing == null || !s.name().equals(packing.input()))).toList();
    }

    /** The forward alone (loss and saved activations) on one batch, e.g. for validation. */
    public Map<String, TensorBuffer> forward(float[] params, Map<String, TensorBuffer> data) {
        return forward.evaluate(inputs(params, data));
    }

    /** Loss of one batch (its mean when the loss has several elements; the CPU loss head's when there is one). */
    public float loss(float[] params, Map<String, TensorBuffer> data) {
        Map<String, TensorBuffer> fo = forward(params, data);
        return head != null ? headLoss(fo.get(loss), data, null, 1f) : mean(fo.get(loss));
    }

    /** The CPU loss head, or null when the graph's own output is the loss. */
    public CpuLossHead head() { return head; }

    /** The head's loss of the forward's logits; d_logits (times scale) into {@code grad} when not null. */
    private float headLoss(TensorBuffer logits, Map<String, TensorBuffer> data, TensorBuffer grad, float scale) {
        if (headScratch == null) headScratch = new float[Math.toIntExact(logits.count())];
        return head.apply(logits, data.get(head.labels()), grad, scale, headScratch);
    }

    /**
     * Forward and backward on one batch: adds d loss / d params into {@code grads} (flat layout) and returns the loss
     * (a loss of several elements is differentiated as their sum, unless {@code data} holds its upstream gradient
     * {@code d_<loss>}, and its mean returned).
     */
    public float forwardBackward(float[] params, float[] grads, Map<String, TensorBuffer> data) {
        return forwardBackward(params, grads, data, 1f);
    }

    /**
     * {@link #forwardBackward(float[], float[], Map)} with the loss's upstream gradient filled with {@code scale} (unless
     * {@code data} holds d_&lt;loss&gt;): the gradients added are {@code scale} times d loss / d params; the loss returned
     * is not scaled. A loss of one element needs the step built with {@code seedInput} for a scale other than 1.
     */
    public float forwardBackward(float[] params, float[] grads, Map<String, TensorBuffer> data, float scale) {
        Map<String, TensorBuffer> in = inputs(params, data);
        if (forwardOut == null) {
            // the programs' outputs in their kernels' direct buffers, kept from step to step (the reference backend:
            // fp16 held as floats, written without packing and read by the backward and the CPU without unpacking; the
            // same fp16 values as packed buffers, so the same bits), as the hand-written step keeps its own
            forwardOut = new LinkedHashMap<>();
            for (TensorSpec o : forward.outputs()) forwardOut.put(o.name(), forward.allocateDirectOutput(o.name()));
            backwardOut = new LinkedHashMap<>();
            for (TensorSpec o : backward.outputs()) backwardOut.put(o.name(), backward.allocateDirectOutput(o.name()));
        }
        forward.evaluate(in, forwardOut);
        Map<String, TensorBuffer> fo = forwardOut;
        Map<String, TensorBuffer> bin = new LinkedHashMap<>();
        float headLoss = Float.NaN;
        if (head != null) {
            // the loss and d_logits on the CPU: d_logits is the backward's upstream gradient
            TensorSpec ds = backward.inputs().stream().filter(s -> s.name().equals("d_" + loss)).findFirst().orElseThrow();
            if (headGrad == null) headGrad = backward.allocateDirectInput(ds.name());
            headLoss = headLoss(fo.get(loss), data, headGrad, scale);
            bin.put(ds.name(), headGrad);
        }
        boolean seeded = backward.inputs().stream().anyMatch(s -> s.name().equals("d_" + loss));
        if (!seeded && scale != 1f) throw new IllegalStateException("[graph] a loss scale of " + scale + " needs the step built with seedInput (the loss has one element)");
        for (TensorSpec s : backward.inputs()) {
            if (bin.containsKey(s.name())) continue;
            TensorBuffer b = s.name().equals("d_" + loss) ? data.getOrDefault(s.name(), seed(s.type(), scale)) : fo.containsKey(s.name()) ? fo.get(s.name())
                    : in.containsKey(s.name()) ? in.get(s.name()) : packing != null && s.name().equals(packing.input()) ? packed(params) : null;
            if (b == null) throw new IllegalStateException("[graph] no value for backward input " + s.name());
            bin.put(s.name(), b);
        }
        backward.evaluate(bin, backwardOut);
        Map<String, TensorBuffer> bo = backwardOut;
        Map<String, ParameterView> byName = new HashMap<>();
        for (ParameterView v : views) byName.put(v.name(), v);
        // gradients formed in MIL (the lookups' outputs: scattered back into their parameter's rows)
        for (String p : split.milGrads()) {
            Lookup l = lookups.stream().filter(x -> x.output().equals(p)).findFirst().orElse(null);
            if (l != null) {
                ParameterView v = byName.get(l.param());
                TensorBuffer idx = data.get(l.indices());
                float[] d = bo.get("d_" + p).toFloatArray();
                int cols = v.cols();
                for (int j = 0; j < idx.count(); j++) {
                    int base = v.offset() + (int) idx.get(j) * cols;
                    for (int i = 0; i < cols; i++) grads[base + i] += d[j * cols + i];
                }
                continue;
            }
            ParameterView v = byName.get(p);
            float[] d = bo.get("d_" + p).toFloatArray();
            for (int i = 0; i < d.length; i++) grads[v.offset() + i] += d[i];
        }
        // weight gradients of matmul/linear on the CPU: dW += gᵀ·x (transposed) or xᵀ·g, over the flattened rows R;
        // of conv: im2col and sgemm (ConvWeightGrad)
        // (each tensor read as floats once per step, into arrays kept from step to step: an activation read by several
        // projections, e.g. the normed x of q, k and v, is converted once, and the classifier's g is not reallocated)
        Map<String, float[]> asFloats = new HashMap<>();
        for (Grad.CpuGrad c : split.cpuGrads()) {
            ParameterView v = byName.get(c.param());
            TensorBuffer gb = bo.get(c.upstream()), xb = fo.containsKey(c.activation()) ? fo.get(c.activation()) : in.get(c.activation());
            if (xb == null) xb = paramBuffer(c.activation(), params);   // the activation is itself a parameter (packed)
            TensorBuffer xbuf = xb;
            float[] g = asFloats.computeIfAbsent("g " + c.upstream(), n -> floats(n, gb)), x = asFloats.computeIfAbsent("x " + c.activation(), n -> floats(n, xbuf));
            if (c.isConv()) {
                int[] w = paramTypes.get(c.param()).shape();
                ConvWeightGrad.accumulate(x, xb.type().shape(), g, gb.type().shape(), Arrays.copyOfRange(w, 2, w.length), c.conv(), grads, v.offset());
                continue;
            }
            int n = gb.type().dim(-1), k = xb.type().dim(-1), r = (int) (gb.count() / n);
            if (c.transposed()) Blas.sgemm(Layout.ROW_MAJOR, Transpose.YES, Transpose.NO, n, k, r, 1f, g, 0, n, x, 0, k, 1f, grads, v.offset(), k);
            else Blas.sgemm(Layout.ROW_MAJOR, Transpose.YES, Transpose.NO, k, n, r, 1f, x, 0, k, g, 0, n, 1f, grads, v.offset(), n);
        }
        return head != null ? headLoss : mean(fo.get(loss));
    }

    private final Map<String, float[]> floatArrays = new HashMap<>();

    /** b's values as floats, in the array kept for {@code name} (refilled on each call). */
    private float[] floats(String name, TensorBuffer b) {
        float[] a = floatArrays.get(name);
        if (a == null || a.length != b.count()) floatArrays.put(name, a = new float[Math.toIntExact(b.count())]);
        b.copyTo(0, a, 0, a.length);
        return a;
    }

    private Map<String, TensorBuffer> inputs(float[] params, Map<String, TensorBuffer> data) {
        if (params.length != size) throw new IllegalArgumentException("[graph] " + params.length + " parameters given, the graph has " + size);
        Map<String, TensorBuffer> in = new LinkedHashMap<>();
        for (Lookup l : lookups) {
            // output[j, :] = param[indices[j], :]
            ParameterView v = view(l.param());
            TensorBuffer idx = data.get(l.indices()), out = lookupBuffers.computeIfAbsent(l.output(), n -> TensorBuffer.allocate(l.type()));
            if (idx == null) throw new IllegalArgumentException("[graph] no data for input '" + l.indices() + "'; give every non-parameter input of the graph");
            int cols = v.cols();
            for (int j = 0; j < idx.count(); j++) {
                int row = (int) idx.get(j);
                if (row < 0 || row >= v.rows()) throw new IllegalArgumentException("[graph] index " + row + " of '" + l.indices() + "' is outside 0.." + (v.rows() - 1) + " of " + l.param());
                out.copyFrom(params, v.offset() + row * cols, (long) j * cols, cols);
            }
            in.put(l.output(), out);
        }
        for (TensorSpec s : forward.inputs()) {
            if (in.containsKey(s.name())) continue;
            if (packing != null && s.name().equals(packing.input())) in.put(s.name(), packed(params));
            else if (paramTypes.containsKey(s.name())) {
                ParameterView v = views.stream().filter(w -> w.name().equals(s.name())).findFirst().orElseThrow();
                TensorBuffer b = paramBuffers.get(s.name());
                b.copyFrom(params, v.offset(), 0, v.size());
                in.put(s.name(), b);
            } else {
                TensorBuffer b = data.get(s.name());
                if (b == null) throw new IllegalArgumentException("[graph] no data for input '" + s.name() + "' " + s.type() + "; give every non-parameter input of the graph");
                in.put(s.name(), b);
            }
        }
        return in;
    }

    /** One parameter as a tensor of its own type (values rounded to its dtype as the programs see them). */
    private TensorBuffer paramBuffer(String name, float[] params) {
        ParameterView v = view(name);
        TensorBuffer b = paramBuffers.get(name);
        b.copyFrom(params, v.offset(), 0, v.size());
        return b;
    }

    /** The packed parameter input, refreshed from the flat array. */
    private TensorBuffer packed(float[] params) {
        packing.pack(params, offsets, packedBuffer);
        return packedBuffer;
    }

    private ParameterView view(String name) {
        for (ParameterView v : views) if (v.name().equals(name)) return v;
        throw new IllegalStateException(name);
    }

    private TensorBuffer seedBuffer;
    private float seedValue = Float.NaN;

    /** The upstream gradient of the loss, every element {@code scale} (kept between steps; refilled when the scale changes). */
    private TensorBuffer seed(TensorType t, float scale) {
        if (seedBuffer == null) seedBuffer = TensorBuffer.allocate(t);
        if (Float.floatToRawIntBits(scale) != Float.floatToRawIntBits(seedValue)) {
            seedBuffer.fill(scale);
            seedValue = scale;
        }
        return seedBuffer;
    }

    private static float mean(TensorBuffer b) {
        double s = 0;
        for (long i = 0; i < b.count(); i++) s += b.get(i);
        return (float) (s / b.count());
    }

    @Override
    public void close() {
        forward.close();
        backward.close();
    }
}
