package ane4j.notebook;

import ane4j.bench.Bench;
import ane4j.bench.BenchOptions;
import ane4j.bench.BenchResult;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code %bench NAME [options]}: a benchmark of {@link Bench} shown as its plot and table. Options as on the command
 * line ({@code --quick --model tiny}); {@code key=value} words mean {@code --key=value}.
 */
final class BenchMagics {

    @Magic(value = "bench", help = "%bench NAME [--quick] [--no-save] [--option value | key=value …] — a benchmark of ane4j.bench (peak, int8, step, "
            + "compile, sgemm, soak, generate) in this JVM; shows its plot, prints its summary and notes, returns its table (the JSON and PNG go to runs/bench unless --no-save)")
    Object bench(MagicCall call) {
        if (call.args().isEmpty()) throw new MagicException("[%bench] needs a benchmark name (" + String.join(", ", Bench.NAMES) + "), e.g. %bench compile --quick");
        String name = call.args().getFirst();
        List<String> words = new ArrayList<>();
        for (String a : call.args().subList(1, call.args().size())) words.add(!a.startsWith("--") && a.indexOf('=') > 0 ? "--" + a : a);
        BenchResult r;
        try {
            r = Bench.run(name, BenchOptions.parse(words.toArray(String[]::new)));
        } catch (IllegalArgumentException e) {
            throw new MagicException(e.getMessage().replace("[bench]", "[%bench]"), e);
        }
        var chart = r.chart();
        if (chart != null) call.display(chart);
        r.summary().forEach((k, v) -> System.out.println(k + ": " + Format.value(v)));
        r.notes().forEach(n -> System.out.println("note: " + n));
        if (r.meta().get("json") != null) System.out.println("saved " + r.meta().get("json") + (r.meta().get("png") != null ? " and " + r.meta().get("png") : ""));
        return r.table();
    }
}
