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

        String text() {
            return group + ":" + artifact + (packaging.equals("jar") && classifier == null ? "" : ":" + packaging)
                    + (classifier == null ? "" : ":" + classifier) + ":" + version;
        }

        String xml() {
            return "    <dependency><groupId>" + group + "</groupId><artifactId>" + artifact + "</artifactId><version>"
                    + version + "</version>" + (packaging.equals("jar") ? "" : "<type>" + packaging + "</type>")
                    + (classifier == null ? "" : "<classifier>" + classifier + "</classifier>") + "</dependency>\n";
        }
    }

    private final List<String> repositories = new ArrayList<>();
    /** The private working folder (pom.xml, the copied jars): made on first use, removed by {@link #close()}. */
    private Path workDir;

    MavenResolver() {
    }

    /**
     * %mavenRepo: https, file, or plain http to this machine only (plain http from elsewhere lets anyone on the way swap
     * the jars; Maven 3.8.1+ blocks it by default too).
     */
    void addRepository(String url) {
        if (!url.matches("(https?|file)://.+")) throw new MagicException("[%mavenRepo] '" + url + "' is not a URL; give http(s):// or file://");
        if (url.startsWith("http://") && !url.matches("http://(localhost|127\\.0\\.0\\.1|\\[::1\\])([:/].*)?"))
            throw new MagicException("[%mavenRepo] " + url + " is plain http, which anyone on the network path can tamper with; use https:// (plain http is accepted for localhost only)");
        if (!repositories.contains(url)) repositories.add(url);
    }

    /** The repositories a resolution uses, for the cell's output. */
    String repositoriesText() {
        StringBuilder sb = new StringBuilder("Maven Central " + CENTRAL);
        for (int i = 0; i < repositories.size(); i++) sb.append(", nb").append(i).append(' ').append(repositories.get(i));
        return sb.append(" (and the mirrors and repositories of ~/.m2/settings.xml, if any)").toString();
    }

    /** The working folder: a new private temporary directory (0700, random name) on first use. */
    synchronized Path workDir() throws IOException {
        if (workDir == null) workDir = Files.createTempDirectory("ane4j-maven-");
        return workDir;
    }

    /** Removes the working folder and the jars copied into it (called at kernel shutdown). */
    synchronized void close() {
        Path dir = workDir;
        workDir = null;
        if (dir == null || !Files.exists(dir)) return;
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        } catch (IOException e) {
            System.err.println("[%maven] could not remove " + dir + ": " + e.getMessage() + "; delete it by hand");
        }
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

    /** What {@link #resolve} found: the jar paths, Maven's warnings, and where files were downloaded from. */
    record Resolved(List<Path> jars, List<String> warnings, List<String> downloadedFrom) {}

    /**
     * Downloads (or finds in ~/.m2) the artifacts and their runtime dependencies into the private working folder.
     * {@code --strict-checksums}: an artifact whose .sha1/.md5 does not match fails the resolution (Maven's default policy
     * only warns, and -q hid the warning: a tampered jar loaded; docs/reliability.md, K8).
     */
    Resolved resolve(List<Coordinate> coords) throws IOException, InterruptedException {
        Path dir = Files.createDirectories(workDir().resolve(Integer.toHexString(coords.hashCode() ^ repositories.hashCode())));
        Path out = dir.resolve("lib");
        Files.writeString(dir.resolve("pom.xml"), pom(coords));
        String mvn = System.getenv().getOrDefault("ANE4J_MVN", "mvn");
        ProcessBuilder pb = new ProcessBuilder(mvn, "-B", "--strict-checksums", "-Dstyle.color=never", "-f",
                dir.resolve("pom.xml").toString(), PLUGIN, "-DincludeScope=runtime", "-DoutputDirectory=" + out)
                .redirectErrorStream(true);
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
            boolean checksum = log.contains("Checksum validation failed") || log.toLowerCase(java.util.Locale.ROOT).contains("checksum");
            Files.deleteIfExists(dir.resolve("pom.xml"));
            throw new MagicException("[%maven] could not resolve " + coords.stream().map(Coordinate::text).toList() + ": "
                    + (checksum ? "a downloaded file does not match its published checksum (" + checksumLine(log) + "); nothing was loaded."
                            + " The repository or the network path serves altered files: use another repository"
                            : reason + " (check the coordinates, the network, or add a repository with %mavenRepo URL)"));
        }
        List<String> warnings = log.lines().filter(l -> l.startsWith("[WARNING]")).map(l -> l.substring(9).strip())
                .filter(l -> !l.isEmpty()).limit(10).toList();
        java.util.LinkedHashSet<String> from = new java.util.LinkedHashSet<>();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("Downloaded from ([^:]+): ([a-z]+://[^/\\s]+)").matcher(log);
        while (m.find()) from.add(m.group(1) + " (" + m.group(2) + ")");
        if (!Files.isDirectory(out)) return new Resolved(List.of(), warnings, List.copyOf(from));
        try (Stream<Path> s = Files.list(out)) {
            return new Resolved(s.filter(f -> f.toString().endsWith(".jar")).sorted().toList(), warnings, List.copyOf(from));
        }
    }

    private static String checksumLine(String log) {
        return log.lines().filter(l -> l.toLowerCase(java.util.Locale.ROOT).contains("checksum")).findFirst().orElse("")
                .replace("[ERROR]", "").replace("[WARNING]", "").strip();
    }
}
