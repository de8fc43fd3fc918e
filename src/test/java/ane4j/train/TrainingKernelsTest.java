package ane4j.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ane4j.mil.Function;
import ane4j.model.ModelConfig;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class TrainingKernelsTest {
    private static Map<String, TrainingKernels.Spec> kernels(String preset) {
        return new TrainingKernels(ModelConfig.parse(preset)).all().stream()
                .collect(Collectors.toMap(TrainingKernels.Spec::name, k -> k));
    }

    private static void assertIo(TrainingKernels.Spec k, int[] in, int[] out) {
        Function f = k.program().main();
        assertArrayEquals(in, f.inputs().get(0).shape(), k.name() + " input");
        assertArrayEquals(out, f.outputs().get(0).shape(), k.name() + " output");
        assertEquals(in[1], k.input().channels(), k.name() + " input layout channels");
        assertEquals(in[3], k.input().width(), k.name() + " input layout width");
        assertEquals(out[1], k.output().channels(), k.name() + " output layout channels");
    }

    /** Every name builds the kernel of that name: the ids metrics, doctor probes and `bench compile` print are the enum's. */
    @Test
    void everyNameBuildsTheKernelItNames() {
        TrainingKernels kernels = new TrainingKernels(ModelConfig.parse("tiny"), ane4j.mil.DType.FP16, null, true);
        for (TrainingKernels.Name n : TrainingKernels.Name.values()) {
            assertEquals(n.id(), kernels.build(n).name());
            assertEquals(n, TrainingKernels.Name.of(n.id()));
        }
        assertEquals(java.util.List.of("sdpaFwd", "woFwd", "ffnFused", "ffnBwdW2t", "ffnBwdW13t", "wotBwd", "sdpaBwd1", "sdpaBwd2", "qBwd", "kvBwd"),
                TrainingKernels.Name.ten().stream().map(TrainingKernels.Name::id).toList());
        assertEquals(java.util.List.of("sdpaFwd", "woFwd", "ffnFused", "ffnBwdW2t", "ffnBwdW13t", "wotBwd", "qBwd", "kvBwd"),
                TrainingKernels.Name.ten().stream().filter(TrainingKernels.Name::weighted).map(TrainingKernels.Name::id).toList());
        var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> kernels.byName("sdpa"));
        assertEquals("[kernels] no training kernel 'sdpa'; known: [sdpaFwd, woFwd, ffnFused, ffnBwdW2t, ffnBwdW13t, wotBwd, sdpaBwd1, sdpaBwd2, qBwd, kvBwd, attnValues]", e.getMessage());
    }

    /** The surface sizes of docs/ane-facts.md §3 (Stories110M; our sdpaFwd drops the xnorm pass-through the CPU already has). */
    @Test
    void stories110mKernelsHaveTheSeedsSurfaceShapes() {
        var k = kernels("stories110m");
        assertEquals(10, k.size());
        // xnorm 256 + Wq, Wk, Wv 3·768 + constants: cos, sin 32 each (512 rows), mask 128 (512 rows); the rotation is
        // maderix's reshape/slice/concat (S·HD/2 = 8192 fits the cap), no constant
        assertIo(k.get("sdpaFwd"), new int[] {1, 768, 1, 2560 + 32 + 32 + 128}, new int[] {1, 3072, 1, 256});
        assertIo(k.get("woFwd"), new int[] {1, 768, 1, 1024}, new int[] {1, 768, 1, 256});
        assertIo(k.get("ffnFused"), new int[] {1, 768, 1, 6656}, new int[] {1, 6912, 1, 256});
        assertIo(k.get("ffnBwdW2t"), new int[] {1, 768, 1, 2304}, new int[] {1, 2048, 1, 256});
        assertIo(k.get("ffnBwdW13t"), new int[] {1, 2048, 1, 2048}, new int[] {1, 768, 1, 256});
        assertIo(k.get("wotBwd"), new int[] {1, 768, 1, 1024}, new int[] {1, 768, 1, 256});
        assertIo(k.get("sdpaBwd1"), new int[] {1, 3072 + 256, 1, 256}, new int[] {1, 6912, 1, 256});   // + the mask, 256 channels
        assertIo(k.get("sdpaBwd2"), new int[] {1, 7680, 1, 256}, new int[] {1, 1536, 1, 256});
        assertIo(k.get("qBwd"), new int[] {1, 768, 1, 1024}, new int[] {1, 768, 1, 256});
        assertIo(k.get("kvBwd"), new int[] {1, 768, 1, 2048}, new int[] {1, 768, 1, 256});
    }

    @Test
    void qwenKernelsCarryGqaAndQkNorm() {
        var k = kernels("qwen3-0.6b");
        // xnorm 256 + Wq 2048 + Wk 1024 + Wv 1024 + qNorm/kNorm 2·128 + cos, sin 32 each, mask 64 (half-style rotation: slices)
        assertIo(k.get("sdpaFwd"), new int[] {1, 1024, 1, 4608 + 32 + 32 + 64}, new int[] {1, 2048 + 2048 + 1024 + 1024 + 2048 + 1024, 1, 256});
        assertIo(k.get("woFwd"), new int[] {1, 2048, 1, 1280}, new int[] {1, 1024, 1, 256});
        assertIo(k.get("ffnFused"), new int[] {1, 1024, 1, 9728}, new int[] {1, 10240, 1, 256});
        assertIo(k.get("ffnBwdW13t"), new int[] {1, 3072, 1, 2560}, new int[] {1, 1024, 1, 256});
        assertIo(k.get("wotBwd"), new int[] {1, 1024, 1, 2304}, new int[] {1, 2048, 1, 256});
        assertIo(k.get("sdpaBwd1"), new int[] {1, 8192 + 256, 1, 256}, new int[] {1, 10240, 1, 256});
        assertIo(k.get("sdpaBwd2"), new int[] {1, 12288, 1, 256}, new int[] {1, 4096, 1, 256});
        assertIo(k.get("qBwd"), new int[] {1, 2048, 1, 1280}, new int[] {1, 1024, 1, 256});
        assertIo(k.get("kvBwd"), new int[] {1, 1024, 1, 2560}, new int[] {1, 1024, 1, 256});
    }

    @Test
    void ropeTablesPairElementsByStyle() {
        var llama = ModelConfig.parse("stories15m");
        float[] cos = RopeTables.cos(llama);
        int hd = llama.headDim();
        // interleaved: elements 2i and 2i+1 share an angle; position 3, pair 1 → 3·10000^(−2/hd)
        assertEquals(cos[3 * hd + 2], cos[3 * hd + 3]);
        assertEquals((float) Math.cos(3 * Math.pow(10000, -2.0 / hd)), cos[3 * hd + 2], 1e-6);
        var qwen = ModelConfig.parse("qwen3-0.6b");
        float[] sin = RopeTables.sin(qwen);
        int qhd = qwen.headDim();
        // half: elements i and i + HD/2 share an angle, theta 1e6
        assertEquals(sin[5 * qhd + 7], sin[5 * qhd + 7 + qhd / 2]);
        assertEquals((float) Math.sin(5 * Math.pow(1e6, -14.0 / qhd)), sin[5 * qhd + 7], 1e-6);
    }
}
