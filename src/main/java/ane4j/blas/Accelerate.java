package ane4j.blas;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.util.List;
import java.util.Optional;

/**
 * Loads {@code cblas_sgemm} from Apple's Accelerate framework. dlopen resolves the framework path inside the dyld
 * shared cache. From macOS 13.3 the plain {@code cblas_sgemm} belongs to the deprecated LAPACK 3.2.1 interface; the
 * current interface exports the same function as {@code cblas_sgemm$NEWLAPACK} (LP64, C {@code int} integers) and
 * {@code cblas_sgemm$NEWLAPACK$ILP64} (64-bit integers). We use the LP64 name, with the same descriptor as OpenBLAS,
 * and fall back to the plain name on older systems.
 */
@SuppressWarnings("restricted")
final class Accelerate {
    private Accelerate() {}

    static final String FRAMEWORK = "/System/Library/Frameworks/Accelerate.framework/Accelerate";

    /** Preferred first. The ILP64 variant is deliberately absent: it takes 64-bit integers. */
    static final List<String> SGEMM_SYMBOLS = List.of("cblas_sgemm$NEWLAPACK", "cblas_sgemm");

    record Symbol(String name, MemorySegment address) {
        boolean deprecated() { return !name.endsWith("$NEWLAPACK"); }
    }

    /** The first of {@link #SGEMM_SYMBOLS} that {@code lookup} finds. */
    static Optional<Symbol> resolve(SymbolLookup lookup) {
        for (String name : SGEMM_SYMBOLS) {
            Optional<MemorySegment> address = lookup.find(name);
            if (address.isPresent()) return Optional.of(new Symbol(name, address.get()));
        }
        return Optional.empty();
    }

    static boolean isMacOs() {
        return System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("mac");
    }

    /** Loaded once; never throws. */
    static final Probe PROBE = load();

    private static Probe load() {
        if (!isMacOs()) return Probe.missing("Accelerate exists only on macOS (os.name " + System.getProperty("os.name") + ")");
        try {
            SymbolLookup lookup = SymbolLookup.libraryLookup(FRAMEWORK, Arena.global());
            Optional<Symbol> symbol = resolve(lookup);
            if (symbol.isEmpty()) return Probe.missing(FRAMEWORK + " has none of " + SGEMM_SYMBOLS);
            Symbol s = symbol.get();
            String description = "Accelerate via FFM (" + s.name() + (s.deprecated() ? ", deprecated interface: macOS < 13.3" : "") + ")";
            return new Probe(new NativeSgemm("accelerate", description, 0, false, s.address()), s.name());
        } catch (RuntimeException | LinkageError e) {
            return Probe.missing(FRAMEWORK + ": " + e.getMessage());
        }
    }
}
