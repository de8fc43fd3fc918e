package ane4j.blas;

/** The outcome of trying to load one implementation: the implementation, or null and why not. */
record Probe(Sgemm sgemm, String detail) {
    static Probe missing(String why) { return new Probe(null, why); }

    boolean loaded() { return sgemm != null; }
}
