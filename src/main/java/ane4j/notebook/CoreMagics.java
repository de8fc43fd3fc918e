package ane4j.notebook;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

/** IJava's usual magics for the ane4j kernel: class path, jars, Maven, loading scripts and notebooks, listing magics. */
final class CoreMagics {
    private final JupyterKernel kernel;
    private final MavenResolver maven;

    CoreMagics(JupyterKernel kernel, MavenResolver maven) {
        this.kernel = kernel;
        this.maven = maven;
    }

    @Magic(value = "classpath", help = "%classpath PATH|GLOB... — add directories or jars to the class path of the cells")
    List<String> classpath(MagicCall call) {
        List<String> added = new ArrayList<>();
        for (String arg : need(call, "a directory or jar")) {
            for (Path p : glob(arg)) added.add(kernel.addToClasspath(p));
        }
        return added;
    }

    @Magic(value = "jars", aliases = "jar", help = "%jars GLOB... — add jars (a directory adds every jar in it)")
    List<String> jars(MagicCall call) {
        List<String> added = new ArrayList<>();
        for (String arg : need(call, "a jar")) {
            for (Path p : glob(arg)) {
                if (Files.isDirectory(p)) {
                    try (Stream<Path> s = Files.list(p)) {
                        for (Path j : s.filter(f -> f.toString().endsWith(".jar")).sorted().toList()) added.add(kernel.addToClasspath(j));
                    } catch (IOException e) {
                        throw new MagicException("[%jars] cannot list " + p + ": " + e.getMessage());
                    }
                } else {
                    added.add(kernel.addToClasspath(p));
                }
            }
        }
        return added;
    }

    @Magic(value = "maven", aliases = {"addMavenDependency", "addMavenDependencies"},
            help = "%maven group:artifact[:packaging[:classifier]]:version... — resolve from Maven Central (with dependencies) and add")
    List<String> maven(MagicCall call) throws IOException, InterruptedException {
        List<MavenResolver.Coordinate> coords = need(call, "group:artifact:version").stream().map(MavenResolver.Coordinate::parse).toList();
        System.out.println("[%maven] repositories: " + maven.repositoriesText());
        MavenResolver.Resolved r = maven.resolve(coords);
        for (String w : r.warnings()) System.out.println("[%maven] Maven warns: " + w);
        if (!r.downloadedFrom().isEmpty()) System.out.println("[%maven] downloaded from " + String.join(", ", r.downloadedFrom()));
        List<String> added = new ArrayList<>();
        for (Path jar : r.jars()) added.add(kernel.addToClasspath(jar));
        System.out.println("added " + added.size() + " jar" + (added.size() == 1 ? "" : "s") + " for " + call.argsFrom(0));
        return null;
    }

    @Magic(value = "mavenRepo", aliases = "addMavenRepo", help = "%mavenRepo [ID] URL — also resolve %maven from this repository")
    Object mavenRepo(MagicCall call) {
        List<String> a = need(call, "a repository URL");
        maven.addRepository(a.getLast());
        return null;
    }

    @Magic(value = "load", help = "%load FILE — run a .jsh/.jshell/.java script, or every code cell of an .ipynb")
    Object load(MagicCall call) throws IOException {
        Path file = Path.of(String.join(" ", need(call, "a file"))).toAbsolutePath();
        if (!Files.isRegularFile(file)) throw new MagicException("[%load] no file " + file + "; give a path relative to " + Path.of("").toAbsolutePath());
        String text = Files.readString(file);
        if (!file.toString().endsWith(".ipynb")) return kernel.evalAfterMagic(text);
        Object last = null;
        for (JsonElement c : JsonParser.parseString(text).getAsJsonObject().getAsJsonArray("cells")) {
            JsonObject cell = c.getAsJsonObject();
            if (!"code".equals(cell.get("cell_type").getAsString())) continue;
            JsonElement src = cell.get("source");
            String code = src.isJsonArray()
                    ? src.getAsJsonArray().asList().stream().map(JsonElement::getAsString).collect(Collectors.joining())
                    : src.getAsString();
            if (!code.isBlank()) last = kernel.evalAfterMagic(code);
        }
        return last;
    }

    @Magic(value = "lsmagic", aliases = "help", help = "%lsmagic — list the magics, each once, sorted")
    Table lsmagic(MagicCall call) {
        StringColumn magic = StringColumn.create("magic"), usage = StringColumn.create("usage"), what = StringColumn.create("what it does");
        for (MagicRegistry.Help h : kernel.magics().help()) {
            magic.append(h.magic() + (h.aliases().isEmpty() ? "" : " (" + String.join(", ", h.aliases()) + ")"));
            usage.append(h.usage());
            what.append(h.what());
        }
        return Table.create("magics", magic, usage, what);
    }

    private static List<String> need(MagicCall call, String what) {
        if (call.args().isEmpty()) throw new MagicException("[%" + call.name() + "] needs " + what + "; see %lsmagic");
        return call.args();
    }

    /** A path, or a glob in its last segment ({@code lib/*.jar}); relative to the kernel's working directory. */
    static List<Path> glob(String arg) {
        Path p = Path.of(arg);
        String last = p.getFileName() == null ? "" : p.getFileName().toString();
        if (!last.contains("*") && !last.contains("?")) {
            if (!Files.exists(p)) throw new MagicException("no file or directory '" + arg + "' (relative to " + Path.of("").toAbsolutePath() + ")");
            return List.of(p.toAbsolutePath());
        }
        Path dir = p.getParent() == null ? Path.of("") : p.getParent();
        PathMatcher m = FileSystems.getDefault().getPathMatcher("glob:" + last);
        try (Stream<Path> s = Files.list(dir.toAbsolutePath())) {
            List<Path> found = s.filter(f -> m.matches(f.getFileName())).sorted().toList();
            if (found.isEmpty()) throw new MagicException("nothing matches '" + arg + "'");
            return found;
        } catch (IOException e) {
            throw new MagicException("cannot list " + dir.toAbsolutePath() + ": " + e.getMessage());
        }
    }
}
