package ane4j.blas;

/**
 * The outcome of trying to load one implementation: the implementation, or null and why not; {@code identity} names
 * what the calibration is measured for (library, build, core, threads) and leaves out how the core was chosen, so a
 * process that inherited {@code OPENBLAS_CORETYPE} and the one that set it share one cached calibration.
 */
record Probe(Sgemm sgemm, String detail, String identity) {
    Probe(Sgemm sgemm, String detail) { this(sgemm, detail, sgemm == null ? "" : sgemm.description()); }

    static Probe missing(String why) { return new Probe(null, why); }

    boolean loaded() { return sgemm != null; }
}
