package ane4j.notebook;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.JarURLConnection;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.dflib.jjava.jupyter.Extension;
import org.dflib.jjava.jupyter.kernel.BaseKernel;

/**
 * The ane4j notebook extension: magics, renderers and the ane4j imports. Installed by the ane4j kernel at start, and
 * by a stock JJava kernel through {@code META-INF/services/org.dflib.jjava.jupyter.Extension} when the jar is added.
 */
public final class Ane4jExtension implements Extension {

    /** The ane4j packages a notebook imports (those that exist in this build). */
    public static final List<String> IMPORTS = List.of(
            "ane4j.mil", "ane4j.backend", "ane4j.model", "ane4j.train", "ane4j.worker", "ane4j.bench");

    /** The magic classes; a new magic is an annotated method on one of these (or a new class added here). */
    static final List<Supplier<Object>> MAGICS = List.of(AneMagics::new, MilMagics::new, TrainMagics::new, BenchMagics::new);

    @Override
    public void install(BaseKernel kernel) {
        Renderers.install(kernel.getRenderer());
        MagicRegistry magics = magics();
        boolean ours = kernel instanceof JupyterKernel;
        magics.installInto(kernel, !ours);
        if (ours) {
            ((JupyterKernel) kernel).addStartup(importSnippet(true));
            Ane.prestart();   // the worker JVM starts while the user reads the notebook
        } else {
            kernel.evalRaw(importSnippet(false));
        }
    }

    /** Prints the imports the ane4j kernel starts its cells with: {@code bin/ane4j jshell} gives them to jshell. */
    public static void main(String[] args) {
        System.out.println(importSnippet(true));
    }

    static MagicRegistry magics() {
        MagicRegistry r = new MagicRegistry();
        MAGICS.forEach(s -> r.add(s.get()));
        return r;
    }

    /**
     * The import lines for a notebook. A stock JJava kernel already has its own static {@code display}, so there the
     * ane4j statics are imported by class name only.
     */
    static String importSnippet(boolean staticStatics) {
        String pkgs = IMPORTS.stream().filter(Ane4jExtension::packageHasClasses)
                .map(p -> "import " + p + ".*;").collect(Collectors.joining("\n"));
        String statics = staticStatics
                ? "import java.util.*;\nimport java.util.stream.*;\nimport java.nio.file.*;\nimport static ane4j.notebook.Notebook.*;"
                : "import ane4j.notebook.Notebook;";
        return (pkgs.isEmpty() ? "" : pkgs + "\n") + statics + "\nimport ane4j.notebook.DisplayHandle;"
                + "\nimport ane4j.notebook.Ane;\nimport ane4j.notebook.CompiledProgram;\nimport ane4j.notebook.TrainingRun;";
    }

    /** True when the package has at least one class on the class path (importing an empty package fails to compile). */
    static boolean packageHasClasses(String pkg) {
        URL url = Ane4jExtension.class.getClassLoader().getResource(pkg.replace('.', '/') + "/");
        if (url == null) return false;
        try {
            if (url.getProtocol().equals("file")) {
                try (Stream<Path> s = Files.list(Path.of(url.toURI()))) {
                    return s.anyMatch(p -> p.getFileName().toString().endsWith(".class"));
                }
            }
            if (url.getProtocol().equals("jar")) {
                JarURLConnection c = (JarURLConnection) url.openConnection();
                String prefix = c.getEntryName();
                return c.getJarFile().stream().map(e -> e.getName())
                        .anyMatch(n -> n.startsWith(prefix) && n.endsWith(".class") && n.indexOf('/', prefix.length()) < 0);
            }
            return true;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (URISyntaxException e) {
            return false;
        }
    }
}
