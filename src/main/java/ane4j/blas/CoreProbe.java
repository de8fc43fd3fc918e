package ane4j.blas;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;

/**
 * Run in a child JVM whose environment has no {@code OPENBLAS_CORETYPE}: loads the library as it is and prints the
 * core it picked by itself and its config, tab-separated ({@code OpenBLAS reads the variable only when it loads, so
 * the parent must learn this before its own first load}).
 */
@SuppressWarnings("restricted")
final class CoreProbe {
    private CoreProbe() {}

    public static void main(String[] args) {
        SymbolLookup lookup = SymbolLookup.libraryLookup(args[0], Arena.global());
        System.out.println(NativeSgemm.stringFunction(lookup, "openblas_get_corename") + "\t"
                + NativeSgemm.stringFunction(lookup, "openblas_get_config"));
    }
}
