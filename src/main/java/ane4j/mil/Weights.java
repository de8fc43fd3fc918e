package ane4j.mil;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The weight files of a program, keyed by their BLOBFILE path ({@code @model_path/weights/wq.bin}); each holds MILBlob v2
 * blobs. Built by the fluent builder as constants are added, or read from a directory for a parsed program.
 */
public final class Weights {
    public static final String MODEL_PATH = "@model_path/";

    /** One weight file: blobs in file order. */
    public record File(String path, List<MilBlob.Entry> blobs) {
        public File { blobs = List.copyOf(blobs); }

        /** The encoded file (MILBlob v2). */
        public byte[] bytes() {
            return MilBlob.write(blobs.stream().map(MilBlob.Entry::dtype).toList(), blobs.stream().map(MilBlob.Entry::data).toList());
        }

        /** {@code weights/wq.bin}: where the file goes relative to the model directory. */
        public String relativePath() { return path.startsWith(MODEL_PATH) ? path.substring(MODEL_PATH.length()) : path; }
    }

    private final Map<String, File> files;

    public Weights(Map<String, File> files) { this.files = Collections.unmodifiableMap(new LinkedHashMap<>(files)); }

    public static Weights empty() { return new Weights(Map.of()); }

    public Map<String, File> files() { return files; }

    public boolean isEmpty() { return files.isEmpty(); }

    /** path → encoded file bytes, as the ANE's weights dictionary wants them. */
    public Map<String, byte[]> encoded() {
        Map<String, byte[]> m = new LinkedHashMap<>();
        files.forEach((k, v) -> m.put(k, v.bytes()));
        return m;
    }

    /** The blob a BLOBFILE literal points at. */
    public MilBlob.Entry resolve(Literal.BlobRef ref) {
        File f = files.get(ref.path());
        if (f == null) throw new MilException("[blob] weight file '" + ref.path() + "' is not available (files: " + files.keySet() + "); pass the weights directory");
        for (MilBlob.Entry e : f.blobs()) if (e.metadataOffset() == ref.offset()) return e;
        throw new MilException("[blob] " + ref.path() + " has no blob at offset " + ref.offset() + " (blobs at " + f.blobs().stream().map(MilBlob.Entry::metadataOffset).toList() + ")");
    }

    /** Decodes a blob's elements as floats (fp16/fp32) — for the interpreter and tests. */
    public static float[] floats(MilBlob.Entry e) {
        ByteBuffer b = ByteBuffer.wrap(e.data()).order(ByteOrder.LITTLE_ENDIAN);
        float[] out = new float[(int) e.count()];
        switch (e.dtype()) {
            case FP16 -> { for (int i = 0; i < out.length; i++) out[i] = Fp16.toFloat(b.getShort(2 * i)); }
            case FP32 -> { for (int i = 0; i < out.length; i++) out[i] = b.getFloat(4 * i); }
            case INT8 -> { for (int i = 0; i < out.length; i++) out[i] = e.data()[i]; }
            case UINT8 -> { for (int i = 0; i < out.length; i++) out[i] = e.data()[i] & 0xFF; }
            case INT16 -> { for (int i = 0; i < out.length; i++) out[i] = b.getShort(2 * i); }
            case INT32 -> { for (int i = 0; i < out.length; i++) out[i] = b.getInt(4 * i); }
            default -> throw new MilException("[blob] cannot decode " + e.dtype());
        }
        return out;
    }

    /**
     * Reads the blobs these BLOBFILE literals name from {@code modelDir} ({@code @model_path/} = modelDir). Each file is
     * mapped, not read whole, and only the declared blobs are copied out ({@link MilBlob#readDeclared}; sloppy header
     * fields go to {@code warn}). Paths are resolved through symlinks before the containment check.
     */
    public static Weights read(Path modelDir, List<Literal> blobLiterals, java.util.function.Consumer<String> warn) {
        Map<String, List<MilBlob.Declared>> byPath = new LinkedHashMap<>();
        for (Literal l : blobLiterals)
            byPath.computeIfAbsent(l.blobRef().path(), k -> new ArrayList<>()).add(new MilBlob.Declared(l.blobRef().offset(), l.dtype(), l.type().byteSize()));
        long declared = byPath.values().stream().flatMap(List::stream).mapToLong(MilBlob.Declared::byteSize).sum();
        long free = Runtime.getRuntime().maxMemory() - (Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory());
        if (declared > free)
            throw new MilException("[blob] the program's BLOBFILE constants declare " + declared + " bytes but the JVM has " + (free >> 20)
                    + " MB free; raise -Xmx (ANE4J_JAVA_OPTS) or use smaller constants");
        Map<String, File> m = new LinkedHashMap<>();
        for (var e : byPath.entrySet()) {
            String p = e.getKey();
            Path file = contained(modelDir, p);
            String special = RegularFiles.notRegular(file);
            if (special != null) throw new MilException("[blob] " + special);
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.READ);
                 java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                long size = ch.size();
                java.lang.foreign.MemorySegment seg = size == 0 ? java.lang.foreign.MemorySegment.ofArray(new byte[0])
                        : ch.map(java.nio.channels.FileChannel.MapMode.READ_ONLY, 0, size, arena);
                Map<Long, MilBlob.Entry> blobs = MilBlob.readDeclared(seg, file.toString(), e.getValue(), warn);
                List<MilBlob.Entry> inFileOrder = new ArrayList<>(blobs.values());
                inFileOrder.sort(java.util.Comparator.comparingLong(MilBlob.Entry::metadataOffset));
                m.put(p, new File(p, inFileOrder));
            } catch (NoSuchFileException ex) {
                throw new MilException("[blob] weight file " + file + " not found (BLOBFILE path '" + p + "'); pass the directory that holds weights/");
            } catch (IOException ex) {
                throw new MilException("[blob] cannot read " + file + ": " + ex.getMessage(), ex);
            }
        }
        return new Weights(m);
    }

    private static String relative(String p) { return p.startsWith(MODEL_PATH) ? p.substring(MODEL_PATH.length()) : p; }

    /** {@code modelDir/rel} with symlinks resolved, refused when it leaves the (real) model directory. */
    static Path contained(Path modelDir, String blobPath) {
        Path file = modelDir.resolve(relative(blobPath)).normalize();
        if (!file.startsWith(modelDir.normalize())) throw new MilException("[blob] weight path '" + blobPath + "' leaves the model directory; keep weights under " + modelDir);
        Path realDir, real;
        try {
            realDir = modelDir.toRealPath();
        } catch (IOException e) {
            throw new MilException("[blob] model directory " + modelDir + " cannot be read (" + e.getClass().getSimpleName() + "); pass the directory that holds weights/");
        }
        try {
            real = file.toRealPath();
        } catch (NoSuchFileException e) {
            return file; // reported as "not found" by the caller
        } catch (IOException e) {
            throw new MilException("[blob] cannot read " + file + ": " + e.getMessage(), e);
        }
        if (!real.startsWith(realDir))
            throw new MilException("[blob] weight file " + file + " resolves to " + real + ", outside the model directory " + realDir
                    + " (a symlink?); copy the file into the model directory");
        return real;
    }

    /** Writes every file under {@code modelDir} at its relative path. */
    public void writeTo(Path modelDir) throws IOException {
        for (File f : files.values()) {
            Path out = modelDir.resolve(f.relativePath());
            Files.createDirectories(out.getParent());
            Files.write(out, f.bytes());
        }
    }

    /** Accumulates blobs into files while a program is built. */
    static final class Builder {
        private final Map<String, List<MilBlob.Entry>> files = new LinkedHashMap<>();

        /** Appends a blob to the file at {@code path}; returns the BLOBFILE offset (its metadata offset). */
        long add(String path, DType dtype, byte[] data) {
            // macOS's default APFS volume is case-insensitive: there, and in the framework's copy of weights/, one of two
            // such files would silently replace the other
            for (String other : files.keySet())
                if (!other.equals(path) && other.equalsIgnoreCase(path))
                    throw new MilException("[blob] weight files " + other + " and " + path + " differ only in case, and a case-insensitive disk "
                            + "(macOS's default) keeps one of them; rename one of the two values");
            List<MilBlob.Entry> blobs = files.computeIfAbsent(path, k -> new ArrayList<>());
            long[] sizes = new long[blobs.size() + 1];
            for (int i = 0; i < blobs.size(); i++) sizes[i] = blobs.get(i).data().length;
            sizes[blobs.size()] = data.length;
            long offset = MilBlob.offsets(sizes)[blobs.size()];
            blobs.add(new MilBlob.Entry(dtype, data, offset));
            return offset;
        }

        Weights build() {
            Map<String, File> m = new LinkedHashMap<>();
            files.forEach((k, v) -> m.put(k, new File(k, v)));
            return new Weights(m);
        }
    }

    @Override public boolean equals(Object o) {
        if (!(o instanceof Weights w) || !w.files.keySet().equals(files.keySet())) return false;
        for (String k : files.keySet()) {
            List<MilBlob.Entry> a = files.get(k).blobs(), b = w.files.get(k).blobs();
            if (a.size() != b.size()) return false;
            for (int i = 0; i < a.size(); i++)
                if (a.get(i).dtype() != b.get(i).dtype() || a.get(i).metadataOffset() != b.get(i).metadataOffset()
                        || !java.util.Arrays.equals(a.get(i).data(), b.get(i).data())) return false;
        }
        return true;
    }

    @Override public int hashCode() { return files.keySet().hashCode(); }
}
