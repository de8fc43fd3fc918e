package ane4j.notebook;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Resolves Maven coordinates with their runtime dependencies by running {@code mvn dependency:copy-dependencies} on a
 * generated POM, so settings.xml, mirrors, proxies and the local repository all apply. Needs {@code mvn} on PATH
 * (or {@code ANE4J_MVN}).
 */
final class MavenResolver {
    static final String CENTRAL = "https://repo.maven.apache.org/maven2/";
    private static final String PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies";

    /** group:artifact[:packaging[:classifier]]:version, as IJava's %maven. */
    record Coordinate(String group, String artifact, String packaging, String classifier, String version) {
        static Coordinate parse(String s) {
            String[] p = s.split(":", -1);
            for (String part : p) {
                if (part.isBlank()) throw bad(s);
            }
            return switch (p.length) {
                case 3 -> new Coordinate(p[0], p[1], "jar", null, p[2]);
                case 4 -> new Coordinate(p[0], p[1], p[2], null, p[3]);
                case 5 -> new Coordinate(p[0], p[1], p[2], p[3], p[4]);
                default -> throw bad(s);
            };
        }

        private static MagicException bad(String s) {
            return new MagicException("[%maven] '" + s + "' is not a Maven coordinate; write group:artifact:version, e.g. org.knowm.xchart:xchart:3.8.8");
        }

        String xml() {
            return "    <dependency><groupId>" + group + "</groupId><artifactId>" + artifact + "</artifactId><version>"
                    + version + "</version>" + (packaging.equals("jar") ? "" : "<type>" + packaging + "</type>")
                    + (classifier == null ? "" : "<classifier>" + classifier + "</classifier>") + "</dependency>\n";
        }
    }

    private final List<String> repositories = new ArrayList<>();
    private final Path workDir;

    MavenResolver(Path workDir) {
        this.workDir = workDir;
    }

    void addRepository(String url) {
        if (!url.matches("(https?|file)://.+")) throw new MagicException("[%mavenRepo] '" + url + "' is not a URL; give http(s):// or file://");
        if (!repositories.contains(url)) repositories.add(url);
    }

    /** The POM whose runtime dependencies are the requested artifacts. */
    String pom(List<Coordinate> coords) {
        StringBuilder sb = new StringBuilder("""
                <project xmlns="http://maven.apache.org/POM/4.0.0">
                  <modelVersion>4.0.0</modelVersion>
                  <groupId>ane4j.notebook</groupId><artifactId>resolve</artifactId><version>1</version>
                  <dependencies>
                """);
        coords.forEach(c -> sb.append(c.xml()));
        sb.append("  </dependencies>\n");
        if (!repositories.isEmpty()) {
            sb.append("  <repositories>\n");
            for (int i = 0; i < repositories.size(); i++) {
                sb.append("    <repository><id>nb").append(i).append("</id><url>").append(repositories.get(i)).append("</url></repository>\n");
            }
            sb.append("  </repositories>\n");
        }
        return sb.append("</project>\n").toString();
    }

    /** Downloads (or finds in ~/.m2) the artifacts and their runtime dependencies; returns the jar paths. */
    List<Path> resolve(List<Coordinate> coords) throws IOException, InterruptedException {
        Path dir = Files.createDirectories(workDir.resolve(Integer.toHexString(coords.hashCode() ^ repositories.hashCode())));
        Path out = dir.resolve("lib");
        Files.writeString(dir.resolve("pom.xml"), pom(coords));
        String mvn = System.getenv().getOrDefault("ANE4J_MVN", "mvn");
        ProcessBuilder pb = new ProcessBuilder(mvn, "-B", "-q", "-f", dir.resolve("pom.xml").toString(), PLUGIN,
                "-DincludeScope=runtime", "-DoutputDirectory=" + out).redirectErrorStream(true);
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new MagicException("[%maven] could not run '" + mvn + "'; install Maven or set ANE4J_MVN to its path");
        }
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
            String reason = log.lines().filter(l -> l.contains("[ERROR]")).findFirst().orElse(log.strip())
                    .replace("[ERROR]", "").strip();
            throw new MagicException("[%maven] could not resolve " + coords.stream().map(Coordinate::toString).toList()
                    + ": " + reason + " (check the coordinates, the network, or add a repository with %mavenRepo URL)");
        }
        if (!Files.isDirectory(out)) return List.of();
        try (Stream<Path> s = Files.list(out)) {
            return s.filter(f -> f.toString().endsWith(".jar")).sorted().toList();
        }
    }
}
