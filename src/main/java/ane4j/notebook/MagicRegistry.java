package ane4j.notebook;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.dflib.jjava.jupyter.kernel.BaseKernel;
import org.dflib.jjava.jupyter.kernel.magic.CellMagic;
import org.dflib.jjava.jupyter.kernel.magic.LineMagic;
import org.dflib.jjava.jupyter.kernel.magic.MagicsRegistry;

/**
 * Collects {@link Magic}-annotated methods and registers them with a kernel's magics registry, so adding a magic
 * is one annotated method on a small class listed in {@link Ane4jExtension#MAGICS}.
 */
public final class MagicRegistry {
    /** A registered magic: name, kind, help line, and the method to call. */
    public record Entry(String name, boolean cell, String help, Object target, Method method) {
        /** The magic's own name, not one of its aliases. */
        boolean isPrimary() {
            return method.getAnnotation(Magic.class).value().equals(name);
        }

        /** Its help split into usage ({@code %jars GLOB...}) and what it does, with its aliases. */
        Help describe() {
            String prefix = cell ? "%%" : "%";
            List<String> aliases = List.of(method.getAnnotation(Magic.class).aliases()).stream().map(a -> prefix + a).toList();
            int dash = help.indexOf(" — ");
            String usage = dash < 0 ? prefix + name : help.substring(0, dash).strip();
            String what = dash < 0 ? help : help.substring(dash + 3).strip();
            return new Help(name, cell, aliases, usage, what);
        }

        /** This line magic may be answered with {@code args} while another cell runs ({@link Magic#atOnce}). */
        boolean answersAtOnce(List<String> args) {
            return !cell && List.of(method.getAnnotation(Magic.class).atOnce()).contains(String.join(" ", args));
        }

        Object invoke(MagicCall call) throws Exception {
            try {
                return method.invoke(target, call);
            } catch (InvocationTargetException e) {
                if (e.getCause() instanceof Exception ex) throw ex;
                throw e;
            }
        }
    }

    /** One magic as {@code %lsmagic} and the README list it. */
    public record Help(String name, boolean cell, List<String> aliases, String usage, String what) {
        public String magic() {
            return (cell ? "%%" : "%") + name;
        }
    }

    private final Map<String, Entry> line = new TreeMap<>();
    private final Map<String, Entry> cell = new TreeMap<>();

    /** Scans the public or package-private methods of {@code holder} for {@link Magic} and adds them. */
    public MagicRegistry add(Object holder) {
        for (Method m : holder.getClass().getDeclaredMethods()) {
            Magic magic = m.getAnnotation(Magic.class);
            if (magic == null) continue;
            if (m.getParameterCount() != 1 || m.getParameterTypes()[0] != MagicCall.class) {
                throw new IllegalArgumentException("[magic] " + holder.getClass().getSimpleName() + "." + m.getName()
                        + " must take exactly one MagicCall parameter");
            }
            m.setAccessible(true);
            Map<String, Entry> into = magic.cell() ? cell : line;
            List<String> names = new ArrayList<>(List.of(magic.aliases()));
            names.addFirst(magic.value());
            for (String n : names) {
                if (into.containsKey(n)) throw new IllegalArgumentException("[magic] %" + (magic.cell() ? "%" : "") + n + " is defined twice");
                into.put(n, new Entry(n, magic.cell(), magic.help(), holder, m));
            }
        }
        return this;
    }

    public List<Entry> entries() {
        List<Entry> all = new ArrayList<>(line.values());
        all.addAll(cell.values());
        all.sort(Comparator.comparing(Entry::name));
        return all;
    }

    /**
     * Registers every magic with the kernel (in the ane4j kernel, with its {@link MagicDispatch} too: help, at-once
     * answers). With {@code displayResults} (stock JJava, whose a6 transpiler hides a magic's return value) a non-null
     * result is also displayed.
     */
    public void installInto(BaseKernel kernel, boolean displayResults) {
        if (kernel instanceof JupyterKernel k) k.magics().describe(this);
        MagicsRegistry target = kernel.getMagicsRegistry();
        for (Entry e : line.values()) {
            target.registerLineMagic(e.name(), (LineMagic<Object, BaseKernel>) (k, args) ->
                    shown(k, e.invoke(new MagicCall(k, e.name(), args, null)), displayResults));
        }
        for (Entry e : cell.values()) {
            target.registerCellMagic(e.name(), (CellMagic<Object, BaseKernel>) (k, args, body) ->
                    shown(k, e.invoke(new MagicCall(k, e.name(), args, body)), displayResults));
        }
    }

    private static Object shown(BaseKernel k, Object result, boolean display) {
        if (display && result != null && !(result instanceof DisplayHandle)) Notebook.display(k, result);
        return result;
    }

    /**
     * Splits magic arguments like a shell: spaces separate, "double quotes" group, a backslash escapes a quote or
     * a backslash; {@code ""} is an empty argument.
     */
    public static List<String> splitArgs(String s) {
        List<String> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        boolean quoted = false, escape = false, token = false;
        for (char c : s.strip().toCharArray()) {
            if (escape) {
                if (c != '"' && c != '\\') cur.append('\\');
                cur.append(c);
                escape = false;
                token = true;
            } else if (c == '\\') {
                escape = true;
            } else if (c == '"') {
                quoted = !quoted;
                token = true;
            } else if ((c == ' ' || c == '\t') && !quoted) {
                if (token) out.add(cur.toString());
                cur.setLength(0);
                token = false;
            } else {
                cur.append(c);
                token = true;
            }
        }
        if (escape) cur.append('\\');
        if (quoted) throw new MagicException("[magic] unclosed quote in '" + s.strip() + "'; close the \"");
        if (token) out.add(cur.toString());
        return out;
    }
}
