package ane4j.notebook;

/** {@code %bench NAME}: the benchmarks of ane4j.bench as a table and a plot. */
final class BenchMagics {

    @Magic(value = "bench", help = "%bench NAME [key=value…] — run a benchmark of ane4j.bench; shows its table and plot")
    Object bench(MagicCall call) {
        throw new MagicException("[%bench] benchmarks are not available in this build (ane4j.bench.Bench is missing)");
    }
}
