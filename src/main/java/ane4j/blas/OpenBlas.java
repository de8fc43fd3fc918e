package ane4j.blas;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Loads {@code cblas_sgemm} from OpenBLAS (or any CBLAS) by library name, through the dynamic loader's search path. */
@SuppressWarnings("restricted")
final class OpenBlas {
    private OpenBlas() {}

    /** Tried in order: the OpenBLAS soname, then the generic BLAS soname (on Debian an alternative, often OpenBLAS). */
    static final List<String> LIBRARIES = List.of("libopenblas.so.0", "libblas.so.3");

    /** Loaded once; never throws. */
    static final Probe PROBE = load();

    private static Probe load() {
        List<String> failures = new ArrayList<>();
        for (String library : LIBRARIES) {
            try {
                SymbolLookup lookup = SymbolLookup.libraryLookup(library, Arena.global());
                Optional<MemorySegment> symbol = lookup.find("cblas_sgemm");
                if (symbol.isEmpty()) {
                    failures.add(library + " has no cblas_sgemm");
                    continue;
                }
                int threads = NativeSgemm.intFunction(lookup, "openblas_get_num_threads");
                // the threading is done by NativeSgemm (see there): the library runs each call on one thread
                boolean parallel = threads > 1 && NativeSgemm.setThreads(lookup, "openblas_set_num_threads", 1);
                String config = NativeSgemm.stringFunction(lookup, "openblas_get_config");
                String core = NativeSgemm.stringFunction(lookup, "openblas_get_corename");
                String description = "OpenBLAS via FFM (" + library
                        + (config.isEmpty() ? "" : ", " + config)
                        + (core.isEmpty() ? "" : ", core " + core)
                        + (threads > 0 ? ", " + threads + " threads" + (parallel ? " split by ane4j" : "") : "") + ")";
                return new Probe(new NativeSgemm("openblas", description, threads, parallel, symbol.get()), library);
            } catch (RuntimeException | LinkageError e) {
                failures.add(library + ": " + e.getMessage());
            }
        }
        return Probe.missing(String.join("; ", failures));
    }
}
