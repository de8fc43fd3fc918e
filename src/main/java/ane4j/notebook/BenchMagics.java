package ane4j.notebook;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code %bench NAME [key=value…]}: a benchmark of {@code ane4j.bench.Bench} ({@code Bench.run(name, options)}) shown as
 * its plot and table. Bound at run time, so a build without the benchmarks says so in one line.
 */
final class BenchMagics {
    static final String BENCH = "ane4j.bench.Bench";

    @Magic(value = "bench", help = "%bench NAME [key=value…] — run a benchmark of ane4j.bench (peak, int8, step, compile); shows its plot and table")
    Object bench(MagicCall call) throws Exception {
        if (call.args().isEmpty()) throw new MagicException("[%bench] needs a benchmark name, e.g. %bench compile");
        Method run = runMethod();
        if (run == null) throw new MagicException("[%bench] benchmarks are not available in this build (" + BENCH + ".run is missing)");
        String name = call.args().getFirst();
        List<String> rest = call.args().subList(1, call.args().size());
        Object options;
        Class<?> type = run.getParameterTypes()[1];
        if (type.isAssignableFrom(Map.class)) {
            Map<String, String> m = new LinkedHashMap<>();
            for (String a : rest) {
                String s = a.startsWith("--") ? a.substring(2) : a;
                int eq = s.indexOf('=');
                if (eq <= 0) throw new MagicException("[%bench] '" + a + "' is not key=value (e.g. steps=5)");
                m.put(s.substring(0, eq), s.substring(eq + 1));
            }
            options = m;
        } else if (type == String[].class) {
            options = rest.toArray(String[]::new);
        } else if (type.isAssignableFrom(List.class)) {
            options = List.copyOf(rest);
        } else {
            throw new MagicException("[%bench] " + BENCH + ".run takes a " + type.getSimpleName() + "; this build's %bench cannot call it");
        }
        Object result;
        try {
            result = run.invoke(null, name, options);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof RuntimeException r && r.getMessage() != null && r.getMessage().startsWith("[")) throw new MagicException(r.getMessage(), r);
            throw e.getCause() instanceof Exception x ? x : e;
        }
        Object chart = call0(result, "chart");
        if (chart != null) call.display(chart);
        Object table = call0(result, "table");
        return table != null ? table : result;
    }

    static boolean available() {
        return runMethod() != null;
    }

    private static Method runMethod() {
        try {
            Class<?> c = Class.forName(BENCH);
            for (Method m : c.getMethods()) {
                if (m.getName().equals("run") && m.getParameterCount() == 2 && m.getParameterTypes()[0] == String.class
                        && java.lang.reflect.Modifier.isStatic(m.getModifiers())) return m;
            }
            return null;
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    private static Object call0(Object target, String method) throws Exception {
        try {
            return target.getClass().getMethod(method).invoke(target);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }
}
