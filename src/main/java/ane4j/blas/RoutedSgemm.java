package ane4j.blas;

import java.lang.foreign.MemorySegment;
import java.util.Set;

/** The native GEMM, and the Java GEMM for the shape classes where the calibration found it faster. */
final class RoutedSgemm extends Sgemm {
    private final Sgemm nat, java;
    private final Set<Calibration.ShapeClass> javaClasses;

    RoutedSgemm(Sgemm nat, Sgemm java, Set<Calibration.ShapeClass> javaClasses) {
        this.nat = nat;
        this.java = java;
        this.javaClasses = Set.copyOf(javaClasses);
    }

    /** The implementation a product of this shape runs on. */
    Sgemm forShape(int m, int n, int k) { return javaClasses.contains(Calibration.ShapeClass.of(m, n, k)) ? java : nat; }

    Set<Calibration.ShapeClass> javaClasses() { return javaClasses; }

    @Override public String name() { return nat.name() + "+" + java.name(); }

    @Override public int threads() { return nat.threads(); }

    @Override
    public String description() {
        StringBuilder classes = new StringBuilder();
        for (Calibration.ShapeClass c : Calibration.ShapeClass.values())
            if (javaClasses.contains(c)) classes.append(classes.isEmpty() ? "" : ", ").append(c.label);
        return nat.description() + ", " + java.description() + " for " + classes;
    }

    @Override
    void compute(Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                 float alpha, MemorySegment a, long aOffset, int lda,
                 MemorySegment b, long bOffset, int ldb,
                 float beta, MemorySegment c, long cOffset, int ldc) {
        forShape(m, n, k).compute(layout, transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, beta, c, cOffset, ldc);
    }
}
