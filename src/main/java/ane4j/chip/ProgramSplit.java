package ane4j.chip;

import ane4j.mil.Function;
import ane4j.mil.Op;
import ane4j.mil.Operation;
import ane4j.mil.Program;
import ane4j.mil.Value;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A program the ANE would refuse, cut at op boundaries into consecutive programs, the chip rules deciding where: every
 * part meant for the ANE passes {@code ane4j mil check --chip} without an error, and the ops no cut can make legal (a
 * tensor past the chip's axis cap, such as a 32000-wide classifier on M1–M3; a cast on M1; a gather with run-time
 * indices) form CPU parts, as the hand-written kernels leave the classifier to the CPU. Each part's inputs are the
 * function inputs and earlier parts' values it reads, its outputs the values later parts or the caller read (the saved
 * interface); constants are copied into every part that reads them. Running the parts in order gives the unsplit
 * program's results ({@code ProgramSplitTest}). Not yet run on Apple hardware.
 *
 * <pre>
 *   ops:    a b c [d e] f g          d, e break an error rule on this chip
 *   parts:  ANE(a b c) → CPU(d e) → ANE(f g)        with maxOps 2: ANE(a b) → ANE(c) → CPU(d e) → ANE(f g)
 * </pre>
 */
public final class ProgramSplit {
    private ProgramSplit() {}

    public enum Where { ANE, CPU }

    /** One consecutive piece: a one-function program, where it runs, and its interface (value names). */
    public record Part(Program program, Where where, List<String> inputs, List<String> outputs) {
        public Function function() { return program.main(); }
    }

    /** {@link #split(Program, Chip, int)} without an op budget. */
    public static List<Part> split(Program program, Chip chip) { return split(program, chip, Integer.MAX_VALUE); }

    /**
     * The parts of {@code program}'s main function on {@code chip}; one ANE part when it breaks no error rule and has at
     * most {@code maxOps} ops (constants and views of the inputs not counted).
     */
    public static List<Part> split(Program program, Chip chip, int maxOps) {
        if (maxOps < 1) throw new IllegalArgumentException("[split] maxOps is " + maxOps + "; give at least 1");
        Function f = program.main();
        List<Operation> ops = new ArrayList<>();
        Map<String, Operation> consts = new HashMap<>(), byLabel = new HashMap<>();
        for (Operation o : f.operations()) {
            if (o.op() == Op.CONST) consts.put(o.output().name(), o);
            else {
                ops.add(o);
                byLabel.put(o.label(), o);
            }
        }
        // the chip decides: move every op an error names (or that reads a value an error names) to the CPU, re-cut, repeat
        Set<Operation> cpu = new HashSet<>(), views = views(f, ops, consts);
        while (true) {
            List<Part> parts = cut(program, f, ops, consts, views, cpu, maxOps);
            boolean moved = false;
            for (Part p : parts) {
                if (p.where() != Where.ANE) continue;
                List<Violation> errors = ChipRules.errors(ChipRules.check(p.function(), chip));
                if (errors.isEmpty()) continue;
                int before = cpu.size();
                for (Violation v : errors) {
                    // a value of this part: its op moves (its readers follow if the value still breaks the rule as an
                    // input of the next ANE part); an input or a constant of the part: the ops that read it move
                    boolean isInput = p.inputs().contains(v.value()) || consts.containsKey(v.value());
                    for (Operation o : p.function().operations()) {
                        if (o.op() == Op.CONST) continue;
                        boolean defines = o.outputs().stream().anyMatch(x -> x.name().equals(v.value()));
                        boolean reads = isInput && o.reads().stream().anyMatch(x -> x.name().equals(v.value()));
                        if (defines || reads || v.value() == null) cpu.add(byLabel.get(o.label()));
                    }
                }
                // an error no op of the part accounts for: the whole part goes to the CPU
                if (cpu.size() == before) for (Operation o : p.function().operations()) if (o.op() != Op.CONST) cpu.add(byLabel.get(o.label()));
                moved = true;
            }
            if (!moved) return parts;
        }
    }

    /**
     * Consecutive runs of ANE or CPU ops (ANE runs cut every maxOps ops) as parts with their interfaces. Views of the
     * program's inputs ({@code views}: slices, reshapes and concats of inputs and constants, such as the parameters
     * rebuilt from a packed input) are copied into every part that reads them, as constants are, rather than handed
     * from part to part.
     */
    private static List<Part> cut(Program program, Function f, List<Operation> ops, Map<String, Operation> consts, Set<Operation> views,
                                  Set<Operation> cpu, int maxOps) {
        Map<String, Operation> viewOf = new HashMap<>();
        Map<Operation, Integer> index = new HashMap<>();
        for (int i = 0; i < ops.size(); i++) index.put(ops.get(i), i);
        for (Operation o : views) if (!cpu.contains(o)) for (Value v : o.outputs()) viewOf.put(v.name(), o);
        List<List<Operation>> runs = new ArrayList<>();
        List<Where> where = new ArrayList<>();
        for (Operation o : ops) {
            if (viewOf.containsKey(o.outputs().get(0).name())) continue;
            Where w = cpu.contains(o) ? Where.CPU : Where.ANE;
            boolean fresh = runs.isEmpty() || where.get(where.size() - 1) != w || (w == Where.ANE && runs.get(runs.size() - 1).size() >= maxOps);
            if (fresh) {
                runs.add(new ArrayList<>());
                where.add(w);
            }
            runs.get(runs.size() - 1).add(o);
        }
        // each run with the views it reads (transitively), in program order; what it defines and what it reads
        List<List<Operation>> bodies = new ArrayList<>();
        List<Set<String>> defined = new ArrayList<>(), needed = new ArrayList<>();
        for (List<Operation> run : runs) {
            Set<Operation> body = new HashSet<>(run);
            List<Operation> stack = new ArrayList<>(run);
            while (!stack.isEmpty())
                for (Value v : stack.remove(stack.size() - 1).reads()) {
                    Operation view = viewOf.get(v.name());
                    if (view != null && body.add(view)) stack.add(view);
                }
            List<Operation> ordered = new ArrayList<>(body);
            ordered.sort(java.util.Comparator.comparingInt(index::get));
            Set<String> def = new HashSet<>(), need = new LinkedHashSet<>();
            for (Operation o : ordered) for (Value v : o.outputs()) def.add(v.name());
            for (Operation o : ordered) for (Value v : o.reads()) if (!def.contains(v.name())) need.add(v.name());
            bodies.add(ordered);
            defined.add(def);
            needed.add(need);
        }
        Set<String> fnOutputs = new HashSet<>();
        for (Value v : f.outputs()) fnOutputs.add(v.name());
        List<Part> parts = new ArrayList<>();
        for (int i = 0; i < runs.size(); i++) {
            List<Operation> body = bodies.get(i);
            // inputs: values read here, defined neither here nor by a constant
            LinkedHashSet<Value> in = new LinkedHashSet<>();
            LinkedHashSet<Operation> needConsts = new LinkedHashSet<>();
            for (Operation o : body)
                for (Value v : o.reads()) {
                    if (defined.get(i).contains(v.name())) continue;
                    if (consts.containsKey(v.name())) needConsts.add(consts.get(v.name()));
                    else in.add(v);
                }
            // outputs: values defined here that a later run or the caller reads
            Set<String> later = new HashSet<>(fnOutputs);
            for (int j = i + 1; j < runs.size(); j++) later.addAll(needed.get(j));
            List<Value> out = new ArrayList<>();
            for (Operation o : runs.get(i)) for (Value v : o.outputs()) if (later.contains(v.name())) out.add(v);
            if (out.isEmpty()) continue;   // nothing of it is read (dead ops)
            List<Operation> all = new ArrayList<>(needConsts);
            all.addAll(body);
            String name = f.name() + "_part" + parts.size();
            Function fn = new Function(name, List.copyOf(in), all, out);
            parts.add(new Part(new Program(Map.of(name, fn), program.weights()), where.get(i),
                    in.stream().map(Value::name).toList(), out.stream().map(Value::name).toList()));
        }
        return parts;
    }

    /**
     * The ops copied into every part that reads them, whose values are no output of the program: slices, reshapes and
     * concats computed from the program's inputs and constants alone (through other such ops), and any op computed from
     * constants alone (a part of those only would have no input).
     */
    private static Set<Operation> views(Function f, List<Operation> ops, Map<String, Operation> consts) {
        Set<String> inputs = new HashSet<>(), fnOutputs = new HashSet<>(), viewValues = new HashSet<>(), constValues = new HashSet<>(consts.keySet());
        for (Value v : f.inputs()) inputs.add(v.name());
        for (Value v : f.outputs()) fnOutputs.add(v.name());
        Set<Operation> views = new LinkedHashSet<>();
        for (Operation o : ops) {
            if (o.outputs().stream().anyMatch(v -> fnOutputs.contains(v.name()))) continue;
            boolean fromConstants = o.reads().stream().allMatch(v -> constValues.contains(v.name()));
            boolean view = (o.op() == Op.SLICE_BY_SIZE || o.op() == Op.RESHAPE || o.op() == Op.CONCAT)
                    && o.reads().stream().allMatch(v -> inputs.contains(v.name()) || constValues.contains(v.name()) || viewValues.contains(v.name()));
            if (!fromConstants && !view) continue;
            views.add(o);
            for (Value v : o.outputs()) (fromConstants ? constValues : viewValues).add(v.name());
        }
        return views;
    }

}
