package ane4j.notebook;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.dflib.jjava.jupyter.kernel.BaseKernel;
import org.dflib.jjava.jupyter.kernel.ReplacementOptions;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;
import org.dflib.jjava.jupyter.kernel.magic.MagicTranspiler;
import org.dflib.jjava.jupyter.kernel.magic.MagicsRegistry;
import org.dflib.jjava.jupyter.kernel.magic.ParsedCellMagic;
import org.dflib.jjava.jupyter.kernel.magic.ParsedLineMagic;
import org.dflib.jjava.jupyter.kernel.magic.UndefinedMagicException;

/**
 * The one way a magic is run: {@link #line} and {@link #cell} look the name up in the kernel's registry, call it, and
 * turn its failures into one-line {@link MagicException}s. Three doors lead here and nowhere else:
 * <ul>
 *   <li>a cell that is only magics ({@code %%name ...} with its body, or lines of {@code %name ...}) is run by
 *       {@link #runCell} without JShell;</li>
 *   <li>a magic inside Java code ({@code int n = %twice 10}) is rewritten by the {@link Transpiler} into a call of
 *       {@link Notebook#lineMagic}/{@link Notebook#cellMagic}, which come back to {@link #line}/{@link #cell};</li>
 *   <li>a line magic alone in a cell sent while another cell runs is answered at once by {@link #answerAtOnce} when
 *       the magic declares those arguments ({@link Magic#atOnce}: {@code %train stop}, {@code %train status}).</li>
 * </ul>
 * A new magic plugs in with one registration (an {@link Magic}-annotated method on a class listed in
 * {@link Ane4jExtension#MAGICS}); no door knows any magic by name. The dispatch also answers what the kernel needs to
 * know about magics: completion of their names, whether a magic cell is complete, and the help table of {@code %lsmagic}.
 */
final class MagicDispatch {
    /** Magic syntax as in IJava: a line magic at the start of a line or after '=', a cell magic on the first line. */
    static final String LINE_MAGIC_START = "(?<=(?:^|=))\\s*%", CELL_MAGIC_START = "%%";
    private static final Pattern LINE_MAGIC = Pattern.compile("^\\s*%(?!%)(\\w\\S*)(.*)$");
    private static final Pattern MAGIC_NAME_PREFIX = Pattern.compile("^\\s*(%%?)(\\w*)$");

    private final BaseKernel kernel;
    private final MagicsRegistry registry;
    /** Help of the magics registered through a {@link MagicRegistry}, by "%name" / "%%name" (aliases included). */
    private final Map<String, MagicRegistry.Entry> described = new ConcurrentHashMap<>();

    MagicDispatch(BaseKernel kernel) {
        this.kernel = kernel;
        this.registry = kernel.getMagicsRegistry();
    }

    /** The dispatch of {@code kernel}: the ane4j kernel's own, or one over a stock JJava kernel's registry. */
    static MagicDispatch of(BaseKernel kernel) {
        return kernel instanceof JupyterKernel k ? k.magics() : new MagicDispatch(kernel);
    }

    // ---- the route

    /** Runs the line magic {@code %name args}: its value, or a one-line {@link MagicException}. */
    Object line(String name, List<String> args) {
        return call(() -> registry.evalLineMagic(kernel, name, args), name, true);
    }

    /** Runs the cell magic {@code %%name args} over {@code body}. */
    Object cell(String name, List<String> args, String body) {
        return call(() -> registry.evalCellMagic(kernel, name, args, body), name, false);
    }

    private interface MagicBody {
        Object run() throws Exception;
    }

    private static Object call(MagicBody body, String name, boolean line) {
        try {
            return body.run();
        } catch (UndefinedMagicException e) {
            throw new MagicException("unknown magic " + (line ? "%" : "%%") + name + "; %lsmagic lists the magics");
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new MagicException("[%" + name + "] " + e.getMessage(), e);
        }
    }

    // ---- the first door: cells that are only magics

    /** A cell JShell never sees: a cell magic, or only line magics (blank lines aside). */
    static boolean isMagicCell(String code) {
        return code.startsWith(CELL_MAGIC_START) || onlyLineMagics(code);
    }

    static boolean onlyLineMagics(String code) {
        boolean any = false;
        for (String line : code.split("\n")) {
            if (line.isBlank()) continue;
            if (!LINE_MAGIC.matcher(line).matches()) return false;
            any = true;
        }
        return any;
    }

    /** Runs a {@linkplain #isMagicCell magic cell}: the cell magic's value, or the last line magic's. */
    Object runCell(String code) {
        if (code.startsWith(CELL_MAGIC_START)) {
            int nl = code.indexOf('\n');
            List<String> head = MagicRegistry.splitArgs(code.substring(2, nl < 0 ? code.length() : nl));
            if (head.isEmpty()) throw new MagicException("a cell magic needs a name after %%; %lsmagic lists them");
            String body = nl < 0 ? "" : code.substring(nl + 1);
            return cell(head.getFirst(), head.subList(1, head.size()), body);
        }
        Object result = null;
        for (String line : code.split("\n")) {
            Matcher m = LINE_MAGIC.matcher(line);
            if (m.matches()) result = line(m.group(1), MagicRegistry.splitArgs(m.group(2)));
        }
        return result;
    }

    /** Whether a magic cell is complete ("complete", or "" for a cell magic without its body); null for Java code. */
    static String isComplete(String code) {
        if (code.startsWith(CELL_MAGIC_START)) return code.strip().contains("\n") ? BaseKernel.IS_COMPLETE_YES : "";
        return onlyLineMagics(code) ? BaseKernel.IS_COMPLETE_YES : null;
    }

    /** Completion of a magic's name typed at the start of a line ({@code %an|}); null when the cursor is elsewhere. */
    ReplacementOptions completeName(String code, int at) {
        int lineStart = code.lastIndexOf('\n', Math.max(0, at - 1)) + 1;
        Matcher m = MAGIC_NAME_PREFIX.matcher(code.substring(lineStart, at));
        if (!m.matches()) return null;
        boolean cellMagic = m.group(1).length() == 2;
        var names = cellMagic ? registry.getCellMagicNames() : registry.getLineMagicNames();
        List<String> hits = names.stream().filter(n -> n.startsWith(m.group(2))).sorted().toList();
        return new ReplacementOptions(hits, at - m.group(2).length(), at);
    }

    // ---- the third door: a magic answered while another cell runs

    /**
     * What the cell {@code code} shows when it is one line magic whose arguments its {@link Magic#atOnce} lists, run now
     * on the shell thread while another cell runs (the magic sees {@link MagicCall#answeredAtOnce()}, and its cell's
     * execution count from {@code count}); null when it must wait its turn: other code, or the magic said
     * {@link MagicCall#IN_TURN}, or it failed (its error then shows in its turn).
     */
    DisplayData answerAtOnce(String code, IntSupplier count) {
        Matcher m = LINE_MAGIC.matcher(code.strip());
        if (code.strip().contains("\n") || !m.matches()) return null;
        MagicRegistry.Entry e = described.get("%" + m.group(1));
        try {
            List<String> args = MagicRegistry.splitArgs(m.group(2));
            if (e == null || !e.answersAtOnce(args)) return null;
            Object r = call(() -> e.invoke(new MagicCall(kernel, e.name(), args, null, count)), e.name(), true);
            return r == MagicCall.IN_TURN ? null : r == null ? new DisplayData("") : kernel.getRenderer().render(r);
        } catch (RuntimeException failed) {
            return null;   // nothing fails on the shell thread: the cell runs in its turn and shows its error there
        }
    }

    // ---- help

    /** Records the help of {@code registry}'s magics for {@link #help}. */
    void describe(MagicRegistry magics) {
        for (MagicRegistry.Entry e : magics.entries()) described.put((e.cell() ? "%%" : "%") + e.name(), e);
    }

    /** Every registered magic once (aliases folded into their magic), sorted by name, a line magic before its cell magic. */
    List<MagicRegistry.Help> help() {
        List<MagicRegistry.Help> out = new ArrayList<>();
        for (boolean cellMagic : new boolean[] {false, true}) {
            var names = cellMagic ? registry.getCellMagicNames() : registry.getLineMagicNames();
            for (String n : names) {
                MagicRegistry.Entry e = described.get((cellMagic ? "%%" : "%") + n);
                if (e == null) out.add(new MagicRegistry.Help(n, cellMagic, List.of(), "", ""));
                else if (e.isPrimary()) out.add(e.describe());
            }
        }
        out.sort(Comparator.comparing(MagicRegistry.Help::name).thenComparing(MagicRegistry.Help::cell));
        return out;
    }

    // ---- the second door: magics inside Java code

    /**
     * Rewrites a magic inside Java code into a call of {@link Notebook#lineMagic}/{@link Notebook#cellMagic} (whose value
     * takes the place of the magic), which run it through {@link #line}/{@link #cell}.
     */
    static final class Transpiler extends MagicTranspiler {
        private static final Pattern QUOTE = Pattern.compile("(?<!\\\\)\"");

        @Override
        public String transpileCell(ParsedCellMagic magic) {
            return "ane4j.notebook.Notebook.cellMagic(" + lit(magic.magicCall.name) + ", java.util.List.of("
                    + String.join(",", magic.magicCall.args.stream().map(Transpiler::lit).toList()) + "), "
                    + lit(magic.magicCall.body) + ");";
        }

        @Override
        public String transpileLine(ParsedLineMagic magic) {
            if (QUOTE.matcher(magic.linePrefix).results().count() % 2 == 1) return magic.raw;   // inside a string literal
            return "ane4j.notebook.Notebook.lineMagic(" + lit(magic.magicCall.name) + ", java.util.List.of("
                    + String.join(",", magic.magicCall.args.stream().map(Transpiler::lit).toList()) + "));";
        }

        /** A Java expression for {@code s}: Base64 avoids every escaping problem. */
        static String lit(String s) {
            return "new String(java.util.Base64.getDecoder().decode(\""
                    + java.util.Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8))
                    + "\"), java.nio.charset.StandardCharsets.UTF_8)";
        }
    }
}
