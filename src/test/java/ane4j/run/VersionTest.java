package ane4j.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class VersionTest {
    @TempDir Path dir;

    /** Loaded from a jar whose manifest names a version, {@link Version#ane4j} reports that version. */
    @Test
    void readsTheJarManifest() throws Exception {
        Path jar = dir.resolve("ane4j.jar");
        Manifest mf = new Manifest();
        mf.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        mf.getMainAttributes().put(Attributes.Name.IMPLEMENTATION_VERSION, "9.8.7-test");
        String entry = "ane4j/run/Version.class";
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream j = new JarOutputStream(out, mf);
             var in = Version.class.getClassLoader().getResourceAsStream(entry)) {
            j.putNextEntry(new JarEntry(entry));
            in.transferTo(j);
            j.closeEntry();
        }
        try (URLClassLoader loader = new URLClassLoader(new URL[] {jar.toUri().toURL()}, null)) {
            Class<?> v = loader.loadClass("ane4j.run.Version");
            assertEquals("9.8.7-test", v.getMethod("ane4j").invoke(null));
        }
        assertEquals(Version.UNPACKAGED, Version.ane4j(), "target/classes has no manifest");
    }

    /** The pom asks the jar plugin for Implementation-Version (the pom's version) in the manifest. */
    @Test
    void thePomPutsTheVersionInTheManifest() throws Exception {
        String pom = Files.readString(Path.of("pom.xml"));
        Matcher jarPlugin = Pattern.compile("<artifactId>maven-jar-plugin</artifactId>(.*?)</plugin>", Pattern.DOTALL).matcher(pom);
        assertTrue(jarPlugin.find(), "pom.xml configures maven-jar-plugin");
        assertTrue(jarPlugin.group(1).contains("<addDefaultImplementationEntries>true</addDefaultImplementationEntries>"), jarPlugin.group(1));
    }
}
