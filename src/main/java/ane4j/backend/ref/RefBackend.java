package ane4j.backend.ref;

import ane4j.backend.BackendException;
import ane4j.backend.Backend;
import ane4j.backend.Backends;
import ane4j.backend.ChipDescription;
import ane4j.backend.CountingBackend;
import ane4j.backend.Kernel;
import ane4j.chip.Chip;
import ane4j.chip.ChipRuleException;
import ane4j.chip.ChipRules;
import ane4j.mil.Function;
import ane4j.mil.Program;

/**
 * The reference backend: an interpreter of every MIL op in {@link ane4j.mil.Op}, with the ANE's storage semantics
 * (fp16 values rounded to nearest even after every op, computed in fp32 inside an op). It is the executable
 * specification of MIL in ane4j. Compiling plans the graph once (buffers, views, constants); see {@link Planner}.
 *
 * <p>Knobs: {@code -Dane4j.ref.storage=fp32} keeps fp16 values in fp32 (to compare), {@code -Dane4j.ref.honorSdpaMask=true}
 * applies {@code attn_mask} of {@code scaled_dot_product_attention} (the ANE ignores it), {@code -Dane4j.compileBudget}
 * limits compiles (unlimited by default), {@code -Dane4j.ref.chip=m1…m5} emulates a chip family: programs breaking one of
 * its error rules ({@link ChipRules}) are refused with the ANE backend's message, and its numeric cliffs apply (fp16
 * matmul outputs above 32752 become ±inf; on M1–M3 a slice at a non-zero width offset turns |v| > 4094 into ±inf).
 * Without it nothing is emulated.
 */
public final class RefBackend extends CountingBackend {
    public static final String STORAGE_PROPERTY = Backends.REF_STORAGE_PROPERTY;
    public static final String SDPA_MASK_PROPERTY = "ane4j.ref.honorSdpaMask";
    public static final String CHIP_PROPERTY = "ane4j.ref.chip";

    /**
     * @param fp32Storage  keep fp16-typed values in fp32 instead of rounding them after every op
     * @param honorSdpaMask apply {@code attn_mask} of {@code scaled_dot_product_attention}
     * @param compileBudget null: {@code -Dane4j.compileBudget}, else unlimited
     * @param chip          the chip family to emulate (rules and numeric cliffs); null: none
     */
    public record Options(boolean fp32Storage, boolean honorSdpaMask, Long compileBudget, Chip chip) {
        /** The ANE's numerics: fp16 storage, attn_mask ignored; compile budget from {@code -Dane4j.compileBudget}; no chip emulated. */
        public static final Options ANE_LIKE = new Options(false, false, null, null);
        /** As {@link #ANE_LIKE} with fp16-typed values kept in fp32 (the exact reference to compare with). */
        public static final Options FP32_STORAGE = ANE_LIKE.withFp32Storage(true);
        /** As {@link #ANE_LIKE} but {@code scaled_dot_product_attention} applies its {@code attn_mask} (PyTorch's semantics). */
        public static final Options HONOR_SDPA_MASK = ANE_LIKE.withHonorSdpaMask(true);

        public Options(boolean fp32Storage, boolean honorSdpaMask, Long compileBudget) { this(fp32Storage, honorSdpaMask, compileBudget, null); }

        /** From the system properties. */
        public static Options fromSystemProperties() {
            boolean fp32 = Backends.fp32StorageProperty();
            String c = System.getProperty(CHIP_PROPERTY, "").strip();
            Chip chip;
            try {
                chip = c.isEmpty() ? null : Chip.parse(c);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("[ref] -D" + CHIP_PROPERTY + "=" + c + ": " + e.getMessage().replace("[chip] ", ""));
            }
            return new Options(fp32, Boolean.getBoolean(SDPA_MASK_PROPERTY), null, chip);
        }

        public Options withFp32Storage(boolean b) { return new Options(b, honorSdpaMask, compileBudget, chip); }
        public Options withHonorSdpaMask(boolean b) { return new Options(fp32Storage, b, compileBudget, chip); }
        public Options withCompileBudget(long b) { return new Options(fp32Storage, honorSdpaMask, b, chip); }
        public Options withChip(Chip c) { return new Options(fp32Storage, honorSdpaMask, compileBudget, c); }
    }

    private final Options options;

    public RefBackend() { this(Options.fromSystemProperties()); }

    /** The system properties' options with the settings' storage and compile budget ({@link Backends#create}). */
    public RefBackend(Backends.Settings s) {
        this(new Options(s.fp32Storage(), Options.fromSystemProperties().honorSdpaMask(), s.compileBudget(), Options.fromSystemProperties().chip()));
    }

    public RefBackend(Options options) {
        super(options.compileBudget(), UNLIMITED);
        this.options = options;
    }

    public Options options() { return options; }

    @Override public String name() { return "ref"; }

    @Override public boolean isAvailable() { return true; }

    @Override
    public Backend unconstrained() { return new RefBackend(options.withChip(null)); }

    /** The chip family this backend emulates ({@value #CHIP_PROPERTY}), or none. */
    @Override
    public ChipDescription describeChip() {
        Chip c = options.chip();
        return new ChipDescription(c, c == null ? "none (reference backend, no chip emulated)" : c + " (emulated by the reference backend)");
    }

    @Override
    protected Kernel doCompile(Program program, String functionName) {
        Function f = program.function(functionName);
        if (options.chip() != null) {
            try {
                ChipRules.requireCompatible(program, functionName, options.chip());
            } catch (ChipRuleException e) {
                throw new BackendException(e.getMessage(), e);
            }
        }
        return new Planner(f, program.weights(), options).plan();
    }

    /** Same as {@link #compile(Program, String)} with the concrete kernel type (for tests and tools that read warnings). */
    public RefKernel compileRef(Program program, String functionName) { return (RefKernel) compile(program, functionName); }

    public RefKernel compileRef(Program program) { return (RefKernel) compile(program); }
}
