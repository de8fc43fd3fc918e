package ane4j.train;

import ane4j.run.TrainOptions;
import ane4j.run.RunFolder;
import ane4j.model.Json;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterView;
import ane4j.model.RopeStyle;
import ane4j.model.Safetensors;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * LoRA adapters as Hugging Face PEFT saves them ({@code PeftModel.save_pretrained}, huggingface/peft
 * docs/source/developer_guides/checkpoint.md): a folder with
 * <ul>
 *   <li>{@code adapter_model.safetensors}: F32 tensors {@code base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight}
 *       (r, in) and {@code ….lora_B.weight} (out, r) — PeftModel → LoraModel → LlamaForCausalLM/Qwen3ForCausalLM
 *       prefixes, the adapter name ("default") stripped; q,k,v,o → self_attn.{q,k,v,o}_proj, w1 → mlp.gate_proj,
 *       w2 → mlp.down_proj, w3 → mlp.up_proj, as transformers names the Llama/Qwen3 modules;</li>
 *   <li>{@code adapter_config.json}: LoraConfig's keys ({@code peft_type LORA}, {@code r}, {@code lora_alpha},
 *       {@code target_modules}, {@code task_type CAUSAL_LM}, …).</li>
 * </ul>
 * Models with llama2.c's interleaved RoPE are exported to Hugging Face with their q/k rows permuted to rotate-half
 * ({@code Safetensors.write}, RopePermutation); B of q and k gets the same row permutation (W + s·B·A permuted is
 * P·W + s·(P·B)·A), A is unchanged.
 */
public final class PeftAdapter {
    public static final String WEIGHTS = "adapter_model.safetensors", CONFIG = "adapter_config.json";
    private static final String TAG = "[lora] ";

    private PeftAdapter() {}

    /** transformers' module name of a target. */
    static String module(String target) {
        return switch (target) {
            case "q" -> "self_attn.q_proj"; case "k" -> "self_attn.k_proj"; case "v" -> "self_attn.v_proj"; case "o" -> "self_attn.o_proj";
            case "w1" -> "mlp.gate_proj"; case "w2" -> "mlp.down_proj"; case "w3" -> "mlp.up_proj";
            default -> throw new IllegalArgumentException(TAG + "no target " + target);
        };
    }

    /** The tensor name PEFT writes for A (or B) of one adapted module. */
    public static String tensorName(int layer, String target, boolean a) {
        return "base_model.model.model.layers." + layer + "." + module(target) + ".lora_" + (a ? "A" : "B") + ".weight";
    }

    /** Writes {@code dir/adapter_model.safetensors} and {@code dir/adapter_config.json} (each atomically); returns dir. */
    public static Path write(Path dir, LoraAdapters ad, String baseModel) {
        ModelConfig c = ad.config();
        Map<String, float[]> tensors = new LinkedHashMap<>();
        Map<String, int[]> shapes = new LinkedHashMap<>();
        for (int l = 0; l < c.nLayers(); l++)
            for (String t : ad.targets()) {
                ParameterView a = ad.a(l, t), b = ad.b(l, t);
                tensors.put(tensorName(l, t, true), java.util.Arrays.copyOfRange(ad.data(), a.offset(), a.end()));
                shapes.put(tensorName(l, t, true), a.shape());
                float[] bRows = java.util.Arrays.copyOfRange(ad.data(), b.offset(), b.end());
                if (permuted(c, t)) bRows = permuteRows(bRows, t.equals("q") ? c.nHeads() : c.nKvHeads(), c.headDim(), ad.rank(), true);
                tensors.put(tensorName(l, t, false), bRows);
                shapes.put(tensorName(l, t, false), b.shape());
            }
        try {
            Files.createDirectories(dir);
            writeSafetensors(dir.resolve(WEIGHTS), tensors, shapes);
            Path tmp = dir.resolve(CONFIG + ".tmp");
            Files.writeString(tmp, configJson(ad, baseModel));
            Files.move(tmp, dir.resolve(CONFIG), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(TAG + "cannot write the adapter to " + dir + ": " + RunFolder.reason(e), e);
        }
    }

    /**
     * adapter_config.json with LoraConfig's keys, as PEFT's {@code PeftConfigMixin.save_pretrained} writes them
     * ({@code json.dumps(output_dict, indent=2, sort_keys=True)}: sorted keys, two-space indent, one list item per line,
     * no newline at the end).
     */
    static String configJson(LoraAdapters ad, String baseModel) {
        List<String> modules = new ArrayList<>();
        for (String t : ad.targets()) modules.add(module(t).substring(module(t).indexOf('.') + 1));
        Map<String, Object> m = new java.util.TreeMap<>();
        m.put("alpha_pattern", Map.of());
        m.put("base_model_name_or_path", baseModel);
        m.put("bias", "none");
        m.put("fan_in_fan_out", false);
        m.put("inference_mode", true);
        m.put("init_lora_weights", true);
        m.put("layers_pattern", null);
        m.put("layers_to_transform", null);
        m.put("lora_alpha", number(ad.alpha()));
        m.put("lora_dropout", Double.parseDouble(Float.toString(ad.dropout().p())));   // PEFT's float: 0.0, 0.05, 0.1
        m.put("modules_to_save", null);
        m.put("peft_type", "LORA");
        m.put("r", ad.rank());
        m.put("rank_pattern", Map.of());
        m.put("revision", null);
        m.put("target_modules", modules);
        m.put("task_type", "CAUSAL_LM");
        m.put("use_dora", false);
        m.put("use_rslora", false);
        String json = Json.pretty(m);
        return json.substring(0, json.length() - 1);   // PEFT writes json.dumps(...) with no newline after it
    }

    /** An integral alpha as an integer (PEFT's default type), else the float's shortest decimal. */
    private static Number number(float f) { return f == Math.rint(f) ? (Number) (long) f : (Number) Double.parseDouble(Float.toString(f)); }

    /**
     * Reads a PEFT LoRA folder for a base model of config {@code c}. Settings ane4j does not compute (DoRA, rsLoRA,
     * per-module ranks, fan_in_fan_out, biases, modules_to_save) are refused in one line naming the key.
     */
    public static LoraAdapters read(Path dir, ModelConfig c) {
        Path cfg = dir.resolve(CONFIG), st = dir.resolve(WEIGHTS);
        if (!Files.isRegularFile(cfg) || !Files.isRegularFile(st))
            throw new IllegalArgumentException(TAG + dir + " is not a PEFT adapter folder (it needs " + CONFIG + " and " + WEIGHTS + ", as PeftModel.save_pretrained writes them)");
        Map<?, ?> j;
        try {
            j = (Map<?, ?>) Json.parse(Files.readString(cfg));
        } catch (IOException e) {
            throw new UncheckedIOException(TAG + "cannot read " + cfg + ": " + RunFolder.reason(e), e);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(TAG + cfg + " is not a JSON object: " + e.getMessage(), e);
        }
        if (!"LORA".equals(j.get("peft_type"))) throw new IllegalArgumentException(TAG + cfg + ": peft_type " + j.get("peft_type") + ", only LORA adapters are read");
        for (String k : List.of("use_dora", "use_rslora", "fan_in_fan_out"))
            if (Boolean.TRUE.equals(j.get(k))) throw new IllegalArgumentException(TAG + cfg + ": " + k + " = true is not supported; export the adapter without it");
        for (String k : List.of("rank_pattern", "alpha_pattern"))
            if (j.get(k) instanceof Map<?, ?> p && !p.isEmpty()) throw new IllegalArgumentException(TAG + cfg + ": " + k + " (per-module ranks or alphas) is not supported");
        if (j.get("layers_to_transform") instanceof List<?>) throw new IllegalArgumentException(TAG + cfg + ": layers_to_transform is not supported (every layer must be adapted)");
        if (j.get("bias") != null && !"none".equals(j.get("bias"))) throw new IllegalArgumentException(TAG + cfg + ": bias = " + j.get("bias") + " is not supported (Llama/Qwen3 projections have no bias)");
        if (j.get("modules_to_save") instanceof List<?> l && !l.isEmpty()) throw new IllegalArgumentException(TAG + cfg + ": modules_to_save " + l + " is not supported");
        if (!(j.get("r") instanceof Number r) || !(j.get("lora_alpha") instanceof Number alpha))
            throw new IllegalArgumentException(TAG + cfg + ": r and lora_alpha must be numbers");
        List<String> targets = new ArrayList<>();
        Object tm = j.get("target_modules");
        List<?> given = tm instanceof List<?> l ? l : tm instanceof String s ? List.of(s) : List.of();
        for (Object o : given) {
            String name = o.toString(), found = null;
            for (String t : TrainOptions.LORA_TARGETS) if (name.equals(module(t).substring(module(t).indexOf('.') + 1)) || name.endsWith("." + module(t))) found = t;
            if (found == null) throw new IllegalArgumentException(TAG + cfg + ": target module '" + name + "' is not one of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
            if (!targets.contains(found)) targets.add(found);
        }
        LoraAdapters ad = new LoraAdapters(c, r.intValue(), alpha.floatValue(), targets);
        Map<String, float[]> tensors = Safetensors.readTensors(st);
        Map<String, Safetensors.Entry> entries = Safetensors.readHeader(st).entries();
        for (int l = 0; l < c.nLayers(); l++)
            for (String t : ad.targets()) {
                for (boolean a : new boolean[] {true, false}) {
                    String name = tensorName(l, t, a);
                    ParameterView v = a ? ad.a(l, t) : ad.b(l, t);
                    Safetensors.Entry e = entries.get(name);
                    if (e == null) e = entries.get(name.replace(".weight", ".default.weight"));
                    if (e == null) throw new IllegalArgumentException(TAG + st + " has no tensor " + name + " (r " + ad.rank() + ", targets " + given + ")");
                    if (!java.util.Arrays.equals(e.shape(), v.shape()))
                        throw new IllegalArgumentException(TAG + st + ": " + name + " has shape " + java.util.Arrays.toString(e.shape()) + ", model " + c.name() + " needs " + java.util.Arrays.toString(v.shape()));
                    float[] x = tensors.get(e.name());
                    if (!a && permuted(c, t)) x = permuteRows(x, t.equals("q") ? c.nHeads() : c.nKvHeads(), c.headDim(), ad.rank(), false);
                    System.arraycopy(x, 0, ad.data(), v.offset(), v.size());
                }
            }
        return ad;
    }

    /** B of q and k is laid out per head in RoPE pairs, which differ between ane4j's interleaved models and Hugging Face. */
    private static boolean permuted(ModelConfig c, String target) {
        return c.ropeStyle() == RopeStyle.INTERLEAVED && (target.equals("q") || target.equals("k"));
    }

    /** Within each head, interleaved row 2i+p ↔ rotate-half row p·hd/2 + i (RopePermutation's rule); rows of `cols` floats. */
    private static float[] permuteRows(float[] src, int heads, int hd, int cols, boolean toHalf) {
        float[] dst = new float[src.length];
        int half = hd / 2;
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < half; i++)
                for (int p = 0; p < 2; p++) {
                    int interleaved = h * hd + 2 * i + p, rotateHalf = h * hd + p * half + i;
                    int from = toHalf ? interleaved : rotateHalf, to = toHalf ? rotateHalf : interleaved;
                    System.arraycopy(src, from * cols, dst, to * cols, cols);
                }
        return dst;
    }

    /** safetensors: u64 LE header length, JSON header (F32 entries in order, padded with spaces to 8 bytes), LE data. */
    private static void writeSafetensors(Path file, Map<String, float[]> tensors, Map<String, int[]> shapes) throws IOException {
        StringBuilder h = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        long off = 0;
        for (var e : tensors.entrySet()) {
            int[] s = shapes.get(e.getKey());
            long bytes = 4L * e.getValue().length;
            h.append(',').append(Json.quote(e.getKey())).append(":{\"dtype\":\"F32\",\"shape\":[").append(s[0]).append(',').append(s[1])
                    .append("],\"data_offsets\":[").append(off).append(',').append(off + bytes).append("]}");
            off += bytes;
        }
        h.append('}');
        while (h.length() % 8 != 0) h.append(' ');
        byte[] hb = h.toString().getBytes(StandardCharsets.UTF_8);
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            write(ch, ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(hb.length).flip());
            write(ch, ByteBuffer.wrap(hb));
            for (float[] t : tensors.values()) {
                ByteBuffer b = ByteBuffer.allocate(4 * t.length).order(ByteOrder.LITTLE_ENDIAN);
                b.asFloatBuffer().put(t);
                write(ch, b);
            }
            ch.force(true);
        }
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private static void write(FileChannel ch, ByteBuffer b) throws IOException { while (b.hasRemaining()) ch.write(b); }
}
