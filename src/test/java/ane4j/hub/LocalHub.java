package ane4j.hub;

import ane4j.model.Json;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/** Tests only: serves one model folder as the hub serves repository {@code id} at a fixed commit, on 127.0.0.1 (no faults). */
public final class LocalHub implements AutoCloseable {
    public static final String COMMIT = "fedcba9876543210fedcba9876543210fedcba98";
    private final HttpServer server;

    public LocalHub(String id, Path folder) throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", x -> {
            try (x) {
                String path = x.getRequestURI().getPath();
                if (path.equals("/api/models/" + id + "/revision/main")) {
                    List<Object> siblings = new ArrayList<>();
                    try (Stream<Path> s = Files.list(folder)) { s.forEach(p -> siblings.add(Map.of("rfilename", p.getFileName().toString()))); }
                    byte[] body = Json.compact(Map.of("sha", COMMIT, "siblings", siblings)).getBytes(StandardCharsets.UTF_8);
                    x.sendResponseHeaders(200, body.length);
                    x.getResponseBody().write(body);
                    return;
                }
                String prefix = "/" + id + "/resolve/" + COMMIT + "/";
                Path f = path.startsWith(prefix) ? folder.resolve(path.substring(prefix.length())) : null;
                if (f == null || !Files.isRegularFile(f)) { x.sendResponseHeaders(404, -1); return; }
                byte[] b = Files.readAllBytes(f);
                x.getResponseHeaders().add("X-Repo-Commit", COMMIT);
                x.getResponseHeaders().add("ETag", "\"" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b)) + "\"");
                if (x.getRequestMethod().equals("HEAD")) {
                    x.getResponseHeaders().add("Content-Length", Integer.toString(b.length));
                    x.sendResponseHeaders(200, -1);
                } else {
                    x.sendResponseHeaders(200, b.length);
                    x.getResponseBody().write(b);
                }
            } catch (java.security.NoSuchAlgorithmException e) {
                throw new IOException(e);
            }
        });
        server.start();
    }

    public String endpoint() { return "http://127.0.0.1:" + server.getAddress().getPort(); }

    @Override public void close() { server.stop(0); }
}
