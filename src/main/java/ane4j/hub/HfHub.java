package ane4j.hub;

import ane4j.model.Json;
import ane4j.model.ModelFormatException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Models named by their Hugging Face id ({@code Qwen/Qwen3-0.6B}), fetched into the cache layout huggingface_hub uses
 * (huggingface_hub/file_download.py, hf_hub_download; docs "Manage huggingface_hub cache-system"), so Python tools and
 * ane4j share files in both directions:
 * <pre>
 *   $HF_HUB_CACHE/models--Qwen--Qwen3-0.6B/
 *     refs/main                         the commit the revision resolved to
 *     blobs/&lt;etag&gt;                       file contents, named by ETag (an LFS file's is its SHA-256)
 *     snapshots/&lt;commit&gt;/config.json     relative symlinks into blobs/
 * </pre>
 * Environment as huggingface_hub reads it: {@code HF_ENDPOINT} (https://huggingface.co), {@code HF_HOME}
 * (~/.cache/huggingface), {@code HF_HUB_CACHE} ($HF_HOME/hub), {@code HF_TOKEN} else the token file
 * ({@code HF_TOKEN_PATH}, $HF_HOME/token), {@code HF_HUB_OFFLINE}. Only the files a model needs are fetched: its
 * config, tokenizer and chat template files, and model.safetensors or the shards its index names.
 *
 * <p>Protocol: {@code GET /api/models/{id}/revision/{rev}} gives the commit ({@code sha}) and file list;
 * {@code HEAD /{id}/resolve/{commit}/{file}} (redirects not followed) gives {@code X-Repo-Commit}, the ETag
 * ({@code X-Linked-Etag} for LFS files) and size ({@code X-Linked-Size} or Content-Length), and for LFS files a
 * redirect to the storage URL. A download goes to {@code blobs/<etag>.incomplete} (huggingface_hub's name, so either
 * tool resumes the other's), resumes with {@code Range} after a dropped connection, and is renamed to
 * {@code blobs/<etag>} only once its size and, for LFS files, its SHA-256 are checked: a blob under its final name or a
 * snapshot link is never half-written.
 */
public final class HfHub {
    private static final String TAG = "[hub] ";
    private static final Pattern REPO_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*");
    private static final Pattern COMMIT = Pattern.compile("[0-9a-f]{40}");
    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
    static final int ATTEMPTS = 5;

    private final String endpoint;
    private final Path cache;
    private final String token;
    private final boolean offline;
    private final PrintStream progress;
    private final HttpClient http;

    /** A client configured as huggingface_hub would be by {@code env}; progress lines go to {@code progress} (or nowhere). */
    public HfHub(Map<String, String> env, PrintStream progress) {
        String home = nonEmpty(env.get("HF_HOME"), Path.of(System.getProperty("user.home"), ".cache", "huggingface").toString());
        this.endpoint = nonEmpty(env.get("HF_ENDPOINT"), "https://huggingface.co").replaceAll("/+$", "");
        this.cache = Path.of(nonEmpty(env.get("HF_HUB_CACHE"), Path.of(home, "hub").toString()));
        String t = env.get("HF_TOKEN");
        if (t == null || t.isBlank()) {
            Path file = Path.of(nonEmpty(env.get("HF_TOKEN_PATH"), Path.of(home, "token").toString()));
            try {
                t = Files.isRegularFile(file) ? Files.readString(file).strip() : null;
            } catch (IOException e) {
                t = null;
            }
        }
        this.token = t == null || t.isBlank() ? null : t.strip();
        String off = env.getOrDefault("HF_HUB_OFFLINE", "");
        this.offline = Set.of("1", "on", "yes", "true").contains(off.strip().toLowerCase(Locale.ROOT));
        this.progress = progress;
        this.http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).connectTimeout(Duration.ofSeconds(30)).build();
    }

    private static String nonEmpty(String v, String dflt) { return v == null || v.isBlank() ? dflt : v; }

    /** The client for this process's environment, with progress on stderr. */
    public static HfHub fromEnvironment() { return new HfHub(System.getenv(), System.err); }

    public Path cache() { return cache; }

    /** True when {@code s} names no existing file or folder and looks like a Hugging Face id ({@code org/name}). */
    public static boolean isRepoId(String s) {
        return s != null && REPO_ID.matcher(s).matches() && !Files.exists(Path.of(s)) && !s.contains("..");
    }

    /** {@code arg} itself when it is a local path, else the snapshot folder of the Hugging Face id it names (fetched as needed). */
    public static String resolveArgument(String arg) {
        if (!isRepoId(arg)) return arg;
        return fromEnvironment().snapshot(arg, "main").toString();
    }

    /**
     * A run's settings with the Hugging Face ids among them replaced by snapshot folders: the one rule for every face that
     * starts a training run (the CLI's {@code train}, the notebook's {@code %%train} and {@code Ane.train}), applied before
     * the run's options are built. {@code init} and {@code tokenizer} naming an id (and no local file) become its snapshot
     * folder; {@code model} naming an id means the model to fine-tune, as mlx-lm's {@code --model org/name} does, so it
     * becomes {@code init} (a preset or a config file stays {@code model}). Other keys are left as given.
     *
     * @param canonical a key's canonical name from any spelling ({@code RunSpec.KEYS::canonical}); null for a key it does
     *                  not know, which is left for the run's own parser to refuse
     * @param hub       the client, made only when an id is met ({@code HfHub::fromEnvironment})
     */
    public static Map<String, String> resolveRunKeys(Map<String, String> given, java.util.function.Function<String, String> canonical,
                                                     java.util.function.Supplier<HfHub> hub) {
        Map<String, String> out = new java.util.LinkedHashMap<>();
        String modelId = null, initKey = null;
        for (var e : given.entrySet()) {
            String name = canonical.apply(e.getKey()), v = e.getValue();
            if ("model".equals(name) && v != null && isRepoId(v.strip())) modelId = v.strip();
            else out.put(e.getKey(), v);
            if ("init".equals(name) && v != null && !v.isBlank()) initKey = e.getKey();
        }
        if (modelId != null && initKey != null)
            throw new IllegalArgumentException("[train] model = " + modelId + " names a Hugging Face model to fine-tune, and " + initKey + " = "
                    + given.get(initKey) + " too; keep one of them");
        if (modelId != null) out.put("init", modelId);
        HfHub client = null;
        for (var e : out.entrySet()) {
            String name = canonical.apply(e.getKey()), v = e.getValue();
            if (("init".equals(name) || "tokenizer".equals(name)) && v != null && isRepoId(v.strip())) {
                if (client == null) client = hub.get();
                e.setValue(client.snapshot(v.strip(), "main").toString());
            }
        }
        return out;
    }

    /** The repo's folder in the cache: models--org--name. */
    public Path repoFolder(String repo) { return cache.resolve("models--" + repo.replace("/", "--")); }

    // ----------------------------------------------------------------------------------------------
    // snapshot

    /** The snapshot folder of {@code repo} at {@code revision} holding the files a model needs, downloading what is missing. */
    public Path snapshot(String repo, String revision) {
        if (!REPO_ID.matcher(repo).matches()) throw new ModelFormatException(TAG + "'" + repo + "' is not a Hugging Face model id (org/name)");
        Path dir = repoFolder(repo);
        if (offline) return offlineSnapshot(repo, revision, dir);
        Map<?, ?> info = apiInfo(repo, revision);
        if (!(info.get("sha") instanceof String commit) || !COMMIT.matcher(commit).matches())
            throw new ModelFormatException(TAG + repo + ": the hub's answer has no commit sha; is HF_ENDPOINT (" + endpoint + ") a Hugging Face hub?");
        List<String> siblings = new ArrayList<>();
        if (info.get("siblings") instanceof List<?> l)
            for (Object o : l) if (o instanceof Map<?, ?> m && m.get("rfilename") instanceof String f) siblings.add(f);
        Set<String> wanted = new LinkedHashSet<>();
        for (String f : List.of("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json"))
            if (siblings.contains(f)) wanted.add(f);
        if (!siblings.contains("config.json")) throw new ModelFormatException(TAG + repo + " has no config.json; not a transformers model repository");
        Path snap = dir.resolve("snapshots").resolve(commit);
        for (String f : wanted) fetch(repo, commit, f, snap);
        if (siblings.contains("model.safetensors")) fetch(repo, commit, "model.safetensors", snap);
        else if (siblings.contains("model.safetensors.index.json")) {
            fetch(repo, commit, "model.safetensors.index.json", snap);
            for (String shard : shards(snap.resolve("model.safetensors.index.json"), repo)) {
                if (!siblings.contains(shard)) throw new ModelFormatException(TAG + repo + ": the index names " + shard + ", which the repository does not have");
                fetch(repo, commit, shard, snap);
            }
        } else
            throw new ModelFormatException(TAG + repo + " has no model.safetensors or model.safetensors.index.json (ane4j reads safetensors weights; for a GGUF repository download the .gguf file and give its path)");
        if (!revision.equals(commit)) writeRef(dir, revision, commit);
        return snap;
    }

    private Path offlineSnapshot(String repo, String revision, Path dir) {
        String commit = revision;
        if (!COMMIT.matcher(revision).matches()) {
            Path ref = dir.resolve("refs").resolve(revision);
            try {
                commit = Files.isRegularFile(ref) ? Files.readString(ref).strip() : null;
            } catch (IOException e) {
                commit = null;
            }
        }
        Path snap = commit == null ? null : dir.resolve("snapshots").resolve(commit);
        if (snap == null || !Files.isRegularFile(snap.resolve("config.json")))
            throw new ModelFormatException(TAG + repo + " is not in the cache " + cache + " and HF_HUB_OFFLINE is set; download it once online (unset HF_HUB_OFFLINE) or give a local path");
        return snap;
    }

    private static List<String> shards(Path index, String repo) {
        try {
            if (!(Json.parse(Files.readString(index)) instanceof Map<?, ?> m) || !(m.get("weight_map") instanceof Map<?, ?> wm))
                throw new ModelFormatException(TAG + repo + ": model.safetensors.index.json has no weight_map");
            Set<String> s = new LinkedHashSet<>();
            for (Object v : wm.values()) {
                String f = String.valueOf(v);
                if (f.contains("/") || f.contains("\\") || f.startsWith(".")) throw new ModelFormatException(TAG + repo + ": the index names a shard '" + f + "' outside the repository's top folder");
                s.add(f);
            }
            return new ArrayList<>(s);
        } catch (IOException | IllegalArgumentException e) {
            throw new ModelFormatException(TAG + repo + ": cannot read model.safetensors.index.json: " + e.getMessage());
        }
    }

    private static void writeRef(Path dir, String revision, String commit) {
        try {
            Path ref = dir.resolve("refs").resolve(revision);
            Files.createDirectories(ref.getParent());
            Path tmp = ref.resolveSibling(ref.getFileName() + ".tmp");
            Files.writeString(tmp, commit);
            Files.move(tmp, ref, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new ModelFormatException(TAG + "cannot write " + dir.resolve("refs") + ": " + e.getMessage());
        }
    }

    // ----------------------------------------------------------------------------------------------
    // HTTP

    private HttpRequest.Builder request(URI uri) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofMinutes(2)).header("User-Agent", "ane4j (huggingface_hub cache layout)");
        if (token != null && sameHost(uri, URI.create(endpoint))) b.header("Authorization", "Bearer " + token);
        return b;
    }

    private static boolean sameHost(URI a, URI b) {
        return String.valueOf(a.getHost()).equalsIgnoreCase(String.valueOf(b.getHost())) && a.getPort() == b.getPort();
    }

    private Map<?, ?> apiInfo(String repo, String revision) {
        URI uri = URI.create(endpoint + "/api/models/" + repo + "/revision/" + enc(revision));
        HttpResponse<String> r;
        try {
            r = http.send(request(uri).GET().build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new ModelFormatException(TAG + "cannot reach " + endpoint + " for " + repo + " (" + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage())
                    + "); check the network or HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to use the cache");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ModelFormatException(TAG + "interrupted while asking " + endpoint + " for " + repo);
        }
        check(r.statusCode(), r.headers(), repo, null);
        try {
            if (Json.parse(r.body()) instanceof Map<?, ?> m) return m;
        } catch (IllegalArgumentException e) {
            // falls through
        }
        throw new ModelFormatException(TAG + repo + ": the hub's answer is not a JSON object; is HF_ENDPOINT (" + endpoint + ") a Hugging Face hub?");
    }

    // the hub's error answers (huggingface_hub utils/_http.py hf_raise_for_status: X-Error-Code), as one line each
    private void check(int status, java.net.http.HttpHeaders h, String repo, String file) {
        if (status < 400) return;
        String code = h.firstValue("X-Error-Code").orElse(""), msg = h.firstValue("X-Error-Message").orElse("");
        String what = file == null ? repo : repo + "/" + file;
        if (code.equals("GatedRepo") || (status == 403 && msg.toLowerCase(Locale.ROOT).contains("gated")))
            throw new ModelFormatException(TAG + repo + " is gated: accept its conditions on " + endpoint + "/" + repo + " and give a token (HF_TOKEN, or huggingface-cli login)"
                    + (token == null ? "; no token is set" : "; the token given has no access"));
        if (code.equals("RepoNotFound") || code.equals("RepositoryNotFound") || (status == 401 && file == null))
            throw new ModelFormatException(TAG + repo + ": no such model repository on " + endpoint + (token == null ? " (if it is private, set HF_TOKEN)" : " (or the token cannot see it)")
                    + ", and no local file or folder of that name");
        if (code.equals("RevisionNotFound")) throw new ModelFormatException(TAG + repo + ": no such revision; " + msg);
        if (code.equals("EntryNotFound") || status == 404) throw new ModelFormatException(TAG + what + ": not found on " + endpoint);
        if (status == 401 || status == 403) throw new ModelFormatException(TAG + what + ": access refused (HTTP " + status + "); set HF_TOKEN to a token that can read it");
        if (status == 429) throw new ModelFormatException(TAG + what + ": the hub is rate-limiting requests (HTTP 429); wait and retry, or set HF_TOKEN");
        throw new ModelFormatException(TAG + what + ": HTTP " + status + " from " + endpoint + (msg.isEmpty() ? "" : " (" + msg + ")"));
    }

    private static String enc(String s) { return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20"); }

    private static String encPath(String file) {
        StringBuilder b = new StringBuilder();
        for (String part : file.split("/")) b.append(b.isEmpty() ? "" : "/").append(enc(part));
        return b.toString();
    }

    // ----------------------------------------------------------------------------------------------
    // one file

    /** What HEAD says about a file: its ETag (normalized), size, commit, and where to download it. */
    record Meta(String etag, long size, String commit, URI location) {}

    Meta head(String repo, String commit, String file) {
        URI uri = URI.create(endpoint + "/" + repo + "/resolve/" + commit + "/" + encPath(file));
        HttpResponse<Void> r;
        try {
            r = http.send(request(uri).method("HEAD", HttpRequest.BodyPublishers.noBody()).header("Accept-Encoding", "identity").build(), HttpResponse.BodyHandlers.discarding());
        } catch (IOException e) {
            throw new ModelFormatException(TAG + "cannot reach " + endpoint + " for " + repo + "/" + file + " (" + e.getClass().getSimpleName() + "); check the network, or set HF_HUB_OFFLINE=1");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ModelFormatException(TAG + "interrupted");
        }
        check(r.statusCode(), r.headers(), repo, file);
        var h = r.headers();
        String etag = h.firstValue("X-Linked-Etag").or(() -> h.firstValue("ETag")).orElse(null);
        String size = h.firstValue("X-Linked-Size").or(() -> h.firstValue("Content-Length")).orElse(null);
        if (etag == null || size == null)
            throw new ModelFormatException(TAG + repo + "/" + file + ": the hub gave no ETag or size; is HF_ENDPOINT (" + endpoint + ") a Hugging Face hub?");
        etag = etag.replaceFirst("^W/", "").replace("\"", "");
        if (etag.isEmpty() || etag.contains("/") || etag.contains("\\") || etag.startsWith("."))
            throw new ModelFormatException(TAG + repo + "/" + file + ": ETag '" + etag + "' cannot name a blob");
        URI location = uri;
        if (r.statusCode() >= 300 && r.statusCode() < 400) {
            String loc = h.firstValue("Location").orElseThrow(() -> new ModelFormatException(TAG + repo + "/" + file + ": a redirect without a Location"));
            location = uri.resolve(loc);
        }
        long n;
        try {
            n = Long.parseLong(size.strip());
        } catch (NumberFormatException e) {
            throw new ModelFormatException(TAG + repo + "/" + file + ": size '" + size + "' is not a number");
        }
        return new Meta(etag, n, h.firstValue("X-Repo-Commit").orElse(commit), location);
    }

    /** Puts {@code file} of {@code repo} at {@code commit} into the cache and links it from {@code snap}. */
    void fetch(String repo, String commit, String file, Path snap) {
        Path pointer = snap.resolve(file).normalize();
        if (!pointer.startsWith(snap)) throw new ModelFormatException(TAG + repo + ": file name '" + file + "' leaves the snapshot folder");
        Meta m = head(repo, commit, file);
        Path blobs = repoFolder(repo).resolve("blobs"), blob = blobs.resolve(m.etag());
        try {
            Files.createDirectories(blobs);
            if (!(Files.isRegularFile(blob) && Files.size(blob) == m.size())) download(repo, file, m, blob);
            Files.createDirectories(pointer.getParent());
            if (Files.exists(pointer, LinkOption.NOFOLLOW_LINKS) || Files.isSymbolicLink(pointer)) {
                if (Files.isRegularFile(pointer) && Files.size(pointer) == m.size() && blob.toRealPath().equals(pointer.toRealPath())) return;
                Files.delete(pointer);
            }
            Path target = pointer.getParent().relativize(blob);
            try {
                Files.createSymbolicLink(pointer, target);
            } catch (UnsupportedOperationException | IOException e) {
                Files.copy(blob, pointer); // no symlinks (huggingface_hub copies then too)
            }
        } catch (IOException e) {
            throw new ModelFormatException(TAG + "cannot write the cache " + cache + ": " + e.getMessage());
        }
    }

    private void download(String repo, String file, Meta m, Path blob) throws IOException {
        Path part = blob.resolveSibling(blob.getFileName() + ".incomplete");
        IOException last = null;
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            long have = Files.isRegularFile(part) ? Files.size(part) : 0;
            if (have > m.size()) { Files.delete(part); have = 0; }
            if (have < m.size() || m.size() == 0) {
                try {
                    get(repo, file, m, part, have);
                } catch (IOException e) {
                    last = e;
                    if (progress != null) progress.printf(Locale.ROOT, "%s%s: connection lost at %s (%s); resuming%n", TAG, file, mb(Files.isRegularFile(part) ? Files.size(part) : 0), e.getClass().getSimpleName());
                    continue;
                }
            }
            long got = Files.size(part);
            if (got != m.size()) {
                if (got > m.size()) Files.delete(part);
                last = new IOException(got + " bytes of " + m.size());
                continue;
            }
            if (SHA256.matcher(m.etag()).matches()) {
                String sha = sha256(part);
                if (!sha.equals(m.etag())) {
                    Files.delete(part);
                    throw new ModelFormatException(TAG + repo + "/" + file + ": the downloaded bytes have SHA-256 " + sha + " but the hub says " + m.etag()
                            + "; the partial file is deleted, run again to download it anew");
                }
            }
            Files.move(part, blob, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return;
        }
        throw new ModelFormatException(TAG + repo + "/" + file + ": the download failed " + ATTEMPTS + " times (" + (last == null ? "?" : last.getMessage())
                + "); " + mb(Files.isRegularFile(part) ? Files.size(part) : 0) + " kept in " + part.getFileName() + ", run again to resume");
    }

    // one GET from `from` bytes on, appended to `part`; follows redirects (the Authorization header stays on the hub's host)
    private void get(String repo, String file, Meta m, Path part, long from) throws IOException {
        URI uri = m.location();
        for (int hop = 0; hop < 10; hop++) {
            HttpRequest.Builder b = request(uri).GET().header("Accept-Encoding", "identity");
            if (from > 0) b.header("Range", "bytes=" + from + "-");
            HttpResponse<InputStream> r;
            try {
                r = http.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted");
            }
            int s = r.statusCode();
            if (s >= 300 && s < 400 && r.headers().firstValue("Location").isPresent()) {
                r.body().close();
                uri = uri.resolve(r.headers().firstValue("Location").get());
                continue;
            }
            if (s == 416 && from == m.size()) { r.body().close(); return; }
            if (s >= 400) {
                r.body().close();
                check(s, r.headers(), repo, file);
            }
            boolean append = s == 206;
            if (append) {
                String range = r.headers().firstValue("Content-Range").orElse("");
                if (!range.startsWith("bytes " + from + "-")) { r.body().close(); throw new IOException("the server answered the range " + from + "- with '" + range + "'"); }
            }
            try (InputStream in = r.body();
                 OutputStream out = Files.newOutputStream(part, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                         append ? StandardOpenOption.APPEND : StandardOpenOption.TRUNCATE_EXISTING)) {
                long done = append ? from : 0, nextReport = done + Math.max(1, m.size() / 10);
                byte[] buf = new byte[1 << 16];
                for (int n; (n = in.read(buf)) > 0; ) {
                    out.write(buf, 0, n);
                    done += n;
                    if (done > m.size()) throw new IOException("more bytes than the " + m.size() + " announced");
                    if (progress != null && done >= nextReport && m.size() > 1 << 20) {
                        progress.printf(Locale.ROOT, "%s%s %s / %s (%d%%)%n", TAG, file, mb(done), mb(m.size()), 100 * done / m.size());
                        nextReport = done + m.size() / 10;
                    }
                }
            }
            return;
        }
        throw new IOException("too many redirects");
    }

    private static String sha256(Path f) throws IOException {
        try (InputStream in = Files.newInputStream(f)) {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) d.update(buf, 0, n);
            return HexFormat.of().formatHex(d.digest());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    private static String mb(long bytes) { return String.format(Locale.ROOT, "%.1f MB", bytes / 1e6); }
}
