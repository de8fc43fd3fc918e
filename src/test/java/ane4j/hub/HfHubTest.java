package ane4j.hub;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.Json;
import ane4j.model.ModelFormatException;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hub client against a local server on 127.0.0.1 that serves the hub's URL layout (never the real hub):
 * /api/models/{id}/revision/{rev}, HEAD/GET /{id}/resolve/{rev}/{file} with ETag and X-Repo-Commit, LFS files as a
 * redirect to a storage URL with X-Linked-Etag (their SHA-256) and X-Linked-Size, Range requests, and faults: a
 * connection dropped mid-file, corrupted bytes, a gated and a missing repository, a server that ignores ranges.
 */
class HfHubTest {
    static final String REPO = "org/tiny-model", COMMIT = "0123456789abcdef0123456789abcdef01234567";

    @TempDir Path tmp;
    HttpServer server, storage; // the hub, and the storage host its LFS redirects point to
    String endpoint;
    final Map<String, byte[]> files = new LinkedHashMap<>();
    final List<String> log = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger dropNext = new AtomicInteger(); // drop the next n storage GETs halfway
    volatile boolean corrupt, ignoreRanges;
    volatile String expectToken;

    static boolean lfs(String f) { return f.endsWith(".safetensors"); }

    static String sha256(byte[] b) throws Exception { return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b)); }

    static String gitEtag(byte[] b) throws Exception { return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(b)); }

    @BeforeEach
    void start() throws Exception {
        byte[] big = new byte[3 << 20];
        new java.util.Random(1).nextBytes(big);
        files.put("config.json", "{\"model_type\": \"qwen3\"}".getBytes(StandardCharsets.UTF_8));
        files.put("tokenizer.json", "{\"model\": {}}".getBytes(StandardCharsets.UTF_8));
        files.put("tokenizer_config.json", "{\"chat_template\": \"{{ messages }}\"}".getBytes(StandardCharsets.UTF_8));
        files.put("model.safetensors", big);
        files.put("README.md", "not needed".getBytes(StandardCharsets.UTF_8));
        files.put("pytorch_model.bin", "not needed either".getBytes(StandardCharsets.UTF_8));
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", this::handle);
        server.start();
        storage = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        storage.createContext("/", this::handle);
        storage.start();
        endpoint = "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @AfterEach
    void stop() {
        server.stop(0);
        storage.stop(0);
    }

    private void handle(HttpExchange x) throws IOException {
        String path = x.getRequestURI().getPath(), method = x.getRequestMethod();
        log.add(method + " " + path + (x.getRequestHeaders().getFirst("Range") != null ? " " + x.getRequestHeaders().getFirst("Range") : ""));
        try (x) {
            if (expectToken != null && !path.startsWith("/cdn/") && !("Bearer " + expectToken).equals(x.getRequestHeaders().getFirst("Authorization"))) {
                x.getResponseHeaders().add("X-Error-Code", "GatedRepo");
                x.getResponseHeaders().add("X-Error-Message", "Access to model org/tiny-model is restricted. You must have access to it and be authenticated to access it. Please log in.");
                x.sendResponseHeaders(401, -1);
                return;
            }
            if (path.startsWith("/api/models/org/missing") || path.startsWith("/org/missing/")) {
                x.getResponseHeaders().add("X-Error-Code", "RepoNotFound");
                x.sendResponseHeaders(401, -1);
                return;
            }
            if (path.equals("/api/models/" + REPO + "/revision/main")) {
                List<Object> siblings = new ArrayList<>();
                for (String f : files.keySet()) siblings.add(Map.of("rfilename", f));
                byte[] body = Json.compact(Map.of("id", REPO, "sha", COMMIT, "siblings", siblings)).getBytes(StandardCharsets.UTF_8);
                x.sendResponseHeaders(200, body.length);
                x.getResponseBody().write(body);
                return;
            }
            String resolve = "/" + REPO + "/resolve/" + COMMIT + "/";
            if (path.startsWith(resolve)) {
                String f = path.substring(resolve.length());
                byte[] b = files.get(f);
                if (b == null) {
                    x.getResponseHeaders().add("X-Error-Code", "EntryNotFound");
                    x.sendResponseHeaders(404, -1);
                    return;
                }
                x.getResponseHeaders().add("X-Repo-Commit", COMMIT);
                if (lfs(f)) {
                    // LFS: a redirect to the storage host, the content's SHA-256 as X-Linked-Etag
                    x.getResponseHeaders().add("X-Linked-Etag", "\"" + sha256(b) + "\"");
                    x.getResponseHeaders().add("X-Linked-Size", Long.toString(b.length));
                    x.getResponseHeaders().add("ETag", "\"" + gitEtag(b) + "\"");
                    x.getResponseHeaders().add("Location", "http://127.0.0.1:" + storage.getAddress().getPort() + "/cdn/" + sha256(b) + "?sig=1");
                    x.sendResponseHeaders(302, -1);
                    return;
                }
                x.getResponseHeaders().add("ETag", "W/\"" + gitEtag(b) + "\"");
                send(x, b, method, false);
                return;
            }
            if (path.startsWith("/cdn/")) {
                if (x.getRequestHeaders().getFirst("Authorization") != null) { x.sendResponseHeaders(400, -1); return; } // the token never leaves the hub
                byte[] b = files.get("model.safetensors");
                send(x, b, method, true);
                return;
            }
            x.sendResponseHeaders(404, -1);
        } catch (Exception e) {
            throw new IOException(e);
        }
    }

    private void send(HttpExchange x, byte[] b, String method, boolean storage) throws IOException {
        int from = 0;
        String range = x.getRequestHeaders().getFirst("Range");
        if (range != null && !ignoreRanges) {
            from = Integer.parseInt(range.replaceAll("bytes=(\\d+)-.*", "$1"));
            x.getResponseHeaders().add("Content-Range", "bytes " + from + "-" + (b.length - 1) + "/" + b.length);
        }
        if (method.equals("HEAD")) {
            x.getResponseHeaders().add("Content-Length", Long.toString(b.length));
            x.sendResponseHeaders(200, -1);
            return;
        }
        byte[] body = java.util.Arrays.copyOfRange(b, from, b.length);
        if (storage && corrupt) body[body.length / 2] ^= 1;
        x.sendResponseHeaders(range != null && !ignoreRanges ? 206 : 200, body.length);
        OutputStream out = x.getResponseBody();
        if (storage && dropNext.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            out.write(body, 0, body.length / 2);
            out.flush();
            throw new IOException("dropped on purpose");
        }
        out.write(body);
    }

    private HfHub hub(Map<String, String> more, PrintStream progress) {
        Map<String, String> env = new LinkedHashMap<>(Map.of("HF_ENDPOINT", endpoint, "HF_HOME", tmp.resolve("hf").toString()));
        env.putAll(more);
        return new HfHub(env, progress);
    }

    private Path repoDir() { return tmp.resolve("hf/hub/models--org--tiny-model"); }

    private List<String> cacheFiles() throws IOException {
        try (Stream<Path> s = Files.walk(tmp.resolve("hf"))) {
            return s.filter(p -> !Files.isDirectory(p)).map(p -> tmp.resolve("hf").relativize(p).toString()).sorted().toList();
        }
    }

    @Test
    void aModelLandsInHuggingFaceHubsCacheLayoutAndIsReusedOffline() throws Exception {
        var err = new ByteArrayOutputStream();
        Path snap = hub(Map.of(), new PrintStream(err, true, StandardCharsets.UTF_8)).snapshot(REPO, "main");
        assertEquals(repoDir().resolve("snapshots").resolve(COMMIT), snap);
        assertEquals(COMMIT, Files.readString(repoDir().resolve("refs/main")));
        for (String f : List.of("config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors")) {
            assertTrue(Files.isSymbolicLink(snap.resolve(f)), f + " is a link into blobs/");
            assertArrayEquals(files.get(f), Files.readAllBytes(snap.resolve(f)), f);
            String etag = lfs(f) ? sha256(files.get(f)) : gitEtag(files.get(f));
            assertEquals(Path.of("../../blobs/" + etag), Files.readSymbolicLink(snap.resolve(f)), f + ": a relative link to blobs/<etag>");
        }
        assertFalse(Files.exists(snap.resolve("README.md")) || Files.exists(snap.resolve("pytorch_model.bin")), "only the files a model needs");
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("[hub] model.safetensors "), "progress: " + err);
        // a second call downloads nothing; offline, the cache alone answers
        log.clear();
        hub(Map.of(), null).snapshot(REPO, "main");
        assertTrue(log.stream().noneMatch(l -> l.startsWith("GET /cdn/")), log.toString());
        server.stop(0);
        storage.stop(0);
        assertEquals(snap, hub(Map.of("HF_HUB_OFFLINE", "1"), null).snapshot(REPO, "main"));
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> hub(Map.of("HF_HUB_OFFLINE", "1"), null).snapshot("org/other", "main"));
        assertTrue(e.getMessage().startsWith("[hub] org/other is not in the cache ") && e.getMessage().contains("HF_HUB_OFFLINE"), e.getMessage());
    }

    @Test
    void aDroppedConnectionResumesWithARange() throws Exception {
        dropNext.set(2);
        Path snap = hub(Map.of("HF_HUB_CACHE", tmp.resolve("hf/hub").toString()), null).snapshot(REPO, "main");
        assertArrayEquals(files.get("model.safetensors"), Files.readAllBytes(snap.resolve("model.safetensors")));
        List<String> gets = log.stream().filter(l -> l.startsWith("GET /cdn/")).toList();
        assertEquals(3, gets.size(), gets.toString());
        assertFalse(gets.get(0).contains("Range"), gets.toString());
        assertTrue(gets.get(1).matches("GET /cdn/\\w+ bytes=\\d+-") && gets.get(2).matches("GET /cdn/\\w+ bytes=\\d+-"), "resumed where it stopped: " + gets);
        assertTrue(cacheFiles().stream().noneMatch(f -> f.endsWith(".incomplete")), cacheFiles().toString());
    }

    @Test
    void anInterruptedDownloadResumesInTheNextRunAndAServerIgnoringRangesStartsOver() throws Exception {
        dropNext.set(HfHub.ATTEMPTS);
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> hub(Map.of(), null).snapshot(REPO, "main"));
        assertTrue(e.getMessage().startsWith("[hub] org/tiny-model/model.safetensors: the download failed 5 times") && e.getMessage().endsWith("run again to resume"), e.getMessage());
        // nothing half-written under a final name: the partial bytes are blobs/<sha256>.incomplete, no blob, no snapshot link
        String sha = sha256(files.get("model.safetensors"));
        assertTrue(Files.isRegularFile(repoDir().resolve("blobs/" + sha + ".incomplete")));
        assertFalse(Files.exists(repoDir().resolve("blobs/" + sha)));
        assertFalse(Files.exists(repoDir().resolve("snapshots/" + COMMIT + "/model.safetensors"), java.nio.file.LinkOption.NOFOLLOW_LINKS));
        log.clear();
        Path snap = hub(Map.of(), null).snapshot(REPO, "main");
        assertTrue(log.stream().anyMatch(l -> l.matches("GET /cdn/\\w+ bytes=\\d+-")), "the next run resumed: " + log);
        assertArrayEquals(files.get("model.safetensors"), Files.readAllBytes(snap.resolve("model.safetensors")));
        // a server that ignores Range answers 200 with the whole file: written from the start, not appended
        Files.delete(snap.resolve("model.safetensors"));
        Files.delete(repoDir().resolve("blobs/" + sha));
        Files.write(repoDir().resolve("blobs/" + sha + ".incomplete"), new byte[1000]);
        ignoreRanges = true;
        assertArrayEquals(files.get("model.safetensors"), Files.readAllBytes(hub(Map.of(), null).snapshot(REPO, "main").resolve("model.safetensors")));
    }

    @Test
    void corruptedBytesAreRefusedByTheirSha256AndLeaveNothing() throws Exception {
        corrupt = true;
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> hub(Map.of(), null).snapshot(REPO, "main"));
        assertTrue(e.getMessage().startsWith("[hub] org/tiny-model/model.safetensors: the downloaded bytes have SHA-256 "), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
        String sha = sha256(files.get("model.safetensors"));
        assertTrue(cacheFiles().stream().noneMatch(f -> f.contains(sha)), cacheFiles().toString());
    }

    @Test
    void gatedAndMissingRepositoriesAreOneLine() throws Exception {
        expectToken = "hf_secret";
        ModelFormatException gated = assertThrows(ModelFormatException.class, () -> hub(Map.of(), null).snapshot(REPO, "main"));
        assertEquals("[hub] org/tiny-model is gated: accept its conditions on " + endpoint + "/org/tiny-model and give a token (HF_TOKEN, or huggingface-cli login); no token is set",
                gated.getMessage());
        // HF_TOKEN, or the token file under HF_HOME, opens it
        assertTrue(Files.isDirectory(hub(Map.of("HF_TOKEN", "hf_secret"), null).snapshot(REPO, "main")));
        Files.createDirectories(tmp.resolve("hf"));
        Files.writeString(tmp.resolve("hf/token"), "hf_secret\n");
        assertTrue(Files.isDirectory(hub(Map.of(), null).snapshot(REPO, "main")));
        expectToken = null;
        ModelFormatException missing = assertThrows(ModelFormatException.class, () -> hub(Map.of("HF_TOKEN", ""), null).snapshot("org/missing", "main"));
        assertTrue(missing.getMessage().startsWith("[hub] org/missing: no such model repository on " + endpoint), missing.getMessage());
        assertFalse(HfHub.isRepoId(tmp.toString()));
        assertTrue(HfHub.isRepoId("Qwen/Qwen3-0.6B"));
        assertFalse(HfHub.isRepoId("../x"));
    }
}
