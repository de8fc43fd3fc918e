package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsTest {
    @TempDir Path tmp;

    static final ModelConfig QWEN = ParameterLayoutTest.QWEN_SMALL;

    @Test
    void roundTripF32KeepsEveryBitAndTheConfig() {
        Parameters p = Parameters.init(QWEN, 5);
        Path f = tmp.resolve("m.safetensors");
        Safetensors.write(f, p, Safetensors.DType.F32);
        Parameters back = Safetensors.read(f);
        assertEquals(QWEN, back.config());
        assertArrayEquals(p.data(), back.data());
        Map<String, float[]> raw = Safetensors.readTensors(f);
        assertArrayEquals(p.get("layers.2.w1"), raw.get("model.layers.2.mlp.gate_proj.weight"));
        assertArrayEquals(p.get("layers.0.w3"), raw.get("model.layers.0.mlp.up_proj.weight"));
        assertArrayEquals(p.get("layers.1.w2"), raw.get("model.layers.1.mlp.down_proj.weight"));
        assertArrayEquals(p.get("layers.1.rmsFfn"), raw.get("model.layers.1.post_attention_layernorm.weight"));
        assertArrayEquals(p.get("wcls"), raw.get("lm_head.weight"));
        long dataStart = Safetensors.readHeader(f).dataStart();
        assertEquals(0, dataStart % 8, "data 8-byte aligned");
    }

    @Test
    void f16WriteRoundsToNearestHalf() {
        Parameters p = Parameters.init(QWEN, 5);
        Path f = tmp.resolve("h.safetensors");
        Safetensors.write(f, p, Safetensors.DType.F16);
        assertEquals(Safetensors.DType.F16, Safetensors.readHeader(f).entries().get("model.norm.weight").dtype());
        Parameters back = Safetensors.read(f);
        for (int i = 0; i < p.data().length; i += 97) assertEquals(Float.float16ToFloat(Float.floatToFloat16(p.data()[i])), back.data()[i]);
    }

    /** A safetensors file from a literal header and raw data bytes. */
    private Path raw(String name, String header, byte[] data) throws IOException {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h).put(data);
        return Files.write(tmp.resolve(name), b.array());
    }

    @Test
    void readsF16AndBf16() throws IOException {
        ByteBuffer d = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        d.putShort(Float.floatToFloat16(1.5f)).putShort(Float.floatToFloat16(-0.25f));
        d.putShort((short) (Float.floatToIntBits(3.0f) >>> 16)).putShort((short) (Float.floatToIntBits(-1e-3f) >>> 16));
        Path f = raw("d.safetensors", "{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                + "\"b\":{\"dtype\":\"BF16\",\"shape\":[1,2],\"data_offsets\":[4,8]}}", d.array());
        Map<String, float[]> t = Safetensors.readTensors(f);
        assertArrayEquals(new float[]{1.5f, -0.25f}, t.get("a"));
        assertEquals(3.0f, t.get("b")[0]);
        assertEquals(Float.intBitsToFloat(Float.floatToIntBits(-1e-3f) & 0xFFFF0000), t.get("b")[1]);
    }

    @Test
    void malformedFilesGiveTaggedErrors() throws IOException {
        Path bad = raw("bad.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],}", new byte[8]);
        var e = assertThrows(ModelFormatException.class, () -> Safetensors.readTensors(bad));
        assertTrue(e.getMessage().startsWith("[safetensors] bad.safetensors: malformed header: JSON: "), e.getMessage());

        Path range = raw("range.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", new byte[8]);
        e = assertThrows(ModelFormatException.class, () -> Safetensors.readTensors(range));
        assertTrue(e.getMessage().contains("tensor 'a': data_offsets [0, 16] out of range (data is 8 bytes"), e.getMessage());

        Path span = raw("span.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", new byte[8]);
        e = assertThrows(ModelFormatException.class, () -> Safetensors.readTensors(span));
        assertTrue(e.getMessage().contains("span 8 bytes but shape [3] of F32 needs 12"), e.getMessage());

        Path dt = raw("dt.safetensors", "{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", new byte[8]);
        e = assertThrows(ModelFormatException.class, () -> Safetensors.readTensors(dt));
        assertTrue(e.getMessage().contains("dtype I64 is not supported"), e.getMessage());

        ByteBuffer huge = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(1L << 40);
        Path h = Files.write(tmp.resolve("huge.safetensors"), huge.array());
        e = assertThrows(ModelFormatException.class, () -> Safetensors.readTensors(h));
        assertTrue(e.getMessage().contains("header length 1099511627776 does not fit"), e.getMessage());
    }

    @Test
    void missingTensorAndShapeMismatch() throws IOException {
        Parameters p = Parameters.init(QWEN, 5);
        Path f = tmp.resolve("m.safetensors");
        Safetensors.write(f, p, Safetensors.DType.F32);
        ModelConfig wider = new ModelConfig("q", 32, 64, 3, 4, 2, 16, 40, 16, 1e6f, RopeStyle.HALF, true, false, 1e-6f, 1f);
        var e = assertThrows(ModelFormatException.class, () -> Safetensors.read(f, wider));
        assertTrue(e.getMessage().contains("tensor 'model.layers.0.mlp.gate_proj.weight' has shape [48, 32], the config needs [64, 32]"), e.getMessage());
        ModelConfig deeper = new ModelConfig("q", 32, 48, 4, 4, 2, 16, 40, 16, 1e6f, RopeStyle.HALF, true, false, 1e-6f, 1f);
        e = assertThrows(ModelFormatException.class, () -> Safetensors.read(f, deeper));
        assertTrue(e.getMessage().contains("missing tensor 'model.layers.3.input_layernorm.weight'"), e.getMessage());
        ModelConfig fewer = new ModelConfig("q", 32, 48, 2, 4, 2, 16, 40, 16, 1e6f, RopeStyle.HALF, true, false, 1e-6f, 1f);
        e = assertThrows(ModelFormatException.class, () -> Safetensors.read(f, fewer));
        assertTrue(e.getMessage().contains("tensor 'model.layers.2.input_layernorm.weight' is not part of"), e.getMessage());
    }

    @Test
    void configFromShapesAndConfigJson() throws IOException {
        // rewrite our file without metadata: Qwen3 shapes alone determine the config (q_norm gives headDim)
        Parameters p = Parameters.init(QWEN, 5);
        Path f = tmp.resolve("m.safetensors");
        Safetensors.write(f, p, Safetensors.DType.F32);
        Path plain = stripMetadata(f, "plain.safetensors");
        Parameters back = Safetensors.read(plain);
        assertEquals(QWEN.withName("plain").withSeqLen(Safetensors.DEFAULT_SEQ_LEN), back.config());
        assertArrayEquals(p.data(), back.data());

        // a Llama-style file (no q_norm) needs the head count from config.json
        ModelConfig llama = new ModelConfig("l", 32, 48, 2, 4, 4, 8, 40, 16, 1e4f, RopeStyle.HALF, false, true, 1e-5f, 1f);
        Path dir = Files.createDirectories(tmp.resolve("llama"));
        Path lf = dir.resolve("model.safetensors");
        Safetensors.write(lf, Parameters.init(llama, 1), Safetensors.DType.F32);
        Path stripped = stripMetadata(lf, "model.safetensors.tmp");
        Files.move(stripped, lf, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        var e = assertThrows(ModelFormatException.class, () -> Safetensors.read(lf));
        assertTrue(e.getMessage().contains("cannot infer the number of heads") && e.getMessage().contains("config.json"), e.getMessage());
        Files.writeString(dir.resolve("config.json"), Safetensors.configJson(llama));
        ModelConfig c = Safetensors.read(lf).config();
        assertEquals(llama.withName("llama").withSeqLen(Safetensors.DEFAULT_SEQ_LEN), c);
        Files.writeString(dir.resolve("config.json"), "{\"num_attention_heads\": 4, \"hidden_size\": 64}");
        e = assertThrows(ModelFormatException.class, () -> Safetensors.read(lf));
        assertTrue(e.getMessage().contains("config hidden_size = 64 but the tensors say 32"), e.getMessage());
    }

    private Path stripMetadata(Path f, String name) throws IOException {
        var h = Safetensors.readHeader(f);
        StringBuilder json = new StringBuilder("{");
        for (var e : h.entries().values()) {
            if (json.length() > 1) json.append(',');
            json.append('"').append(e.name()).append("\":{\"dtype\":\"F32\",\"shape\":").append(java.util.Arrays.toString(e.shape()).replace(" ", ""))
                    .append(",\"data_offsets\":[").append(e.begin()).append(',').append(e.end()).append("]}");
        }
        json.append('}');
        byte[] all = Files.readAllBytes(f);
        return raw(name, json.toString(), java.util.Arrays.copyOfRange(all, (int) h.dataStart(), all.length));
    }

    /** A Llama/Qwen3-named file of F32 zeros (norms one) with these shapes per tensor; {@code qNorm} null for none. */
    static Path llamaFile(Path file, int dim, int hidden, int heads, int kv, int hd, int vocab, int[] qNorm, String metadata) throws IOException {
        Map<String, int[]> t = new java.util.LinkedHashMap<>();
        t.put("model.embed_tokens.weight", new int[] {vocab, dim});
        String p = "model.layers.0.";
        t.put(p + "input_layernorm.weight", new int[] {dim});
        t.put(p + "post_attention_layernorm.weight", new int[] {dim});
        t.put(p + "self_attn.q_proj.weight", new int[] {heads * hd, dim});
        t.put(p + "self_attn.k_proj.weight", new int[] {kv * hd, dim});
        t.put(p + "self_attn.v_proj.weight", new int[] {kv * hd, dim});
        t.put(p + "self_attn.o_proj.weight", new int[] {dim, heads * hd});
        if (qNorm != null) {
            t.put(p + "self_attn.q_norm.weight", qNorm);
            t.put(p + "self_attn.k_norm.weight", new int[] {hd});
        }
        t.put(p + "mlp.gate_proj.weight", new int[] {hidden, dim});
        t.put(p + "mlp.up_proj.weight", new int[] {hidden, dim});
        t.put(p + "mlp.down_proj.weight", new int[] {dim, hidden});
        t.put("model.norm.weight", new int[] {dim});
        StringBuilder h = new StringBuilder("{");
        if (metadata != null) h.append("\"__metadata__\":").append(metadata).append(',');
        long off = 0;
        for (var e : t.entrySet()) {
            long n = 4L * java.util.Arrays.stream(e.getValue()).asLongStream().reduce(1, (a, b) -> a * b);
            h.append('"').append(e.getKey()).append("\":{\"dtype\":\"F32\",\"shape\":").append(java.util.Arrays.toString(e.getValue()).replace(" ", ""))
                    .append(",\"data_offsets\":[").append(off).append(',').append(off + n).append("]},");
            off += n;
        }
        h.setLength(h.length() - 1);
        byte[] hb = h.append('}').toString().getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate((int) (8 + hb.length + off)).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(hb.length).put(hb);
        Files.createDirectories(file.getParent());
        return Files.write(file, b.array());
    }

    static String train(Path init, Path runDir) {
        var out = new java.io.ByteArrayOutputStream();
        var err = new java.io.ByteArrayOutputStream();
        int rc = ane4j.cli.Main.run(new String[] {"train", "--init", init.toString(), "--steps", "1", "--in-process", "--backend", "ref", "--run-dir", runDir.toString()},
                new java.io.PrintStream(out, true, StandardCharsets.UTF_8), new java.io.PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(1, rc, out.toString());
        return err.toString(StandardCharsets.UTF_8);
    }

    // issue 18 row 15: were "/ by zero", ArrayIndexOutOfBounds, and AIOOBE after 5.6 GB; now one line before any allocation
    @Test
    void badConfigsAndShapesAreRefusedBeforeAllocationThroughTheCli() throws IOException {
        Path heads = llamaFile(tmp.resolve("heads/model.safetensors"), 8, 16, 2, 2, 4, 512, null, null);
        Files.writeString(heads.resolveSibling("config.json"), "{\"num_attention_heads\": 16, \"hidden_size\": 8}");
        assertEquals("ane4j train: [safetensors] model.safetensors: num_attention_heads 16 does not divide hidden_size 8, so head_dim is unknown; "
                + "set head_dim in config.json or fix num_attention_heads\n", train(heads, tmp.resolve("r1")));

        Path qn = llamaFile(tmp.resolve("qn/model.safetensors"), 8, 16, 2, 2, 4, 512, new int[0], null);
        assertEquals("ane4j train: [safetensors] model.safetensors: tensor 'model.layers.0.self_attn.q_norm.weight' has shape [], a vector [head_dim] expected; "
                + "the file is corrupt\n", train(qn, tmp.resolve("r2")));

        Path seq = llamaFile(tmp.resolve("seq/model.safetensors"), 8, 16, 2, 2, 4, 512, null, "{\"ane4j_seq_len\":\"100000\",\"head_dim\":\"4\"}");
        long t0 = System.nanoTime();
        assertTrue(train(seq, tmp.resolve("r3")).contains("[config] seq: seqLen 100000 with 2 heads makes attention scores [1, 2, 100000, 100000] of 20000000000 elements, "
                + "over 2^31-1; use seqLen ≤ 32767"));
        assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "refused before any work");

        // a config that asks for more than the file holds is refused by shape before the parameters are allocated
        Path small = llamaFile(tmp.resolve("small/model.safetensors"), 8, 16, 2, 2, 4, 512, null, "{\"head_dim\":\"4\"}");
        ModelConfig huge = new ModelConfig("huge", 8, 1 << 26, 1, 2, 2, 4, 512, 16, 1e4f, RopeStyle.HALF, false, true, 1e-5f, 1f);
        var e = assertThrows(ModelFormatException.class, () -> Safetensors.read(small, huge));
        assertTrue(e.getMessage().contains("tensor 'model.layers.0.mlp.gate_proj.weight' has shape [16, 8], the config needs [67108864, 8]"), e.getMessage());
    }

    // issue 18 row 17: overlapping or holed data_offsets are refused (the format spec: "entirely indexed, … cannot contain holes")
    @Test
    void overlappingAndHoledOffsetsAreRefused() throws IOException {
        String two = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[%d,%d]}}";
        Path overlap = raw("o.safetensors", String.format(two, 4, 12), new byte[12]);
        var e = assertThrows(ModelFormatException.class, () -> Safetensors.readHeader(overlap));
        assertEquals("[safetensors] o.safetensors: tensor 'b' data_offsets [4, 12] overlap tensor 'a' (ends at 8); the file is corrupt, re-export it", e.getMessage());
        Path same = raw("s.safetensors", String.format(two, 0, 8), new byte[8]);
        e = assertThrows(ModelFormatException.class, () -> Safetensors.readHeader(same));
        assertTrue(e.getMessage().contains("overlap tensor 'a'"), e.getMessage());
        Path hole = raw("h.safetensors", String.format(two, 12, 20), new byte[20]);
        e = assertThrows(ModelFormatException.class, () -> Safetensors.readHeader(hole));
        assertEquals("[safetensors] h.safetensors: bytes [8, 12) of the data belong to no tensor (a hole before 'b' in data_offsets); the file is corrupt, re-export it", e.getMessage());
        Path tail = raw("t.safetensors", String.format(two, 8, 16), new byte[20]);
        e = assertThrows(ModelFormatException.class, () -> Safetensors.readHeader(tail));
        assertTrue(e.getMessage().contains("the tensors end at data byte 16 but the file has 20 data bytes after 'b'"), e.getMessage());
        assertEquals(2, Safetensors.readHeader(raw("ok.safetensors", String.format(two, 8, 16), new byte[16])).entries().size());
    }
}
