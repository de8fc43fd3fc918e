package ane4j.model;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A Hugging Face model folder: {@code model.safetensors} (tensor names as {@link Safetensors}, rotate-half RoPE) and a
 * {@code config.json} with the keys {@code transformers}' {@code LlamaConfig} / {@code Qwen3Config} take in their
 * constructors (configuration_llama.py, configuration_qwen3.py; the key set of Qwen's released Qwen3 config.json).
 * A model with QK-norm is a {@code Qwen3ForCausalLM}, one without a {@code LlamaForCausalLM}.
 *
 * <p>The {@code ane4j_*} keys (training seqLen, name, residual scale) are extra attributes {@code transformers} keeps
 * and ignores; {@link Safetensors#read} uses them, so reading the folder back gives the exported config exactly.
 */
public final class HfExport {
    private HfExport() {}

    private static final String TAG = "[export] ";

    /** Writes {@code dir/model.safetensors} and {@code dir/config.json}; returns the safetensors file. */
    public static Path write(Path dir, Parameters params, Safetensors.DType dtype) {
        ModelConfig c = params.config();
        if (c.residualScale() != 1f)
            throw new IllegalArgumentException(TAG + c.name() + " has residualScale " + c.residualScale()
                    + ", which Llama and Qwen3 in transformers do not compute (they add the blocks unscaled); only models trained with residualScale 1 export");
        try {
            Files.createDirectories(dir);
            Path st = dir.resolve("model.safetensors");
            Safetensors.write(st, params, dtype);
            Path tmp = dir.resolve("config.json.tmp");
            Files.writeString(tmp, configJson(c, dtype));
            Files.move(tmp, dir.resolve("config.json"), java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            return st;
        } catch (IOException e) {
            throw new UncheckedIOException(TAG + "cannot write " + dir + ": " + LeFiles.reason(e), e);
        }
    }

    /** The config.json of {@link #write}. */
    public static String configJson(ModelConfig c, Safetensors.DType dtype) {
        boolean qwen = c.qkNorm();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("architectures", java.util.List.of(qwen ? "Qwen3ForCausalLM" : "LlamaForCausalLM"));
        m.put("model_type", qwen ? "qwen3" : "llama");
        m.putAll(Safetensors.configKeys(c));   // the keys the reader takes back, from one place
        m.put("hidden_act", "silu");
        m.put("max_position_embeddings", c.seqLen());
        m.put("initializer_range", 0.02);
        m.put("use_cache", true);
        m.putIfAbsent("rope_scaling", null);   // configKeys gave it when the model has one
        m.put("attention_bias", false);
        m.put("attention_dropout", 0.0);
        if (qwen) {
            m.put("use_sliding_window", false);
            m.put("sliding_window", null);
            m.put("max_window_layers", c.nLayers());
        } else {
            m.put("mlp_bias", false);
            m.put("pretraining_tp", 1);
        }
        // llama2.c's tokenizer ids (Tokenizer.BOS, EOS)
        m.put("bos_token_id", Tokenizer.BOS);
        m.put("eos_token_id", Tokenizer.EOS);
        m.put("torch_dtype", switch (dtype) { case F32 -> "float32"; case F16 -> "float16"; case BF16 -> "bfloat16"; });
        m.put("ane4j_name", c.name());
        m.put("ane4j_seq_len", c.seqLen());
        m.put("ane4j_residual_scale", c.residualScale());
        return Json.pretty(m);
    }
}
