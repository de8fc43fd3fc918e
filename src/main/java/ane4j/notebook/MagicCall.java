package ane4j.notebook;

import java.lang.reflect.Modifier;
import java.util.List;
import java.util.function.IntSupplier;
import org.dflib.jjava.jupyter.kernel.BaseKernel;

/** One invocation of a magic: its name, arguments, cell body, and what it may do to the notebook. */
public final class MagicCall {
    /** What a magic {@linkplain #answeredAtOnce() answered at once} returns to wait its turn instead (run after the running cell). */
    public static final Object IN_TURN = new Object() {
        @Override public String toString() { return "in turn"; }
    };

    private final BaseKernel kernel;
    private final String name;
    private final List<String> args;
    private final String body;
    /** The execution count of a cell answered while another cell runs (drawn when first asked); null: in its turn. */
    private final IntSupplier atOnceCount;

    MagicCall(BaseKernel kernel, String name, List<String> args, String body) {
        this(kernel, name, args, body, null);
    }

    MagicCall(BaseKernel kernel, String name, List<String> args, String body, IntSupplier atOnceCount) {
        this.kernel = kernel;
        this.name = name;
        this.args = List.copyOf(args);
        this.body = body;
        this.atOnceCount = atOnceCount;
    }

    public String name() {
        return name;
    }

    public List<String> args() {
        return args;
    }

    /** The cell below the {@code %%name} line; null for a line magic. */
    public String body() {
        return body;
    }

    /** This call is answered while another cell runs ({@link Magic#atOnce}): it may only read or stop. */
    public boolean answeredAtOnce() {
        return atOnceCount != null;
    }

    /** The execution count of this cell when {@linkplain #answeredAtOnce() answered at once}. */
    public int atOnceCount() {
        if (atOnceCount == null) throw new IllegalStateException("[magic] %" + name + " runs in its turn, not at once");
        return atOnceCount.getAsInt();
    }

    /** Shows a value now (HTML table, PNG chart, text) and returns a handle to update it in place. */
    public DisplayHandle display(Object value) {
        return Notebook.display(kernel, value);
    }

    /** Evaluates Java code in the notebook (after the current magic when running in the ane4j kernel). */
    public Object eval(String code) {
        if (kernel instanceof JupyterKernel k) return k.evalAfterMagic(code);
        return kernel.evalRaw(code);
    }

    /** Binds {@code value} to a notebook variable {@code varName} of type {@code type}, usable from the next cell. */
    public <T> void bind(String varName, Class<? super T> type, T value) {
        if (!varName.matches("[A-Za-z_$][A-Za-z0-9_$]*")) {
            throw new MagicException("[%" + name + "] '" + varName + "' is not a Java variable name; use letters, digits and _");
        }
        String key = Notebook.stash(value);
        eval("var " + varName + " = (" + type.getCanonicalName() + ") ane4j.notebook.Notebook.unstash(\"" + key + "\");");
    }

    /** {@link #bind(String, Class, Object)} with the value's own class when public, else Object. */
    public void bind(String varName, Object value) {
        Class<?> c = value == null ? Object.class : value.getClass();
        while (!Modifier.isPublic(c.getModifiers()) || c.isAnonymousClass() || c.getCanonicalName() == null) c = c.getSuperclass();
        @SuppressWarnings("unchecked") Class<Object> type = (Class<Object>) c;
        bind(varName, type, value);
    }

    /** The arguments after the first {@code n} as one string, e.g. a path with spaces. */
    public String argsFrom(int n) {
        return String.join(" ", args.subList(Math.min(n, args.size()), args.size()));
    }

    BaseKernel kernel() {
        return kernel;
    }
}
