package ane4j.chip;

import ane4j.mil.Arg;
import ane4j.mil.DType;
import ane4j.mil.Function;
import ane4j.mil.Literal;
import ane4j.mil.Op;
import ane4j.mil.Operation;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checks a MIL program against the {@link Rule}s of one {@link Chip}. The API other packages use:
 * <pre>
 * List&lt;Violation&gt; v = ChipRules.check(program, Chip.M3);          // every violation, in program order
 * List&lt;Violation&gt; v = ChipRules.check(milText, program, Chip.M3); // the same with line:col from the text
 * ChipRules.requireCompatible(program, "main", Chip.M3);             // throws ChipRuleException on an error
 * </pre>
 * Only {@link Severity#ERROR}s make a program incompatible; warnings (costs, approximate or conflicting limits) and notes
 * (numeric cliffs, which depend on values) are reported only.
 */
public final class ChipRules {
    private ChipRules() {}

    /** Smallest surface ironmill measured to work (docs/design/ane-constraints.md). */
    static final long IRONMILL_MIN_SURFACE = 16384;

    /** Every violation of every function of {@code program} on {@code chip}. */
    public static List<Violation> check(Program program, Chip chip) {
        List<Violation> out = new ArrayList<>();
        for (Function f : program.functions().values()) out.addAll(check(f, chip));
        return out;
    }

    /** {@link #check(Program, Chip)} with each violation placed at the line:col where its value is defined in {@code milText}. */
    public static List<Violation> check(String milText, Program program, Chip chip) {
        Map<String, int[]> sites = sites(milText);
        List<Violation> out = new ArrayList<>();
        for (Violation v : check(program, chip)) {
            int[] at = sites.get(v.function() + "/" + (v.value() == null ? "" : v.value()));
            out.add(at == null ? v : v.at(at[0], at[1]));
        }
        return out;
    }

    /** The errors only. */
    public static List<Violation> errors(List<Violation> violations) {
        return violations.stream().filter(Violation::isError).toList();
    }

    /**
     * Throws {@link ChipRuleException} when function {@code functionName} breaks an error rule of {@code chip}, with the
     * one-line message both backends use: {@code [ane] sdpaFwd breaks chip rule axis-cap on M3: … (limit 16384; source …)}.
     */
    public static void requireCompatible(Program program, String functionName, Chip chip) {
        Function f = program.function(functionName);
        List<Violation> errors = errors(check(f, chip));
        if (errors.isEmpty()) return;
        Violation first = errors.get(0);
        String more = errors.size() == 1 ? "" : "; " + (errors.size() - 1) + " more";
        throw new ChipRuleException("[ane] " + f.name() + " breaks chip rule " + first.rule().id() + " on " + chip + ": "
                + first.what() + " (limit " + (first.limit().isEmpty() ? "-" : first.limit()) + "; source: "
                + shortSource(first.rule()) + ")" + more + "; Apple's compiler would fail it with \"ANECCompile() FAILED\"; "
                + "list every violation with: ane4j mil check FILE.mil --chip " + chip.name().toLowerCase(java.util.Locale.ROOT), errors);
    }

    /** The source up to its first clause, for one-line messages. */
    static String shortSource(Rule r) {
        String s = r.source();
        int cut = s.length();
        for (String sep : new String[] {" (", ";", ": '"}) {
            int i = s.indexOf(sep);
            if (i > 0 && i < cut) cut = i;
        }
        return s.substring(0, cut);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // one function

    /** Every violation of one function, in program order (function-level notes last). */
    public static List<Violation> check(Function f, Chip chip) {
        var c = new Checker(f, chip);
        c.run();
        return c.out;
    }

    private static final class Checker {
        final Function f;
        final Chip chip;
        final List<Violation> out = new ArrayList<>();
        final Set<String> feedsTranspose = new HashSet<>();

        Checker(Function f, Chip chip) {
            this.f = f;
            this.chip = chip;
        }

        void add(Rule r, Value v, String detail) {
            Severity s = r.severity(chip);
            if (s != null) out.add(new Violation(r, s, chip, f.name(), v == null ? null : v.name(), v == null ? null : v.type(), detail, 0, 0));
        }

        void run() {
            for (Operation o : f.operations())
                if (o.op() == Op.TRANSPOSE && o.value("x") != null) feedsTranspose.add(o.value("x").name());
            for (Value v : f.inputs()) { axes(v, feedsTranspose.contains(v.name())); surface(v, "input"); }
            Map<String, Set<Long>> blobOffsets = new LinkedHashMap<>();
            long blobBytes = 0;
            int fp16Matmuls = 0, widthSlices = 0;
            for (Operation o : f.operations()) {
                Value v = o.outputs().get(0);
                if (o.op() == Op.CONST) {
                    Literal l = v.constant() != null ? v.constant() : o.literal("val");
                    if (l != null && l.isBlob()) {
                        blobBytes += l.type().byteSize();
                        packed(blobOffsets, l, v);
                    }
                    if (!isTensorData(v)) continue;
                }
                for (Value ov : o.outputs()) {
                    axes(ov, o.op() == Op.TRANSPOSE);
                    lastAxis(ov);
                }
                switch (o.op()) {
                    case MATMUL -> { contraction(o, v); if (v.dtype() == DType.FP16) fp16Matmuls++; }
                    case CONV -> convWidth(o, v);
                    case CAST -> add(Rule.CAST, v, "cast " + o.value("x").dtype() + " → " + v.dtype() + " (use fp16 inputs and outputs)");
                    case GATHER -> { Value ix = o.value("indices"); if (ix != null && !ix.isConst()) add(Rule.RUNTIME_GATHER, v, "indices '" + ix.name() + "' are computed at run time"); }
                    case SCALED_DOT_PRODUCT_ATTENTION -> { if (o.inputs().containsKey("attn_mask")) add(Rule.SDPA_MASK_IGNORED, v, "attn_mask is given but not applied on the ANE"); }
                    case SLICE_BY_SIZE -> { if (widthOffset(o)) widthSlices++; }
                    default -> {}
                }
            }
            for (Value v : f.outputs()) surface(v, "output");
            if (blobBytes > Rule.WEIGHT_BUDGET.limit(chip))
                add(Rule.WEIGHT_BUDGET, null, String.format("%.1f MB of BLOBFILE weights (approximate limit 8 MB)", blobBytes / 1048576.0));
            if (fp16Matmuls > 0)
                add(Rule.MATMUL_SATURATION, null, fp16Matmuls + " fp16 matmul" + (fp16Matmuls == 1 ? "" : "s") + ": an output above 32752 in magnitude becomes ±inf");
            if (widthSlices > 0)
                add(Rule.SLICE_CLAMP, null, widthSlices + " slice" + (widthSlices == 1 ? "" : "s") + " at a non-zero width offset: values above 4094 in magnitude become ±inf");
        }

        /** Integer/bool/string constants are op parameters (shapes, axes, flags), not tensors the ANE stores. */
        boolean isTensorData(Value v) {
            return v.rank() > 0 && (v.dtype().isFloat() || v.dtype() == DType.INT8 || v.dtype() == DType.UINT8);
        }

        void axes(Value v, boolean transposeExtent) {
            int[] s = v.shape();
            for (int a = 0; a < s.length; a++) {
                Rule r = transposeExtent ? Rule.TRANSPOSE_EXTENT : s.length == 4 && a == 1 ? Rule.CHANNEL_CAP : Rule.AXIS_CAP;
                if (s[a] > r.limit(chip)) {
                    add(r, v, "axis " + a + " is " + s[a]);
                    return;
                }
            }
        }

        void lastAxis(Value v) {
            if (!isTensorData(v)) return;
            long bytes = (long) v.type().dim(-1) * v.dtype().byteSize();
            if (bytes % 64 == 0) return;
            long padded = (bytes + 63) / 64 * 64;
            add(Rule.LAST_AXIS_64_BYTES, v, "last axis is " + bytes + " bytes, stored as " + padded
                    + String.format(" (%.2f× the memory and traffic)", (double) padded / bytes));
        }

        void surface(Value v, String role) {
            long bytes = v.type().byteSize();
            if (bytes < Rule.MIN_SURFACE.limit(chip))
                add(Rule.MIN_SURFACE, v, role + " is " + bytes + " bytes: " + (bytes < IRONMILL_MIN_SURFACE
                        ? "below both measured minimums (16 KB ironmill, 48 KB Orion)"
                        : "above ironmill's 16 KB, below Orion's 48 KB") + "; the ANE backend pads it to 48 KB");
            int[] s = v.shape();
            if (s.length == 4 && s[2] == 1 && s[1] > 768 && s[3] < Rule.IO_WIDE_SHORT.limit(chip))
                add(Rule.IO_WIDE_SHORT, v, role + " has " + s[1] + " channels and width " + s[3]);
        }

        void contraction(Operation o, Value out) {
            Value x = o.value("x");
            if (x == null || x.rank() < 2) return;
            boolean tx = o.literal("transpose_x").boolValue();
            int k = x.type().dim(tx ? -2 : -1);
            if (k % Rule.MATMUL_CONTRACTION_32.limit(chip) != 0)
                add(Rule.MATMUL_CONTRACTION_32, out, "contraction is " + k + " (x '" + x.name() + "')");
        }

        void convWidth(Operation o, Value out) {
            Value w = o.value("weight");
            if (w == null || w.rank() < 4) return;
            int kw = w.type().dim(-1);
            if (kw > Rule.CONV_KERNEL_WIDTH.limit(chip)) add(Rule.CONV_KERNEL_WIDTH, out, "kernel width is " + kw);
        }

        boolean widthOffset(Operation o) {
            Literal b = o.literal("begin");
            if (b == null) return false;
            int[] begin = b.toInts();
            return begin.length > 0 && begin[begin.length - 1] != 0;
        }

        /** Records a BLOBFILE reference; reports a blob at an offset other than 64 (a file holding several blobs). */
        void packed(Map<String, Set<Long>> offsets, Literal l, Value v) {
            Literal.BlobRef ref = l.blobRef();
            Set<Long> seen = offsets.computeIfAbsent(ref.path(), p -> new HashSet<>());
            seen.add(ref.offset());
            if (ref.offset() == 64 && seen.size() == 1) return;
            add(Rule.PACKED_BLOB, v, ref.path() + " at offset " + ref.offset() + (seen.size() > 1 ? " (" + seen.size() + " blobs in one file)" : "")
                    + "; write one file per weight, offset 64");
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // positions in MIL text

    private static final Pattern FUNC = Pattern.compile("\\bfunc\\s+([A-Za-z_]\\w*)\\s*(?:<[^>]*>)?\\s*\\(");
    private static final Pattern INPUT = Pattern.compile("(?:tensor<[^>]*>|\\b[a-z][a-z0-9]*)\\s+([A-Za-z_]\\w*)\\s*(?=[,)])");
    private static final Pattern DEF = Pattern.compile("(?:tensor<[^>]*>|\\b[a-z][a-z0-9]*)\\s+([A-Za-z_]\\w*)\\s*=\\s*[A-Za-z_]\\w*\\s*\\(");

    /** "function/value" → {line, column} (1-based) of each definition, and "function/" → the func line. */
    static Map<String, int[]> sites(String text) {
        Map<String, int[]> sites = new HashMap<>();
        String function = "";
        String[] lines = text.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            Matcher fm = FUNC.matcher(line);
            if (fm.find()) {
                function = fm.group(1);
                sites.putIfAbsent(function + "/", new int[] {i + 1, fm.start(1) + 1});
                Matcher im = INPUT.matcher(line);
                im.region(fm.end(), line.length());
                while (im.find()) sites.putIfAbsent(function + "/" + im.group(1), new int[] {i + 1, im.start(1) + 1});
                continue;
            }
            Matcher dm = DEF.matcher(line);
            if (dm.find()) sites.putIfAbsent(function + "/" + dm.group(1), new int[] {i + 1, dm.start(1) + 1});
        }
        return sites;
    }
}
