package ane4j.infer;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.blas.MatVec;
import ane4j.chip.Chip;
import ane4j.chip.ChipRules;
import ane4j.chip.Violation;
import ane4j.mil.DType;
import ane4j.mil.Program;
import ane4j.model.CpuModel;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.Parameters;
import ane4j.model.RopeStyle;
import ane4j.model.Sampler;
import ane4j.train.LoraAdapters;
import ane4j.train.PackedLayout;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.function.Function;
import java.util.function.IntConsumer;

/**
 * Generation on a backend: the prompt's prefill as MIL kernels ({@link GenerationKernels}, one attention and one FFN
 * kernel per prefill bucket, run once per layer), then one token at a time with a KV cache, either on the backend (the
 * decode kernels, the cache a fixed-size input of T = seqLen rounded up to 32 positions) or on the CPU ({@link CpuModel},
 * its cache filled from the prefill's k and v). Embedding, final RMSNorm and classifier run on the CPU, as in training:
 * only the last position's logits are needed, and a vocabulary row of 32000–151936 columns is over every chip's axis cap.
 * <p>
 * Kernels are compiled on first use (or by {@link #prepare}) through {@code compiler} (a {@link ane4j.session.Session}'s,
 * so on the ANE the compile budget and the worker's restart apply as to training) and kept in a {@link KernelCache}: a
 * bucket compiles once per cache, which generators of one model may share. Where
 * the kernel prefers bound inputs (the ANE's IOSurfaces) each layer has its own binding and its weights are written once;
 * elsewhere (the reference backend, a worker's kernels) one input per kernel is restaged per layer from the layer's weight
 * block, built once; the decode then defaults to the CPU ({@link #defaultDecode}).
 * LoRA adapters are inputs of the kernels ({@code A} and {@code s·Bᵀ}), never merged into the base weights; the CPU decode
 * uses the fused weights (its own reference path).
 * <p>
 * Same sampling as {@link ane4j.model.Generator}: the prompt fills positions 0..n−1, position p's logits pick token p+1,
 * generation ends at BOS/EOS or when position seqLen−1 has been fed. Not thread-safe.
 */
public final class BackendGenerator implements AutoCloseable {
    /** Where decoding runs after the prefill. */
    public enum Decode {
        BACKEND, CPU;

        public static Decode parse(String s) {
            return switch (s == null ? "" : s.strip().toLowerCase(java.util.Locale.ROOT)) {
                case "backend", "ane", "ref" -> BACKEND;
                case "cpu" -> CPU;
                default -> throw new IllegalArgumentException("[generate] decode '" + s + "' is not backend or cpu");
            };
        }
    }

    /**
     * The decode a backend gets unless told, from how its kernels take their inputs. Where they keep bound inputs (the
     * ANE's IOSurfaces, in process) each layer's weights and cache stay resident and a token writes one column: decode on
     * the backend, as the field does on the ANE with fixed-size cache surfaces (maderix PR #26: 82 tok/s Qwen2.5-0.5B;
     * ANEForge: ~75 tok/s Qwen3-0.6B; not yet run on Apple hardware here). Where an input is restaged per layer (the
     * reference backend; a worker's kernels, which bind no surfaces across the process boundary) every token would copy
     * the whole model into the kernels, which costs more than the CPU's matvecs reading it once: decode on the CPU from
     * the prefill's cache (measured on the reference backend: docs/generation.md).
     */
    public static Decode defaultDecode(boolean boundInputs) {
        return boundInputs ? Decode.BACKEND : Decode.CPU;
    }

    /** Timings of the last {@link #generateTokens} call. */
    public record Stats(int promptTokens, int bucket, long prefillNanos, int decodedTokens, long decodeNanos, Decode decode) {
        public double prefillTokensPerSecond() { return promptTokens / Math.max(prefillNanos / 1e9, 1e-12); }

        public double decodeTokensPerSecond() { return decodedTokens / Math.max(decodeNanos / 1e9, 1e-12); }
    }

    private final ModelConfig c;
    private final Parameters params;
    private final LoraAdapters lora;
    private final GenerationKernels kernels;
    private final KernelCache cache;
    private final boolean ownsCache;
    private final String backend;
    private Decode decode;                   // null until the first prefill kernel says how its inputs are held
    private final int[] buckets;
    private final int cacheCap;             // T
    private final int d, kv, hd;
    private final Map<String, LayerInputs> inputs = new HashMap<>();
    private float[][] attnBlocks, ffnBlocks;   // per layer, built once when a kernel is restaged (reference backend)
    private CpuModel cpu;                    // the CPU decode's model, made on first use
    private Stats stats;

    /**
     * @param params   the model (LoRA base weights when {@code lora} is given)
     * @param lora     adapters applied in the kernels without merging, or null
     * @param compiler compiles a program on the backend ({@code session::compile}, {@code backend::compile})
     * @param backend  the backend's name ({@code ane}, {@code ref}), for messages
     * @param decode   where decoding runs; null: {@link #defaultDecode} of the backend's kernels, decided at the first compile
     * @param buckets  prefill widths (multiples of 32, ascending), or null for 32, 64, 128, … up to seqLen rounded up to 32
     * @param io       fp16 (the ANE's) or fp32 kernels
     */
    public BackendGenerator(Parameters params, LoraAdapters lora, Function<Program, Kernel> compiler, String backend, Decode decode, int[] buckets, DType io) {
        this(params, lora, new KernelCache(compiler), true, backend, decode, buckets, io);
    }

    /**
     * A generator whose kernels come from {@code cache}, shared with other generators (the same model after more
     * training, say: kernels depend on the shapes only, the weights are inputs); closing it leaves the cache open.
     */
    public BackendGenerator(Parameters params, LoraAdapters lora, KernelCache cache, String backend, Decode decode, int[] buckets, DType io) {
        this(params, lora, cache, false, backend, decode, buckets, io);
    }

    private BackendGenerator(Parameters params, LoraAdapters lora, KernelCache cache, boolean ownsCache, String backend, Decode decode, int[] buckets, DType io) {
        this.c = params.config();
        this.params = params;
        this.lora = lora;
        this.cache = cache;
        this.ownsCache = ownsCache;
        this.backend = backend;
        this.decode = decode;
        this.cacheCap = (c.seqLen() + 31) / 32 * 32;
        this.buckets = buckets != null ? checkBuckets(buckets, cacheCap) : defaultBuckets(cacheCap);
        this.kernels = new GenerationKernels(c, lora == null ? 0 : lora.rank(), lora == null ? List.of() : lora.targets(), io);
        this.d = c.dim();
        this.kv = c.kvDim();
        this.hd = c.headDim();
    }

    /** fp16 kernels, default buckets and decode. */
    public BackendGenerator(Parameters params, LoraAdapters lora, Function<Program, Kernel> compiler, String backend) {
        this(params, lora, compiler, backend, null, null, DType.FP16);
    }

    /** 32, 64, 128, … below {@code cap}, then {@code cap} (seqLen rounded up to 32). */
    public static int[] defaultBuckets(int cap) {
        List<Integer> b = new ArrayList<>();
        for (int s = 32; s < cap; s *= 2) b.add(s);
        b.add(cap);
        return b.stream().mapToInt(Integer::intValue).toArray();
    }

    private static int[] checkBuckets(int[] b, int cap) {
        if (b.length == 0) throw new IllegalArgumentException("[generate] no prefill buckets; give widths such as 32,64,128");
        int[] s = b.clone();
        Arrays.sort(s);
        for (int w : s)
            if (w <= 0 || w % 32 != 0 || w > cap)
                throw new IllegalArgumentException("[generate] prefill bucket " + w + " must be a positive multiple of 32 (attention contracts over it) and at most " + cap
                        + " (seqLen rounded up to 32)");
        return s;
    }

    public ModelConfig config() { return c; }

    public String backend() { return backend; }

    /** Where decoding runs: as given, else decided by the first compiled kernel ({@link #defaultDecode}); null before it. */
    public Decode decode() { return decode; }

    public int[] buckets() { return buckets.clone(); }

    /** Cache capacity T of the decode kernels. */
    public int cacheCapacity() { return cacheCap; }

    /** Kernels compiled so far through this generator's cache. */
    public int compiles() { return cache.compiles(); }

    public Stats lastStats() { return stats; }

    public GenerationKernels kernels() { return kernels; }

    /** The programs this generator may compile: attention and FFN per bucket, then the decode pair (unless decoding on the CPU). */
    public List<GenerationKernels.Spec> programs() {
        List<GenerationKernels.Spec> out = new ArrayList<>();
        for (int s : buckets) {
            out.add(kernels.prefillAttn(s));
            out.add(kernels.ffn(s));
        }
        if (decode != Decode.CPU) {
            out.add(kernels.decodeAttn(cacheCap));
            out.add(kernels.ffn(1));
        }
        return out;
    }

    /**
     * Refuses, in one line naming the limit, a model whose kernels break an error rule of {@code chip} (the widest input
     * over the axis cap, say), before anything is compiled.
     */
    public void requireFits(Chip chip) {
        for (GenerationKernels.Spec s : programs()) {
            List<Violation> errors = ChipRules.errors(ChipRules.check(s.program(), chip));
            if (!errors.isEmpty()) {
                Violation v = errors.getFirst();
                throw new IllegalArgumentException("[generate] " + c.name() + " does not fit the ANE of " + chip + ": kernel " + s.layout().name() + " (input [1, "
                        + s.layout().input().channels() + ", 1, " + s.layout().input().width() + "]) breaks chip rule " + v.rule().id() + ": " + v.what()
                        + " (limit " + v.limit() + "); use --backend cpu" + (s.layout().width() > 1 ? " or smaller prefill buckets" : ""));
            }
        }
    }

    /** The bucket a prompt of n tokens is padded to; one line naming the largest when none holds it. */
    public int bucketFor(int n) {
        for (int s : buckets) if (s >= n) return s;
        throw new IllegalArgumentException("[generate] the prompt is " + n + " tokens, longer than the largest prefill bucket " + buckets[buckets.length - 1]
                + " (buckets " + Arrays.toString(buckets).replace(" ", "") + ", seqLen " + c.seqLen() + "); shorten the prompt" + (buckets[buckets.length - 1] < cacheCap ? " or add a bucket up to " + cacheCap : ""));
    }

    /**
     * Compiles (or takes from the cache) the kernels a prompt of {@code n} tokens needs and writes every layer's weights
     * into their inputs: the bucket's prefill pair and, decoding on the backend, the decode pair. Optional: the first
     * {@link #generateTokens} does it otherwise, inside its prefill time. Returns the seconds it took.
     */
    public double prepare(int n) {
        long t0 = System.nanoTime();
        int s = bucketFor(n);
        LayerInputs attn = inputs(kernels.prefillAttn(s)), ffn = inputs(kernels.ffn(s));
        if (decode == null) decode = defaultDecode(attn.bound);
        List<LayerInputs> all = new ArrayList<>(List.of(attn, ffn));
        if (decode == Decode.BACKEND) {
            all.add(inputs(kernels.decodeAttn(cacheCap)));
            all.add(inputs(kernels.ffn(1)));
        }
        for (LayerInputs li : all) for (int l = 0; l < c.nLayers(); l++) li.input(l);
        return (System.nanoTime() - t0) / 1e9;
    }

    /** The prompt followed by up to {@code maxTokens} generated tokens ({@link ane4j.model.Generator#generateTokens}'s contract). */
    public int[] generateTokens(int[] prompt, int maxTokens, float temperature, float topP, long seed, int bosId, int eosId, IntConsumer onToken) {
        if (prompt.length == 0) throw new IllegalArgumentException("[generate] empty prompt; start it with BOS (Tokenizer.encode(text, true, false))");
        if (maxTokens < 0) throw new IllegalArgumentException("[generate] maxTokens must be ≥ 0, got " + maxTokens);
        int seqLen = c.seqLen();
        if (prompt.length > seqLen) throw new IllegalArgumentException("[generate] prompt of " + prompt.length + " tokens is longer than seqLen " + seqLen);
        for (int t : prompt) if (t < 0 || t >= c.vocabSize()) throw new IllegalArgumentException("[generate] token " + t + " is outside the vocabulary of " + c.vocabSize());
        int bucket = bucketFor(prompt.length);
        Sampler sampler = new Sampler(temperature, topP, seed);
        int[] out = Arrays.copyOf(prompt, Math.min(seqLen + 1, prompt.length + maxTokens));
        int n = prompt.length;
        long t0 = System.nanoTime();
        float[][] kPre = new float[c.nLayers()][], vPre = new float[c.nLayers()][];
        if (out.length == n) {   // nothing to generate
            stats = new Stats(n, bucket, 0, 0, 0, decode);
            return out;
        }
        float[] logits = prefill(prompt, bucket, kPre, vPre);
        long t1 = System.nanoTime();
        Decoder dec = decoder(kPre, vPre, prompt.length);
        int decoded = 0;
        for (int pos = prompt.length - 1; pos + 1 < out.length; pos++) {
            if (Thread.currentThread().isInterrupted())
                throw new CancellationException("[generate] interrupted after " + (n - prompt.length) + " tokens");
            if (pos >= prompt.length) {
                logits = dec.forward(out[pos], pos);
                decoded++;
            }
            int next = sampler.sample(logits);
            if (next == bosId || next == eosId) break;
            out[n++] = next;
            onToken.accept(next);
        }
        stats = new Stats(prompt.length, bucket, t1 - t0, decoded, System.nanoTime() - t1, decode);
        return Arrays.copyOf(out, n);
    }

    private Decoder decoder(float[][] kPre, float[][] vPre, int n) {
        return decode == Decode.CPU ? new CpuDecoder(kPre, vPre, n) : new KernelDecoder(kPre, vPre, n);
    }

    /**
     * The logits at positions n−1 … tokens.length−1 with every token fed as given (teacher forcing): the prefill of the
     * first n tokens, then one decode step per further token. What the tests compare position by position with the CPU.
     */
    public float[][] forcedLogits(int[] tokens, int n) {
        if (n < 1 || n > tokens.length || tokens.length > c.seqLen())
            throw new IllegalArgumentException("[generate] forced logits of " + tokens.length + " tokens after a prefill of " + n + " (seqLen " + c.seqLen() + ")");
        float[][] kPre = new float[c.nLayers()][], vPre = new float[c.nLayers()][];
        float[][] out = new float[tokens.length - n + 1][];
        out[0] = prefill(Arrays.copyOf(tokens, n), bucketFor(n), kPre, vPre);
        Decoder dec = decoder(kPre, vPre, n);
        for (int pos = n; pos < tokens.length; pos++) out[pos - n + 1] = dec.forward(tokens[pos], pos);
        return out;
    }

    // -----------------------------------------------------------------------------------------------------------------
    // prefill

    /** Runs the prompt through every layer at width S; returns the last position's logits and each layer's k, v (KV, n). */
    float[] prefill(int[] prompt, int s, float[][] kPre, float[][] vPre) {
        int n = prompt.length;
        LayerInputs attn = inputs(kernels.prefillAttn(s)), ffn = inputs(kernels.ffn(s));
        if (decode == null) decode = defaultDecode(attn.bound);
        PackedLayout ai = attn.layout.input();
        float[] x = new float[d * s];   // (D, S) channel-major, pads zero
        float[] emb = params.data();
        int eo = params.layout().tokenEmbedding().offset();
        for (int p = 0; p < n; p++) for (int ch = 0; ch < d; ch++) x[ch * s + p] = emb[eo + prompt[p] * d + ch];
        // per-call constants: cos/sin (HD, S) of positions 0..S-1; positions: queries p, keys p (prompt) or p + S (pad)
        float[] cos = new float[hd * s], sin = new float[hd * s];
        rope(cos, sin, 0, s);
        float[] pos = new float[2 * s];
        for (int p = 0; p < s; p++) {
            pos[p] = p;
            pos[s + p] = p < n ? p : p + s;
        }
        for (int l = 0; l < c.nLayers(); l++) {
            TensorBuffer in = attn.input(l);
            in.writeColumns(0, d, ai.start("x"), s, x, 0, s);
            in.writeColumns(0, hd, ai.start("cos"), s, cos, 0, s);
            in.writeColumns(0, hd, ai.start("sin"), s, sin, 0, s);
            in.writeColumns(0, 2, ai.start("pos"), s, pos, 0, s);
            TensorBuffer o = attn.evaluate(l);
            o.readColumns(0, d, 0, s, x, 0, s);
            kPre[l] = new float[kv * n];
            vPre[l] = new float[kv * n];
            o.readColumns(d, kv, 0, n, kPre[l], 0, n);
            o.readColumns(d + kv, kv, 0, n, vPre[l], 0, n);
            TensorBuffer fi = ffn.input(l);
            fi.writeColumns(0, d, 0, s, x, 0, s);
            ffn.evaluate(l).readColumns(0, d, 0, s, x, 0, s);
        }
        float[] last = new float[d];
        for (int ch = 0; ch < d; ch++) last[ch] = x[ch * s + n - 1];
        return head(last);
    }

    /** Final RMSNorm and classifier on the CPU (CpuModel's formula and matvec). */
    private float[] head(float[] x) {
        float[] w = params.data();
        ParameterLayout pl = params.layout();
        float ss = 0f;
        for (int i = 0; i < d; i++) ss += x[i] * x[i];
        ss = (float) (1.0 / Math.sqrt(ss / d + c.normEps()));
        int ro = pl.rmsFinal().offset();
        for (int i = 0; i < d; i++) x[i] = w[ro + i] * (ss * x[i]);
        float[] logits = new float[c.vocabSize()];
        MatVec.multiply(logits, x, w, pl.classifier().offset(), c.vocabSize(), d);
        return logits;
    }

    /** cos/sin (HD rows, w columns) of positions from..from+w-1, element j of a head as CpuModel pairs it. */
    private void rope(float[] cos, float[] sin, int from, int w) {
        int half = hd / 2;
        boolean interleaved = c.ropeStyle() == RopeStyle.INTERLEAVED;
        double[] freqs = c.ropeFrequencies();
        for (int j = 0; j < hd; j++) {
            int pair = interleaved ? j / 2 : j % half;
            double freq = freqs[pair];
            for (int p = 0; p < w; p++) {
                cos[j * w + p] = (float) Math.cos((from + p) * freq);
                sin[j * w + p] = (float) Math.sin((from + p) * freq);
            }
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // decode

    private interface Decoder {
        /** Logits after feeding {@code token} at {@code pos} (positions before it already in the cache). */
        float[] forward(int token, int pos);
    }

    /** The CPU's forward with its cache filled from the prefill. */
    private final class CpuDecoder implements Decoder {
        CpuDecoder(float[][] kPre, float[][] vPre, int n) {
            if (cpu == null) cpu = new CpuModel(lora == null ? params : lora.fused(params));
            float[] k = new float[kv], v = new float[kv];
            for (int l = 0; l < c.nLayers(); l++)
                for (int p = 0; p < n; p++) {
                    for (int ch = 0; ch < kv; ch++) {
                        k[ch] = kPre[l][ch * n + p];
                        v[ch] = vPre[l][ch * n + p];
                    }
                    cpu.setCache(l, p, k, v);
                }
        }

        @Override public float[] forward(int token, int pos) { return cpu.forward(token, pos).clone(); }
    }

    /** The decode kernels: the cache as T columns of each layer's input, position pos masked in from the mask row. */
    private final class KernelDecoder implements Decoder {
        private final LayerInputs attn = inputs(kernels.decodeAttn(cacheCap)), ffn = inputs(kernels.ffn(1));
        private final float[][] kc = new float[c.nLayers()][kv * cacheCap], vc = new float[c.nLayers()][kv * cacheCap];  // (KV, T) per layer
        private final PackedLayout ai = attn.layout.input();
        private final float[] row = new float[d + 2 * kv], x = new float[d], mask = new float[cacheCap], cos = new float[hd], sin = new float[hd];
        private int filled = -1;   // for restaged inputs: the layer whose cache the shared input holds up to `filledTo`

        KernelDecoder(float[][] kPre, float[][] vPre, int n) {
            for (int l = 0; l < c.nLayers(); l++)
                for (int ch = 0; ch < kv; ch++) {
                    System.arraycopy(kPre[l], ch * n, kc[l], ch * cacheCap, n);
                    System.arraycopy(vPre[l], ch * n, vc[l], ch * cacheCap, n);
                }
            if (attn.bound) for (int l = 0; l < c.nLayers(); l++) writeCache(attn.input(l), l, 0, cacheCap);
        }

        private void writeCache(TensorBuffer in, int l, int from, int w) {
            in.writeColumns(0, kv, ai.start("kCache") + from, w, kc[l], from, cacheCap);
            in.writeColumns(0, kv, ai.start("vCache") + from, w, vc[l], from, cacheCap);
        }

        @Override
        public float[] forward(int token, int pos) {
            if (token < 0 || token >= c.vocabSize()) throw new IllegalArgumentException("[generate] token " + token + " is outside the vocabulary of " + c.vocabSize());
            System.arraycopy(params.data(), params.layout().tokenEmbedding().offset() + token * d, x, 0, d);
            for (int t = 0; t < cacheCap; t++) mask[t] = t < pos ? 0f : GenerationKernels.MASK_VALUE;
            rope(cos, sin, pos, 1);
            for (int l = 0; l < c.nLayers(); l++) {
                TensorBuffer in = attn.input(l);
                in.writeColumns(0, d, ai.start("x"), 1, x, 0, 1);
                in.writeColumns(0, hd, ai.start("cos"), 1, cos, 0, 1);
                in.writeColumns(0, hd, ai.start("sin"), 1, sin, 0, 1);
                in.writeColumns(0, 1, ai.start("mask"), cacheCap, mask, 0, cacheCap);
                if (!attn.bound) writeCache(in, l, 0, pos);   // the shared input held another layer's cache
                attn.evaluate(l).copyTo(0, row, 0, row.length);
                System.arraycopy(row, 0, x, 0, d);
                for (int ch = 0; ch < kv; ch++) {
                    kc[l][ch * cacheCap + pos] = row[d + ch];
                    vc[l][ch * cacheCap + pos] = row[d + kv + ch];
                }
                if (attn.bound) writeCache(in, l, pos, 1);
                TensorBuffer fi = ffn.input(l);
                fi.writeColumns(0, d, 0, 1, x, 0, 1);
                ffn.evaluate(l).copyTo(0, x, 0, d);
            }
            return head(x.clone());
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // kernel inputs

    private LayerInputs inputs(GenerationKernels.Spec spec) {
        LayerInputs li = inputs.get(spec.layout().name());
        if (li == null) {
            Kernel k;
            try {
                k = cache.kernel(spec.program());
            } catch (ane4j.chip.ChipRuleException e) {
                throw new IllegalArgumentException("[generate] " + c.name() + "'s kernel " + spec.layout().name() + " cannot run on " + backend + ": "
                        + e.getMessage() + "; use --backend cpu", e);
            }
            li = new LayerInputs(spec.layout(), k);
            inputs.put(spec.layout().name(), li);
        }
        return li;
    }

    /** One kernel's inputs for every layer: bound (weights written once per layer) or one input restaged per layer. */
    private final class LayerInputs implements AutoCloseable {
        final GenerationKernels.Layout layout;
        final Kernel kernel;
        final boolean bound;
        private final Kernel.Binding[] bindings;
        private final TensorBuffer shared, out;
        private int staged = -1;

        LayerInputs(GenerationKernels.Layout layout, Kernel kernel) {
            this.layout = layout;
            this.kernel = kernel;
            this.bound = kernel.prefersBoundInputs();
            this.bindings = bound ? new Kernel.Binding[c.nLayers()] : null;
            this.shared = bound ? null : kernel.allocateDirectInput(GenerationKernels.INPUT);
            this.out = kernel.allocateDirectOutput(GenerationKernels.OUTPUT);
        }

        boolean isAttn() { return layout.input().segments().containsKey("wqT"); }

        /** Layer l's input with its weights in place. */
        TensorBuffer input(int l) {
            if (bound) {
                if (bindings[l] == null) {
                    bindings[l] = kernel.bind();
                    writeWeights(bindings[l].input(GenerationKernels.INPUT), l, false);
                }
                return bindings[l].input(GenerationKernels.INPUT);
            }
            if (staged != l) {
                writeWeights(shared, l, true);
                staged = l;
            }
            return shared;
        }

        private void writeWeights(TensorBuffer in, int l, boolean keep) {
            PackedLayout.Range w = layout.weights();
            float[] block = isAttn() ? attnBlock(l, keep) : ffnBlock(l, keep);
            in.writeColumns(0, d, w.start(), w.size(), block, 0, w.size());
        }

        TensorBuffer evaluate(int l) {
            if (bound) bindings[l].evaluate(Map.of(GenerationKernels.OUTPUT, out));
            else kernel.evaluate(Map.of(GenerationKernels.INPUT, shared), Map.of(GenerationKernels.OUTPUT, out));
            return out;
        }

        @Override
        public void close() {
            if (bindings != null) for (Kernel.Binding b : bindings) if (b != null) b.close();
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // weight blocks: (D channels, the layout's weight columns), the same in every width

    private float[] attnBlock(int l, boolean keep) {
        if (attnBlocks == null) attnBlocks = new float[c.nLayers()][];
        if (attnBlocks[l] != null) return attnBlocks[l];
        GenerationKernels.Layout lay = kernels.decodeAttnLayout(32);
        PackedLayout in = lay.input();
        int base = lay.weights().start(), ww = lay.weights().size();
        float[] b = new float[d * ww], w = params.data();
        ParameterLayout.Layer ly = params.layer(l);
        int q = c.qDim();
        transposed(b, ww, in.start("wqT") - base, w, ly.wq().offset(), q, d);
        transposed(b, ww, in.start("wkT") - base, w, ly.wk().offset(), kv, d);
        transposed(b, ww, in.start("wvT") - base, w, ly.wv().offset(), kv, d);
        for (int ch = 0; ch < d; ch++) System.arraycopy(w, ly.wo().offset() + ch * q, b, ch * ww + in.start("wo") - base, q);
        for (int ch = 0; ch < d; ch++) b[ch * ww + in.start("rms") - base] = w[ly.rmsAtt().offset() + ch];
        float[] rot = kernels.rotationMatrix();
        for (int i = 0; i < kernels.paddedHeadDim(); i++) System.arraycopy(rot, i * hd, b, i * ww + in.start("rot") - base, hd);
        if (c.qkNorm()) {
            System.arraycopy(w, ly.qNorm().offset(), b, in.start("qkNorm") - base, hd);
            System.arraycopy(w, ly.kNorm().offset(), b, in.start("qkNorm") - base + hd, hd);
        }
        lora(b, ww, base, in, l, GenerationKernels.ATTN_TARGETS);
        if (keep) attnBlocks[l] = b;
        return b;
    }

    private float[] ffnBlock(int l, boolean keep) {
        if (ffnBlocks == null) ffnBlocks = new float[c.nLayers()][];
        if (ffnBlocks[l] != null) return ffnBlocks[l];
        GenerationKernels.Layout lay = kernels.ffnLayout(1);
        PackedLayout in = lay.input();
        int base = lay.weights().start(), ww = lay.weights().size(), h = c.hiddenDim();
        float[] b = new float[d * ww], w = params.data();
        ParameterLayout.Layer ly = params.layer(l);
        transposed(b, ww, in.start("w1T") - base, w, ly.w1().offset(), h, d);
        transposed(b, ww, in.start("w3T") - base, w, ly.w3().offset(), h, d);
        for (int ch = 0; ch < d; ch++) System.arraycopy(w, ly.w2().offset() + ch * h, b, ch * ww + in.start("w2") - base, h);
        for (int ch = 0; ch < d; ch++) b[ch * ww + in.start("rms") - base] = w[ly.rmsFfn().offset() + ch];
        lora(b, ww, base, in, l, GenerationKernels.FFN_TARGETS);
        if (keep) ffnBlocks[l] = b;
        return b;
    }

    /** Block channel ch, column at+o ← m[o, ch] for m (rows, cols = D) row-major at w[off…]. */
    private static void transposed(float[] b, int ww, int at, float[] w, int off, int rows, int cols) {
        for (int o = 0; o < rows; o++) {
            int src = off + o * cols;
            for (int ch = 0; ch < cols; ch++) b[ch * ww + at + o] = w[src + ch];
        }
    }

    /** A (r, IC) into channels [slot, slot + r) of segment a; s·Bᵀ (r, OC) into the same channels of segment bT. */
    private void lora(float[] b, int ww, int base, PackedLayout in, int l, List<String> targets) {
        if (lora == null) return;
        float[] a = lora.data();
        int r = lora.rank();
        float scale = lora.scale();
        for (GenerationKernels.LoraSlot s : kernels.loraSlots(targets)) {
            var av = lora.a(l, s.target());
            var bv = lora.b(l, s.target());
            for (int i = 0; i < r; i++) {
                System.arraycopy(a, av.offset() + i * s.ic(), b, (s.channel() + i) * ww + in.start(s.a()) - base, s.ic());
                int row = (s.channel() + i) * ww + in.start(s.bT()) - base;
                for (int o = 0; o < s.oc(); o++) b[row + o] = scale * a[bv.offset() + o * r + i];
            }
        }
    }

    @Override
    public void close() {
        for (LayerInputs li : inputs.values()) li.close();
        inputs.clear();
        if (ownsCache) cache.close();
    }

    /**
     * Compiled generation kernels by program, compiled on first use through one compiler and kept until closed. Kernels
     * depend on the model's shapes (and LoRA rank and targets) only, so one cache serves every generator of a model as it
     * trains: a notebook's {@code %generate} after more steps compiles nothing.
     */
    public static final class KernelCache implements AutoCloseable {
        private final Function<Program, Kernel> compiler;
        private final Map<Program, Kernel> kernels = new HashMap<>();
        private int compiles;

        public KernelCache(Function<Program, Kernel> compiler) { this.compiler = compiler; }

        synchronized Kernel kernel(Program p) {
            Kernel k = kernels.get(p);
            if (k == null) {
                k = compiler.apply(p);
                compiles++;
                kernels.put(p, k);
            }
            return k;
        }

        /** Kernels compiled through this cache. */
        public synchronized int compiles() { return compiles; }

        @Override
        public synchronized void close() {
            for (Kernel k : kernels.values()) k.close();
            kernels.clear();
        }
    }
}
