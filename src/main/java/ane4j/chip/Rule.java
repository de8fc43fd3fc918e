package ane4j.chip;

/**
 * The known ANE constraints per chip family, each with where it was measured. None of them was measured by ane4j:
 * nothing here has run on Apple hardware yet. Where sources conflict the entry says so and the severity is the weaker
 * one ({@link Severity#WARNING}) unless a measurement on that very chip family shows the failure.
 * <p>Limits are per chip in the order M1, M2, M3, M4, M5 ({@code 0}: the rule has no number).
 */
public enum Rule {
    AXIS_CAP("axis-cap",
            "every axis of a tensor except the channel axis (axis 1 of a rank-4 tensor): H, W, matmul contraction",
            new long[] {16384, 16384, 16384, 65536, 65536}, all(Severity.ERROR),
            "ANEForge aneforge/_targets.py _LIMITS max_tensor_dim {A13: 16384, A16: 65536} (16385 rejected on a live M1, "
                    + "measured on M2 and M5; M3 is the A15 tier, which inherits 16384); rustane #13 (M3 Ultra: an input "
                    + "wider than 16384 fails to compile); ANEForge PR #57 (a [KV, S·dh] flatten failed past 65536 on A16); "
                    + "ironmill docs/design/ane-constraints.md says 16384 without naming the chip, which maderix PR #26 "
                    + "(M4 Pro splits at 65536) contradicts for M4/M5"),
    TRANSPOSE_EXTENT("transpose-extent",
            "any axis of a transpose's output, or of a function input that feeds a transpose (they ride the wide offset field)",
            new long[] {8388607, 8388607, 8388607, 16777215, 16777215}, all(Severity.ERROR),
            "ANEForge aneforge/_targets.py _LIMITS transpose_extent {A13: 2^23-1, A16: 2^24-1} and preflight(): "
                    + "transposes and their direct inputs take this extent instead of the axis cap"),
    CHANNEL_CAP("channel-cap",
            "the channel axis (axis 1) of a rank-4 tensor",
            new long[] {65536, 65536, 65536, 65536, 65536}, all(Severity.ERROR),
            "ANEForge aneforge/_targets.py _LIMITS channel_extent {A13: 65536} (65537 rejected on a live M1; same on A14, A16)"),
    MATMUL_CONTRACTION_32("matmul-contraction-32",
            "the contraction (inner) dimension of a matmul is a multiple of 32",
            new long[] {32, 32, 32, 32, 32},
            new Severity[] {Severity.ERROR, Severity.WARNING, Severity.WARNING, Severity.WARNING, Severity.WARNING},
            "maderix/ANE issue #47 (M1, runtime-operand matmul): 'Matmul inner dim (Ci) must be a multiple of 32 — "
                    + "non-multiples also silently produce zeros'; measured on M1 only (a warning elsewhere); ironmill "
                    + "docs/design/ane-constraints.md lists 32-channel alignment as an efficiency rule"),
    LAST_AXIS_64_BYTES("last-axis-64-bytes",
            "the last axis is padded to a multiple of 64 bytes in the ANE's layout (a cost: ×padding in memory and traffic)",
            new long[] {64, 64, 64, 64, 64}, all(Severity.WARNING),
            "Apple ml-ane-transformers 'Neural Engine rules' (via docs/anchors.md §1.2: the last axis is unpacked and aligned "
                    + "to 64 bytes); tinygrad extra/accel/ane (all strides multiples of 0x40); ironmill "
                    + "docs/design/ane-constraints.md (64-byte alignment)"),
    MIN_SURFACE("min-surface",
            "a function input or output needs an IOSurface of at least the minimum size",
            new long[] {49152, 49152, 49152, 49152, 49152}, all(Severity.WARNING),
            "CONFLICT: Orion docs/ane_constraints.md #4 (M4 Max): status 0x1d below the ~48 KB [768,16] surface; ironmill "
                    + "docs/design/ane-constraints.md: minimum 16 KB ('previously assumed 48KB — empirically corrected'). "
                    + "ane4j's ANE backend pads every surface to 48 KB (SurfacePlan), which satisfies both"),
    IO_WIDE_SHORT("io-wide-short",
            "a [1,C,1,S] function input or output with C > ~768 and S < 32",
            new long[] {32, 32, 32, 32, 32}, all(Severity.WARNING),
            "ironmill docs/design/ane-constraints.md: 'ANE rejects [1,C,1,S] I/O tensors' with C > ~768 and S < 32 "
                    + "(approximate, chip not named)"),
    CONV_KERNEL_WIDTH("conv-kernel-width",
            "the kernel width of a conv",
            new long[] {13, 13, 13, 15, 15},
            new Severity[] {Severity.ERROR, Severity.WARNING, Severity.WARNING, Severity.ERROR, Severity.ERROR},
            "CONFLICT: ANEForge aneforge/_targets.py _LIMITS conv_kw_max {A13: 13, A16: 15} (14 rejected on M1, 16 on M5; "
                    + "A14/A15 inherit 13, unmeasured: a warning on M2/M3); ironmill docs/design/ane-constraints.md says "
                    + "16×16 (chip not named)"),
    CAST("cast",
            "the cast op (fp32 I/O with casts inside the program)",
            new long[] {0, 0, 0, 0, 0},
            new Severity[] {Severity.ERROR, Severity.ERROR, null, null, null},
            "maderix/ANE PR #6 (tested on M1 Pro, macOS 26.3): 'M1/M2 ANE can't do the cast op', it retries with fp16 "
                    + "I/O; maderix inmem_bench.m runs fp32 I/O with casts on M4"),
    PACKED_BLOB("packed-blob",
            "one weight file holds several blobs (a BLOBFILE offset other than 64)",
            new long[] {64, 64, 64, 64, 64},
            new Severity[] {Severity.ERROR, Severity.WARNING, null, null, null},
            "maderix/ANE benchmarks/ANE_BENCHMARK_REPORT.md (Cross-Generation MIL Compatibility): M1 'Single-blob "
                    + "weights FAIL', 'BLOBFILE offset refs FAIL', 'Per-matrix weight blobs YES'; M3/M4/M5 YES; M2 not "
                    + "measured (maderix PR #6 groups M1/M2): a warning there"),
    RUNTIME_GATHER("runtime-gather",
            "gather with runtime (non-constant) indices",
            new long[] {0, 0, 0, 0, 0}, all(Severity.ERROR),
            "ironmill docs/design/ane-op-support-matrix.md: gather rejected, 'only runtime/dynamic gather fails' "
                    + "(static constexpr_lut_to_dense works); chip not named"),
    SDPA_MASK_IGNORED("sdpa-mask-ignored",
            "scaled_dot_product_attention with attn_mask: the ANE ignores the mask",
            new long[] {0, 0, 0, 0, 0}, all(Severity.WARNING),
            "Orion docs/ane_constraints.md #6 and maderix/ANE (the mask compiles and runs with no effect); decompose "
                    + "into matmul + additive mask + softmax + matmul"),
    WEIGHT_BUDGET("weight-budget",
            "bytes of constant (BLOBFILE) weights in one program",
            new long[] {8L << 20, 8L << 20, 8L << 20, 8L << 20, 8L << 20}, all(Severity.WARNING),
            "ironmill docs/design/ane-constraints.md: a Qwen3-0.6B sub-program with ~8 MB of fp16 weights fails "
                    + "ANECCompile() once one more op is added, 'NOT weight size alone' (approximate, structure-dependent: "
                    + "a warning); only static-weight kernels bake weights"),
    MATMUL_SATURATION("matmul-saturation",
            "an fp16 matmul output whose magnitude rounds above 32752 (fp16 max / 2) becomes ±inf",
            new long[] {32752, 32752, 32752, 32752, 32752}, all(Severity.NOTE),
            "ANEForge issue #115 (M5: 'saturates at ~32752 = fp16_max/2, for every contraction size K'), PR #145 (M2 Pro: "
                    + "~32758.8, 'architecture-wide, not per-generation'), issues #164/#178; M1, M3 and M4 not measured "
                    + "there: assumed the same"),
    SLICE_CLAMP("slice-clamp",
            "a slice_by_size at a non-zero offset of the last (width) axis clamps |v| > 4094 to ±inf",
            new long[] {4094, 4094, 4094, 0, 0},
            new Severity[] {Severity.NOTE, Severity.NOTE, Severity.NOTE, null, null},
            "ANEForge aneforge/_targets.py FP16_SLICE_SAT = 4094 (the Q.4 ×16 crop-DMA), PR #148 (M1), PR #145 (M2 Pro), "
                    + "issue #137 (M1 Max), exact on M5 (issues #164/#178: 'pre-A16 parts'); M3 NOT measured "
                    + "(_targets.py: 'A15 pending M3 data'): assumed present, as on every pre-A16 part measured");

    private final String id;
    private final String what;
    private final long[] limits;
    private final Severity[] severities;
    private final String source;

    Rule(String id, String what, long[] limits, Severity[] severities, String source) {
        this.id = id;
        this.what = what;
        this.limits = limits;
        this.severities = severities;
        this.source = source;
    }

    private static Severity[] all(Severity s) { return new Severity[] {s, s, s, s, s}; }

    /** Short name used in messages, e.g. {@code axis-cap}. */
    public String id() { return id; }

    /** What the rule constrains. */
    public String what() { return what; }

    /** The limit on this chip (0 when the rule has no number). */
    public long limit(Chip chip) { return limits[chip.ordinal()]; }

    /** How much breaking it matters on this chip; null when the rule does not apply there. */
    public Severity severity(Chip chip) { return severities[chip.ordinal()]; }

    public boolean appliesTo(Chip chip) { return severity(chip) != null; }

    /** Where it was observed. */
    public String source() { return source; }

    /** A rule by its {@link #id()}. */
    public static Rule byId(String id) {
        for (Rule r : values()) if (r.id.equals(id)) return r;
        throw new IllegalArgumentException("[chip] no rule '" + id + "'");
    }
}
