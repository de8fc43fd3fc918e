package ane4j.mil.grad;

import ane4j.mil.Arg;
import ane4j.mil.DType;
import ane4j.mil.Dialect;
import ane4j.mil.Function;
import ane4j.mil.Literal;
import ane4j.mil.FunctionBuilder;
import ane4j.mil.Mil;
import ane4j.mil.MilException;
import ane4j.mil.MilWriter;
import ane4j.mil.Op;
import ane4j.mil.Operation;
import ane4j.mil.Program;
import ane4j.mil.Value;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reverse-mode differentiation of a MIL function, emitted as MIL: the gradient function replays the forward ops the
 * loss depends on, then walks them backwards applying each op's vector-Jacobian {@link Rule} (one table per op
 * family: {@link ElementwiseRules}, {@link ReductionRules}, {@link LinearRules}, {@link ShapeRules},
 * {@link PoolRules}), summing the contributions of values used more than once.
 *
 * <pre>
 *   inputs : the forward function's inputs, in order, then d_&lt;loss&gt; (the loss's upstream gradient) unless the
 *            loss has a single element, whose gradient is 1
 *   outputs: &lt;loss&gt;, then d_&lt;w&gt; for each w in wrt (same shape and dtype as w)
 * </pre>
 *
 * The backward runs in the forward's dtype (fp16 graphs get fp16 gradients, as on the ANE). Nothing is treated as
 * constant silently: an op on a path from a wrt input to the loss without a rule, a path through integers, a loss that is
 * not an output and a wrt name that is not a float input are refused in one line with the value's line:col.
 */
public final class Grad {

    /** The name of the function {@link #program} writes (so {@code mil run} runs it without --function). */
    public static final String FUNCTION = "main";

    static final Map<Op, Rule> RULES = new EnumMap<>(Op.class);
    static {
        ElementwiseRules.register(RULES);
        ReductionRules.register(RULES);
        LinearRules.register(RULES);
        ShapeRules.register(RULES);
        PoolRules.register(RULES);
    }

    /** The ops that have a gradient rule. */
    public static Set<Op> differentiableOps() { return Collections.unmodifiableSet(RULES.keySet()); }

    /** Inputs of an op the rules never differentiate (the selector of select, the indices of gather). */
    private static boolean constantParam(Op op, String param) {
        return (op == Op.SELECT && param.equals("cond")) || (op == Op.GATHER && param.equals("indices"));
    }

    /** An identity named stop_gradient_… (FunctionBuilder.stopGradient): its output is a constant for the gradient. */
    static boolean stopsGradient(Operation o) { return o.op() == Op.IDENTITY && o.label().startsWith("stop_gradient"); }

    /** The gradient program of {@code forward}'s main function; positions in errors refer to its canonical text. */
    public static Program program(Program forward, String loss, List<String> wrt) {
        return program(forward, null, loss, wrt, null);
    }

    /**
     * The gradient program of function {@code function} (null: main) of {@code forward}.
     * @param text the MIL text {@code forward} was parsed from (for line:col in errors), or null to use its canonical text
     * @throws GradException in one line, with line:col, when the function cannot be differentiated as asked
     */
    public static Program program(Program forward, String function, String loss, List<String> wrt, String text) {
        Function fn = function == null ? forward.main() : forward.function(function);
        Sites sites = new Sites(text != null ? text : MilWriter.write(forward, Dialect.IOS18), fn.name());
        Program p = new Grad(fn, sites).build(loss, wrt);
        return p.withWeights(forward.weights());
    }

    // ---------------------------------------------------------------------------------------------------------------

    private final Function fn;
    private final Sites sites;
    /** Weight gradients of matmul/linear/conv on the CPU (the training split), else all in MIL. */
    private boolean cpuWeights;
    private boolean seedInput;   // d_<loss> is an input even for a loss of one element (a trainer's loss scale)
    private final List<CpuGrad> cpuGrads = new ArrayList<>();
    private final Set<String> forwardValues = new HashSet<>();
    private final Map<String, Value> emittedGrads = new LinkedHashMap<>();
    private final Map<String, Operation> producer = new HashMap<>();
    private final Map<String, Value> values = new LinkedHashMap<>();

    private Grad(Function fn, Sites sites) {
        this.fn = fn;
        this.sites = sites;
        for (Value v : fn.inputs()) values.put(v.name(), v);
        for (Operation o : fn.operations())
            for (Value v : o.outputs()) {
                producer.put(v.name(), o);
                values.put(v.name(), v);
            }
    }

    private GradException err(String value, String message) {
        int[] at = sites.at(value);
        return new GradException(at[0], at[1], message.replace("@", at[0] > 0 ? " at " + at[0] + ":" + at[1] : ""));
    }

    /** Whether the edge from input {@code v} (bound to {@code param}) to o's outputs carries a gradient. */
    private static boolean differentiableEdge(Operation o, String param, Value v) {
        return RULES.containsKey(o.op()) && !stopsGradient(o) && !constantParam(o.op(), param) && v.dtype().isFloat()
                && o.outputs().stream().allMatch(out -> out.dtype().isFloat());
    }

    private Program build(String lossName, List<String> wrt) {
        // the loss: an output of the function, of a float type
        Value loss = values.get(lossName);
        if (loss == null || !fn.outputs().contains(loss))
            throw err(loss == null ? "" : lossName, "loss '" + lossName + "' is not an output of function " + fn.name() + "@ (outputs: "
                    + String.join(", ", fn.outputs().stream().map(Value::name).toList()) + "); name one of them with --loss, or make '" + lossName + "' an output");
        if (!loss.dtype().isFloat())
            throw err(lossName, "loss '" + lossName + "' is " + loss.type() + "@: integers have no gradient; use a float loss");
        // the wrt names: distinct float inputs
        if (wrt.isEmpty()) throw err("", "no wrt inputs given; name the inputs to differentiate, e.g. --wrt " + fn.inputs().get(0).name());
        Set<String> seen = new HashSet<>();
        for (String w : wrt) {
            Value v = values.get(w);
            if (v == null || producer.containsKey(w))
                throw err(v == null ? "" : w, "wrt '" + w + "' is not an input of function " + fn.name() + "@"
                        + (v != null ? " (it is computed by " + producer.get(w).op().milName() + ")" : "") + "; inputs: "
                        + String.join(", ", fn.inputs().stream().map(Value::name).toList()));
            if (!v.dtype().isFloat())
                throw err(w, "wrt '" + w + "' is " + v.type() + "@: integer inputs have no gradient; differentiate with respect to fp16 or fp32 inputs");
            if (!seen.add(w)) throw err(w, "wrt '" + w + "' is listed twice@");
        }

        // ancestors of the loss (any edge)
        Set<String> toLoss = new HashSet<>();
        ancestors(lossName, toLoss);
        // values depending on the wrt inputs through differentiable edges, and through any edge
        Set<String> diff = new HashSet<>(wrt), any = new HashSet<>(wrt);
        for (Operation o : fn.operations()) {
            boolean viaAny = false, viaDiff = false;
            for (var e : o.inputs().entrySet()) {
                List<Value> vs = e.getValue() instanceof Arg.Ref r ? List.of(r.value()) : e.getValue() instanceof Arg.Tuple t ? t.values() : List.of();
                for (Value v : vs) {
                    if (any.contains(v.name())) viaAny = true;
                    if (diff.contains(v.name()) && differentiableEdge(o, e.getKey(), v)) viaDiff = true;
                }
            }
            for (Value out : o.outputs()) {
                if (viaAny) any.add(out.name());
                if (viaDiff) diff.add(out.name());
            }
        }
        // every op between a wrt input and the loss must have a rule, and the path must stay in floats
        for (Operation o : fn.operations()) {
            Value out0 = o.outputs().get(0);
            boolean onPath = o.outputs().stream().anyMatch(v -> toLoss.contains(v.name()));
            if (!onPath) continue;
            boolean fromWrt = o.reads().stream().anyMatch(v -> any.contains(v.name()));
            if (!fromWrt) continue;
            if (!RULES.containsKey(o.op()) && !isNonDifferentiable(o))
                throw err(out0.name(), "no gradient for op " + o.op().milName() + "@ (value '" + out0.name() + "', on the path from "
                        + from(o, any, wrt) + " to the loss '" + lossName + "'); build it from ops that have rules (docs/autograd.md)");
        }
        if (!diff.contains(lossName)) {
            // a wrt input reaches the loss only through integers or comparisons: say where
            for (Operation o : fn.operations()) {
                Value out0 = o.outputs().get(0);
                if (o.outputs().stream().noneMatch(v -> toLoss.contains(v.name()))) continue;
                if (o.reads().stream().noneMatch(v -> any.contains(v.name()))) continue;
                boolean diffOut = o.outputs().stream().anyMatch(v -> diff.contains(v.name()));
                if (!diffOut)
                    throw err(out0.name(), "no differentiable path from " + from(o, any, wrt) + " to the loss '" + lossName + "': it goes through "
                            + o.op().milName() + "@ (value '" + out0.name() + "', " + out0.type() + "), which is not differentiable"
                            + (out0.dtype().isFloat() ? "" : " (integer or bool values carry no gradient)") + "; keep the path in fp16/fp32 ops");
            }
            throw err(lossName, "the loss '" + lossName + "'@ does not depend on " + String.join(", ", wrt) + "; differentiate with respect to inputs the loss uses");
        }

        // ops to replay: the ancestors of the loss, in order
        List<Operation> replay = new ArrayList<>();
        for (Operation o : fn.operations()) if (o.outputs().stream().anyMatch(v -> toLoss.contains(v.name()))) replay.add(o);

        Set<String> wrtSet = new LinkedHashSet<>(wrt);
        Program[] result = new Program[1];
        Program p = Mil.program().function(FUNCTION, f -> emit(f, lossName, wrtSet, toLoss, diff, replay)).build();
        result[0] = p;
        return p;
    }

    private static int[] filled(int n, int v) {
        int[] a = new int[n];
        Arrays.fill(a, v);
        return a;
    }

    private boolean isNonDifferentiable(Operation o) {
        return o.outputs().stream().noneMatch(v -> v.dtype().isFloat());
    }

    private String from(Operation o, Set<String> any, List<String> wrt) {
        // the wrt inputs this op depends on
        Set<String> anc = new HashSet<>();
        for (Value v : o.reads()) ancestors(v.name(), anc);
        List<String> ws = wrt.stream().filter(anc::contains).toList();
        return ws.isEmpty() ? "'" + wrt.get(0) + "'" : "'" + String.join("', '", ws) + "'";
    }

    private void ancestors(String name, Set<String> into) {
        List<String> stack = new ArrayList<>(List.of(name));
        while (!stack.isEmpty()) {
            String n = stack.remove(stack.size() - 1);
            if (!into.add(n)) continue;
            Operation o = producer.get(n);
            if (o != null) for (Value v : o.reads()) stack.add(v.name());
        }
    }

    /**
     * A weight gradient formed on the CPU (BLAS) from a saved activation and an upstream gradient, both [R, ·] after
     * flattening the leading dims: {@code transposed} dW = gᵀ·x (linear, and matmul(x, W, transpose_y=true)), else
     * dW = xᵀ·g (matmul(x, W)); for a conv ({@code conv} set) x is [N, Cin, H…] and g [N, Cout, O…] and the CPU
     * forms dW [Cout, Cin/G, K…] by im2col and sgemm. Contributions of several uses of one parameter add up.
     */
    public record CpuGrad(String param, String activation, String upstream, boolean transposed, ConvGeometry conv) {
        public CpuGrad(String param, String activation, String upstream, boolean transposed) {
            this(param, activation, upstream, transposed, null);
        }

        /** Whether this is a conv's weight gradient ({@link #conv} set), else matmul/linear's. */
        public boolean isConv() { return conv != null; }
    }

    /**
     * What the CPU needs of a conv to form its weight gradient from x [N, Cin, H…] and g [N, Cout, O…] (the kernel
     * size comes from the weight): per spatial dim the stride, the dilation and the padding before (the padding
     * after is implied by the output size), and the groups.
     */
    public record ConvGeometry(int groups, int[] strides, int[] dilations, int[] padBefore) {}

    /** The CPU form of o's weight gradient (matmul, linear, conv), or null when it stays in MIL (a weight that is not a wrt input, batched or transposed x). */
    private CpuGrad cpuGrad(Operation o, Set<String> wrt) {
        if (o.op() == Op.LINEAR) {
            Value w = o.value("weight"), x = o.value("x");
            if (!wrt.contains(w.name()) || x.rank() < 2) return null;
            return new CpuGrad(w.name(), x.name(), null, true);
        }
        if (o.op() == Op.MATMUL) {
            Value w = o.value("y"), x = o.value("x");
            if (!wrt.contains(w.name()) || w.rank() != 2 || x.rank() < 2 || o.literal("transpose_x").boolValue()) return null;
            return new CpuGrad(w.name(), x.name(), null, o.literal("transpose_y").boolValue());
        }
        if (o.op() == Op.CONV) {
            Value w = o.value("weight"), x = o.value("x");
            if (!wrt.contains(w.name())) return null;
            int spatial = x.rank() - 2;
            int[] s = o.literal("strides") == null ? null : o.literal("strides").toInts(), d = o.literal("dilations") == null ? null : o.literal("dilations").toInts();
            s = s == null ? filled(spatial, 1) : s;
            d = d == null ? filled(spatial, 1) : d;
            int[] in = new int[spatial], eff = new int[spatial], before = new int[spatial];
            for (int i = 0; i < spatial; i++) {
                in[i] = x.shape()[2 + i];
                eff[i] = d[i] * (w.shape()[2 + i] - 1) + 1;
            }
            Literal pl = o.literal("pad");
            int[] pads = ane4j.mil.Shapes.pads(o.literal("pad_type").stringValue(), pl == null ? new int[2 * spatial] : pl.toInts(), in, eff, s);
            for (int i = 0; i < spatial; i++) before[i] = pads[2 * i];
            return new CpuGrad(w.name(), x.name(), null, false, new ConvGeometry(o.literal("groups").intValue(), s, d, before));
        }
        return null;
    }

    /**
     * The training split of a function, as the hand-written kernels do it: the forward program (outputs: the loss, then
     * the activations the backward needs), the backward program (inputs: the forward inputs it reads, those activations,
     * and d_&lt;loss&gt; when the loss has several elements; outputs: d_&lt;w&gt; of the weights whose gradients stay in MIL,
     * then the upstream gradients g_&lt;op&gt; of the matmul/linear/conv ops whose weight gradients the CPU forms, see
     * {@link #cpuGrads}). Parameters are ordinary inputs: one compile of each program serves every step.
     */
    public record Split(Program forward, Program backward, List<String> savedInputs, List<String> savedActivations,
                        List<CpuGrad> cpuGrads, List<String> milGrads) {}

    /** The split of function {@code function} (null: main); {@code cpuWeights} false keeps every gradient in MIL. */
    public static Split split(Program program, String function, String loss, List<String> wrt, boolean cpuWeights) {
        return split(program, function, loss, wrt, cpuWeights, false);
    }

    /**
     * {@link #split(Program, String, String, List, boolean)}; {@code seedInput} true makes d_&lt;loss&gt; an input of the
     * backward even when the loss has one element, so that a trainer can seed it with its loss scale instead of 1.
     */
    public static Split split(Program program, String function, String loss, List<String> wrt, boolean cpuWeights, boolean seedInput) {
        Function fn = function == null ? program.main() : program.function(function);
        Grad g = new Grad(fn, new Sites(MilWriter.write(program, Dialect.IOS18), fn.name()));
        g.cpuWeights = cpuWeights;
        g.seedInput = seedInput;
        Function all = g.build(loss, wrt).main();
        // partition: the replayed forward ops, then the backward ops
        List<Operation> fwd = new ArrayList<>(), bwd = new ArrayList<>();
        Map<String, Operation> consts = new HashMap<>();
        for (Operation o : all.operations()) {
            boolean forward = o.outputs().stream().allMatch(v -> g.forwardValues.contains(v.name()));
            (forward ? fwd : bwd).add(o);
            if (forward && o.op() == Op.CONST) consts.put(o.output().name(), o);
        }
        // what the backward reads of the forward: inputs, activations (+ the CPU's activations); constants are copied
        Set<String> inputNames = new HashSet<>();
        for (Value v : all.inputs()) inputNames.add(v.name());
        Set<String> read = new LinkedHashSet<>();
        for (Operation o : bwd) for (Value v : o.reads()) if (g.forwardValues.contains(v.name()) || inputNames.contains(v.name())) read.add(v.name());
        for (CpuGrad c : g.cpuGrads) read.add(c.activation());
        Map<String, Value> allValues = new HashMap<>();
        for (Value v : all.inputs()) allValues.put(v.name(), v);
        for (Operation o : all.operations()) for (Value v : o.outputs()) allValues.put(v.name(), v);
        List<Value> bIn = new ArrayList<>(), fOut = new ArrayList<>();
        List<Operation> bOps = new ArrayList<>();
        List<String> savedInputs = new ArrayList<>(), savedActs = new ArrayList<>();
        fOut.add(all.outputs().get(0));
        for (Value v : all.inputs()) if (read.contains(v.name()) && !v.name().equals("d_" + loss)) { bIn.add(v); savedInputs.add(v.name()); }
        for (Operation o : fwd)
            for (Value v : o.outputs()) {
                if (!read.contains(v.name())) continue;
                if (o.op() == Op.CONST) bOps.add(o);
                else {
                    if (!fOut.contains(v)) fOut.add(v);
                    bIn.add(v);
                    savedActs.add(v.name());
                }
            }
        for (Value v : all.inputs()) if (v.name().equals("d_" + loss)) bIn.add(v);
        bOps.addAll(bwd);
        List<Value> bOut = all.outputs().subList(1, all.outputs().size());
        List<Value> fIn = all.inputs().stream().filter(v -> !v.name().equals("d_" + loss)).toList();
        Program fp = new Program(Map.of("forward", new Function("forward", fIn, fwd, fOut)), program.weights());
        Program bp = new Program(Map.of("backward", new Function("backward", bIn, bOps, bOut)), program.weights());
        List<String> milGrads = new ArrayList<>();
        for (var e : g.emittedGrads.entrySet()) milGrads.add(e.getKey());
        assert allValues.size() > 0;
        return new Split(fp, bp, savedInputs, savedActs, List.copyOf(g.cpuGrads), milGrads);
    }

    /** Accumulates gradients per forward value. */
    interface Sink {
        boolean needs(Value forwardValue);
        void add(Operation from, Value forwardValue, Value grad);
    }

    private void emit(FunctionBuilder f, String lossName, Set<String> wrt, Set<String> toLoss, Set<String> diff, List<Operation> replay) {
        Map<String, Value> map = new HashMap<>();
        for (Value v : fn.inputs()) map.put(v.name(), f.input(v.name(), v.type()));
        Value loss = values.get(lossName);
        Value seed = loss.type().count() > 1 || seedInput ? f.input("d_" + lossName, loss.type()) : null;

        // the forward, replayed under its own names
        for (Operation o : replay) {
            if (o.op() == Op.CONST) {
                map.put(o.output().name(), f.constant(o.output().name(), o.literal("val")));
                continue;
            }
            Map<String, Arg> args = new LinkedHashMap<>();
            for (var e : o.inputs().entrySet()) {
                args.put(e.getKey(), switch (e.getValue()) {
                    case Arg.Ref r -> Arg.of(map.get(r.value().name()));
                    case Arg.Tuple t -> new Arg.Tuple(t.values().stream().map(v -> map.get(v.name())).toList());
                    case Arg.Inline i -> i;
                });
            }
            List<Value> outs = f.apply(o.op(), args, o.attributes());
            if (outs.size() == 1) outs = List.of(f.named(o.output().name(), outs.get(0)));
            for (int i = 0; i < outs.size(); i++) map.put(o.outputs().get(i).name(), outs.get(i));
        }
        for (Value v : map.values()) forwardValues.add(v.name());
        List<Value> upstreamOutputs = new ArrayList<>();

        // the backward: reverse order, contributions summed
        Map<String, Value> grads = new HashMap<>();
        Vjp seedCtx = new Vjp(f, null, map, List.of(), null);
        grads.put(lossName, seed != null ? seed : seedCtx.filled(loss.type(), 1));
        Sink sink = new Sink() {
            @Override public boolean needs(Value v) { return diff.contains(v.name()) && v.dtype().isFloat(); }

            @Override public void add(Operation from, Value v, Value grad) {
                Value g = grad;
                if (!Arrays.equals(g.shape(), v.shape())) {
                    if (ane4j.mil.Shapes.broadcast(g.shape(), v.shape()) == null || !Arrays.equals(ane4j.mil.Shapes.broadcast(g.shape(), v.shape()), g.shape()))
                        throw new MilException("[grad] internal: the rule of " + from.op().milName() + " gave " + g.type() + " for '" + v.name() + "' " + v.type());
                    g = new Vjp(f, from, map, List.of(), this).unbroadcast(g, v.shape());
                }
                if (g.dtype() != v.dtype()) g = f.cast(g, v.dtype());
                Value prev = grads.get(v.name());
                grads.put(v.name(), prev == null ? g : f.add(prev, g));
            }
        };
        for (int k = replay.size() - 1; k >= 0; k--) {
            Operation o = replay.get(k);
            if (!RULES.containsKey(o.op())) continue;
            List<Value> up = new ArrayList<>();
            boolean anyGrad = false;
            for (Value out : o.outputs()) {
                Value g = diff.contains(out.name()) ? grads.get(out.name()) : null;
                up.add(g);
                anyGrad |= g != null;
            }
            if (!anyGrad) continue;
            boolean anyNeeded = o.reads().stream().anyMatch(sink::needs);
            if (!anyNeeded) continue;
            Vjp ctx = new Vjp(f, o, map, up, sink);
            CpuGrad cg = cpuWeights ? cpuGrad(o, wrt) : null;
            if (cg != null) {
                // the weight's gradient is formed on the CPU from the activation (saved by the forward) and g (an output here)
                ctx.elsewhere = Set.of(o.op() == Op.MATMUL ? "y" : "weight");
                String gName = "g_" + o.output().name();
                upstreamOutputs.add(f.named(gName, f.identity(up.get(0))));
                cpuGrads.add(new CpuGrad(cg.param(), cg.activation(), gName, cg.transposed(), cg.conv()));
                if (!ctx.needs("x") && !ctx.needs("bias")) continue;
            }
            try {
                RULES.get(o.op()).vjp(ctx);
            } catch (Vjp.Refusal r) {
                throw err(o.outputs().get(0).name(), r.getMessage().replaceFirst("rule", "rule@"));
            }
        }

        List<Value> outs = new ArrayList<>();
        outs.add(map.get(lossName));
        Set<String> onCpu = new HashSet<>();
        for (CpuGrad c : cpuGrads) onCpu.add(c.param());
        for (String w : wrt) {
            Value g = grads.get(w);
            Value in = map.get(w);
            if (g == null && onCpu.contains(w)) continue;   // formed on the CPU only
            if (g == null) g = seedCtx.zeros(in.type());   // does not reach the loss: zero gradient
            Value d = f.named("d_" + w, f.identity(g));
            emittedGrads.put(w, d);
            outs.add(d);
        }
        outs.addAll(upstreamOutputs);
        f.output(outs.toArray(Value[]::new));
    }

    // ---------------------------------------------------------------------------------------------------------------

    /** Where each value of one function is defined in MIL text: "name" → {line, column}, "" → the func line. */
    static final class Sites {
        private static final Pattern FUNC = Pattern.compile("\\bfunc\\s+([A-Za-z_]\\w*)\\s*(?:<[^>]*>)?\\s*\\(");
        private static final Pattern INPUT = Pattern.compile("(?:tensor<[^>]*>|\\b[a-z][a-z0-9]*)\\s+([A-Za-z_]\\w*)\\s*(?=[,)])");
        private static final Pattern DEF = Pattern.compile("(?:tensor<[^>]*>|\\b[a-z][a-z0-9]*)\\s+([A-Za-z_]\\w*)\\s*(?=[,=])");
        private final Map<String, int[]> at = new HashMap<>();

        Sites(String text, String function) {
            String current = null;
            String[] lines = text.split("\n", -1);
            for (int i = 0; i < lines.length; i++) {
                String line = lines[i];
                Matcher fm = FUNC.matcher(line);
                if (fm.find()) {
                    current = fm.group(1);
                    if (!current.equals(function)) continue;
                    at.put("", new int[] {i + 1, fm.start(1) + 1});
                    Matcher im = INPUT.matcher(line);
                    im.region(fm.end(), line.length());
                    while (im.find()) at.putIfAbsent(im.group(1), new int[] {i + 1, im.start(1) + 1});
                    continue;
                }
                if (!function.equals(current)) continue;
                int eq = line.indexOf('=');
                if (eq < 0) continue;
                Matcher dm = DEF.matcher(line);
                dm.region(0, eq + 1);
                while (dm.find()) at.putIfAbsent(dm.group(1), new int[] {i + 1, dm.start(1) + 1});
            }
        }

        int[] at(String value) {
            int[] p = at.get(value);
            if (p == null) p = at.get("");
            return p == null ? new int[] {0, 0} : p;
        }
    }
}
