package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import org.dflib.jjava.jupyter.kernel.display.mime.MIMEType;
import org.junit.jupiter.api.Test;

/** The extension inside a stock JJava kernel: found through META-INF/services, installed once, same magics and renderers. */
class Ane4jExtensionTest {

    @Test
    void installsIntoAStockKernelExactlyOnce() throws Exception {
        FakeKernel k = new FakeKernel();
        k.onStartup();
        try {
            assertTrue(k.getMagicsRegistry().getLineMagicNames().contains("ane"), "%ane registered through the SPI");
            assertEquals(1, k.extensionCount());
            assertEquals(1, k.evaluated.size(), "imports evaluated once: " + k.evaluated);
            String imports = k.evaluated.getFirst();
            assertTrue(imports.contains("import ane4j.notebook.Notebook;"), imports);
            assertFalse(imports.contains("import static ane4j.notebook.Notebook"), "no clash with JJava's own static display");

            k.reinstallDefaultExtensions();
            assertEquals(1, k.extensionCount());
            assertEquals(1, k.evaluated.size(), "a second discovery does not install again");

            Object table = k.getMagicsRegistry().evalLineMagic(k, "ane", List.of());
            assertInstanceOf(tech.tablesaw.api.Table.class, table);
            assertEquals(1, k.displayed.size(), "stock JJava a6 hides magic results, so %ane displays itself");
            assertTrue(k.displayed.getFirst().getData(MIMEType.TEXT_HTML).toString().contains("<td>worker</td>"));
        } finally {
            k.onShutdown(false);
        }
    }

    @Test
    void importsOnlyPackagesThatExist() {
        assertTrue(Ane4jExtension.packageHasClasses("ane4j.notebook"));
        assertFalse(Ane4jExtension.packageHasClasses("ane4j.nosuchpackage"));
        assertTrue(Ane4jExtension.packageHasClasses("org.dflib.jjava.jupyter"), "a package inside a jar");
        String s = Ane4jExtension.importSnippet(true);
        for (String p : Ane4jExtension.IMPORTS) {
            assertEquals(Ane4jExtension.packageHasClasses(p), s.contains("import " + p + ".*;"), p);
        }
        assertTrue(s.contains("import static ane4j.notebook.Notebook.*;"));
    }
}
