package ane4j.notebook;

import java.lang.reflect.Modifier;
import java.util.List;
import org.dflib.jjava.jupyter.kernel.BaseKernel;

/** One invocation of a magic: its name, arguments, cell body, and what it may do to the notebook. */
public final class MagicCall {
    private final BaseKernel kernel;
    private final String name;
    private final List<String> args;
    private final String body;

    MagicCall(BaseKernel kernel, String name, List<String> args, String body) {
        this.kernel = kernel;
        this.name = name;
        this.args = List.copyOf(args);
        this.body = body;
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
