package ane4j.blas;

import ane4j.golden.TensorCheck;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every implementation against a double-precision triple loop. */
class SgemmTest {

    static Stream<Sgemm> implementations() {
        List<Sgemm> all = new ArrayList<>();
        Blas.openBlas().ifPresent(all::add);
        Blas.accelerate().ifPresent(all::add);
        Blas.javaVector().ifPresent(all::add);
        all.add(Blas.javaScalar());
        return all.stream();
    }

    @Test
    void theTestJvmHasOpenBlasAndTheVectorKernel() {
        // surefire runs with --add-modules jdk.incubator.vector, and install.sh installs OpenBLAS on Linux
        assertTrue(Blas.javaVector().isPresent(), "vector kernel missing");
        if (System.getProperty("os.name").startsWith("Linux") && OpenBlasInstalled.onThisMachine()) {
            assertTrue(Blas.openBlas().isPresent(), "OpenBLAS did not load: " + OpenBlas.PROBE.detail());
        }
    }

    /** C = alpha·op(A)·op(B) + beta·C in double, with the same storage conventions. */
    static void reference(Layout layout, Transpose ta, Transpose tb, int m, int n, int k, float alpha,
                          float[] a, int aOff, int lda, float[] b, int bOff, int ldb, float beta,
                          double[] c, int cOff, int ldc) {
        boolean row = layout == Layout.ROW_MAJOR;
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double sum = 0;
                for (int p = 0; p < k; p++) {
                    // op(A)[i,p] and op(B)[p,j]; element (r, s) of a stored matrix is at r*ld + s (row) or s*ld + r (col)
                    int ar = ta == Transpose.YES ? p : i, as = ta == Transpose.YES ? i : p;
                    int br = tb == Transpose.YES ? j : p, bs = tb == Transpose.YES ? p : j;
                    double av = a[aOff + (row ? ar * lda + as : as * lda + ar)];
                    double bv = b[bOff + (row ? br * ldb + bs : bs * ldb + br)];
                    sum += av * bv;
                }
                int ci = cOff + (row ? i * ldc + j : j * ldc + i);
                c[ci] = alpha * sum + (beta == 0f ? 0 : beta * c[ci]);
            }
        }
    }

    record Case(Layout layout, Transpose ta, Transpose tb, int m, int n, int k, float alpha, float beta,
                int aOff, int bOff, int cOff, int ldPad) {}

    static List<Case> cases() {
        Random r = new Random(42);
        int[] sizes = {1, 7, 33, 129};
        List<Case> out = new ArrayList<>();
        for (Layout layout : Layout.values())
            for (Transpose ta : Transpose.values())
                for (Transpose tb : Transpose.values())
                    for (int t = 0; t < 4; t++) {
                        int m = sizes[r.nextInt(4)], n = sizes[r.nextInt(4)], k = sizes[r.nextInt(4)];
                        if (t == 0) { m = 129; n = 129; k = 129; }
                        boolean plain = t == 1;
                        out.add(new Case(layout, ta, tb, m, n, k, plain ? 1f : 0.75f, plain ? 0f : -1.5f,
                                plain ? 0 : 3, plain ? 0 : 5, plain ? 0 : 11, plain ? 0 : 1 + r.nextInt(9)));
                    }
        return out;
    }

    static void runCase(Sgemm impl, Case t, boolean nativeSegments) {
        boolean row = t.layout == Layout.ROW_MAJOR;
        boolean ta = t.ta == Transpose.YES, tb = t.tb == Transpose.YES;
        // stored shapes
        int aRows = ta ? t.k : t.m, aCols = ta ? t.m : t.k;
        int bRows = tb ? t.n : t.k, bCols = tb ? t.k : t.n;
        int lda = (row ? aCols : aRows) + t.ldPad, ldb = (row ? bCols : bRows) + t.ldPad, ldc = (row ? t.n : t.m) + t.ldPad;
        Random r = new Random(t.hashCode());
        float[] a = random(r, t.aOff + (row ? aRows : aCols) * lda + 2);
        float[] b = random(r, t.bOff + (row ? bRows : bCols) * ldb + 2);
        float[] c = random(r, t.cOff + (row ? t.m : t.n) * ldc + 2);
        double[] expected = new double[c.length];
        for (int i = 0; i < c.length; i++) expected[i] = c[i];
        reference(t.layout, t.ta, t.tb, t.m, t.n, t.k, t.alpha, a, t.aOff, lda, b, t.bOff, ldb, t.beta,
                expected, t.cOff, ldc);
        float[] got;
        if (nativeSegments) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment sa = arena.allocateFrom(ValueLayout.JAVA_FLOAT, a);
                MemorySegment sb = arena.allocateFrom(ValueLayout.JAVA_FLOAT, b);
                MemorySegment sc = arena.allocateFrom(ValueLayout.JAVA_FLOAT, c);
                impl.sgemm(t.layout, t.ta, t.tb, t.m, t.n, t.k, t.alpha, sa, t.aOff, lda, sb, t.bOff, ldb,
                        t.beta, sc, t.cOff, ldc);
                got = sc.toArray(ValueLayout.JAVA_FLOAT);
            }
        } else {
            got = c.clone();
            impl.sgemm(t.layout, t.ta, t.tb, t.m, t.n, t.k, t.alpha, a, t.aOff, lda, b, t.bOff, ldb,
                    t.beta, got, t.cOff, ldc);
        }
        // fp32 accumulation of k products of values in [-1, 1): error grows like sqrt(k)·eps
        double tol = 1e-5 * (1 + t.k);
        TensorCheck.checkTensor(impl.name() + " " + t + (nativeSegments ? " native" : " heap"), expected, got, tol, 0);
    }

    static float[] random(Random r, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = r.nextFloat() * 2 - 1;
        return x;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void matchesDoubleReferenceOnNativeSegments(Sgemm impl) {
        for (Case t : cases()) runCase(impl, t, true);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void matchesDoubleReferenceOnHeapArrays(Sgemm impl) {
        for (Case t : cases()) runCase(impl, t, false);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void largeHeapProductTakesTheCopyPathAndStillMatches(Sgemm impl) {
        // above the critical threshold (0 here) heap operands are copied to native scratch memory and C copied back
        if (impl instanceof NativeSgemm ns) impl = ns.withCriticalMaxMacs(0);
        runCase(impl, new Case(Layout.ROW_MAJOR, Transpose.YES, Transpose.NO, 160, 161, 160, 0.5f, 2f, 7, 9, 13, 3), false);
        runCase(impl, new Case(Layout.COL_MAJOR, Transpose.NO, Transpose.YES, 161, 160, 160, 1f, 1f, 1, 2, 3, 1), false);
        // beta == 0: C is not copied in, and the padding between its rows must survive the copy back
        runCase(impl, new Case(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, 170, 150, 140, -1f, 0f, 0, 0, 5, 4), false);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void productsSplitAcrossThreadsMatchInEveryLayoutAndTranspose(Sgemm impl) {
        // ≥ NativeSgemm.SPLIT_MIN_MACS and ≥ 2 blocks of 64: split by rows (M ≥ N) and by columns (N > M), with offsets,
        // padded leading dimensions and beta ≠ 0, on native segments and on heap arrays
        assertTrue(200L * 150 * 64 >= NativeSgemm.SPLIT_MIN_MACS);
        for (Layout layout : Layout.values())
            for (Transpose ta : Transpose.values())
                for (Transpose tb : Transpose.values())
                    for (boolean native_ : new boolean[] {true, false}) {
                        runCase(impl, new Case(layout, ta, tb, 200, 150, 64, 0.5f, 2f, 3, 5, 7, 2), native_);
                        runCase(impl, new Case(layout, ta, tb, 130, 260, 64, 1f, 0f, 1, 0, 2, 1), native_);
                    }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void concurrentCallersShareThePoolAndGetTheirOwnResults(Sgemm impl) throws Exception {
        // the training step's main and weight-gradient threads call at once; each result must equal its lone result
        int n = 192;
        Random r = new Random(11);
        float[][] a = new float[4][], b = new float[4][], expected = new float[4][];
        for (int t = 0; t < 4; t++) {
            a[t] = random(r, n * n);
            b[t] = random(r, n * n);
            expected[t] = new float[n * n];
            impl.matmul(a[t], b[t], expected[t], n, n, n);
        }
        var pool = java.util.concurrent.Executors.newFixedThreadPool(4);
        try {
            List<java.util.concurrent.Future<float[]>> results = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int i = t;
                results.add(pool.submit(() -> {
                    float[] c = new float[n * n];
                    for (int rep = 0; rep < 20; rep++) impl.matmul(a[i], b[i], c, n, n, n);
                    return c;
                }));
            }
            for (int t = 0; t < 4; t++) org.junit.jupiter.api.Assertions.assertArrayEquals(expected[t], results.get(t).get(), "caller " + t);
        } finally {
            pool.shutdownNow();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void betaZeroOverwritesNanInC(Sgemm impl) {
        float[] a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, c = {Float.NaN, Float.NaN, Float.NaN, Float.NaN};
        impl.matmul(a, b, c, 2, 2, 2);
        assertEquals(List.of(19f, 22f, 43f, 50f), List.of(c[0], c[1], c[2], c[3]));
    }

    /**
     * The shape Accelerate was seen to read C at with β = 0 (ml-explore/mlx PR #3563: M = 1, N = 512, K = 544, B at a
     * misaligned address, C full of NaN): every implementation must overwrite C. Runs Accelerate on a Mac.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void betaZeroOverwritesNanInCAtOneRowWithAMisalignedB(Sgemm impl) {
        int m = 1, n = 512, k = 544;
        Random r = new Random(3563);
        float[] a = random(r, m * k), b = random(r, 1 + k * n), c = new float[m * n];
        java.util.Arrays.fill(c, Float.NaN);
        impl.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, m, n, k, 1f, a, 0, k, b, 1, n, 0f, c, 0, n);
        double[] want = new double[m * n];
        reference(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, m, n, k, 1f, a, 0, k, b, 1, n, 0f, want, 0, n);
        for (int j = 0; j < n; j++) assertEquals(want[j], c[j], 1e-3 * (1 + Math.abs(want[j])), "column " + j);
    }

    /** The zeroing that guards Accelerate's β = 0 path writes exactly the addressed elements (here on OpenBLAS's symbol). */
    @Test
    void theBetaZeroGuardZerosOnlyTheAddressedElementsOfC() {
        Assumptions.assumeTrue(OpenBlas.PROBE.sgemm() instanceof NativeSgemm, "needs OpenBLAS's cblas_sgemm to call (apt-get install libopenblas0-pthread)");
        NativeSgemm open = (NativeSgemm) OpenBlas.PROBE.sgemm();
        NativeSgemm guarded = new NativeSgemm("guarded", "test", 1, false, open.symbol(), NativeSgemm.CRITICAL_MAX_MACS, true);
        int m = 3, n = 2, k = 4, ldc = 5, cOff = 4;
        Random r = new Random(11);
        float[] a = random(r, m * k), b = random(r, k * n), c = new float[cOff + m * ldc + 3];
        java.util.Arrays.fill(c, Float.NaN);
        for (int i = 0; i < c.length; i++) { int rel = i - cOff; if (rel < 0 || rel / ldc >= m || rel % ldc >= n) c[i] = 42f; }
        guarded.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, m, n, k, 1f, a, 0, k, b, 0, n, 0f, c, cOff, ldc);
        double[] want = new double[c.length];
        reference(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, m, n, k, 1f, a, 0, k, b, 0, n, 0f, want, cOff, ldc);
        for (int i = 0; i < c.length; i++) {
            int rel = i - cOff;
            boolean inside = rel >= 0 && rel / ldc < m && rel % ldc < n;
            if (!inside) assertEquals(42f, c[i], "element " + i + " outside C was written");
            else assertEquals(want[i], c[i], 1e-4, "element " + i);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void onlyTheAddressedElementsOfCChange(Sgemm impl) {
        // 3×2 sub-block at offset 4 of a row-major C with ldc 5: the padding columns and the tail stay untouched
        int m = 3, n = 2, k = 4, ldc = 5, cOff = 4;
        Random r = new Random(7);
        float[] a = random(r, m * k), b = random(r, k * n), c = new float[cOff + m * ldc + 3];
        java.util.Arrays.fill(c, 42f);
        impl.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, m, n, k, 1f, a, 0, k, b, 0, n, 0f, c, cOff, ldc);
        for (int i = 0; i < c.length; i++) {
            int rel = i - cOff;
            boolean inside = rel >= 0 && rel / ldc < m && rel % ldc < n;
            if (!inside) assertEquals(42f, c[i], "element " + i + " outside C was written");
            else assertFalse(c[i] == 42f, "element " + i + " inside C was not written");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void zeroKScalesCByBeta(Sgemm impl) {
        float[] c = {1, 2, 3, 4};
        impl.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, 2, 2, 0, 1f, new float[0], 0, 1,
                new float[0], 0, 2, 3f, c, 0, 2);
        assertEquals(List.of(3f, 6f, 9f, 12f), List.of(c[0], c[1], c[2], c[3]));
    }

    @Test
    void openBlasDescriptionNamesTheLibrary() {
        Assumptions.assumeTrue(Blas.openBlas().isPresent(), "needs OpenBLAS (libopenblas0-pthread)");
        Sgemm s = Blas.openBlas().get();
        assertEquals("openblas", s.name());
        assertTrue(s.description().contains("libopenblas.so.0") || s.description().contains("libblas.so.3"), s.description());
    }
}
