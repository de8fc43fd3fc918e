package ane4j.train;

import ane4j.mil.FunctionBuilder;
import ane4j.mil.Value;

/**
 * The MIL that moves a projection between channels, rows and attention heads, and tiles KV heads for GQA: the same ops
 * in the training kernels ({@link TrainingKernels}) and the generation kernels ({@code infer.GenerationKernels}).
 * <pre>
 * Legend: S = columns (positions), C = channels, n = heads, W = a head's width (HD, or HDp with zero pad columns).
 * </pre>
 */
public final class HeadOps {
    private HeadOps() {}

    /** (1,C,1,S) → (1,1,S,C): a position per row, as a matmul's left operand. */
    public static Value toRows(FunctionBuilder f, Value a, int channels, int s) {
        return f.transpose(f.reshape(a, 1, 1, channels, s), 0, 1, 3, 2);
    }

    /** (1,1,S,C) → (1,C,1,S). */
    public static Value fromRows(FunctionBuilder f, Value y, int channels, int s) {
        return f.reshape(f.transpose(y, 0, 1, 3, 2), 1, channels, 1, s);
    }

    /** (1,1,S,n·W) → (1,n,S,W). */
    public static Value toHeads(FunctionBuilder f, Value y, int heads, int w, int s) {
        Value t = f.transpose(y, 0, 1, 3, 2);                                           // (1,1,n·W,S)
        return f.transpose(f.reshape(t, 1, heads, w, s), 0, 1, 3, 2);
    }

    /**
     * (1,n,S,W) → (1,n·HD,1,S) ({@code width} = n·HD): padded heads (W &gt; HD) drop their zero columns, as a slice of
     * the first HD rows of each head once it is transposed to (1,n,W,S), rows of S values at offset 0 (no width-axis
     * op at a head boundary).
     */
    public static Value fromHeads(FunctionBuilder f, Value heads, int hd, int width, int s) {
        int n = heads.shape()[1], w = heads.shape()[3];
        Value t = f.transpose(heads, 0, 1, 3, 2);                                       // (1,n,W,S)
        if (w != hd) t = f.sliceBySize(t, new int[] {0, 0, 0, 0}, new int[] {1, n, hd, s});
        return f.reshape(t, 1, width, 1, s);
    }

    /**
     * Repeat-interleave the KV heads (1,NKV,S,W) to {@code heads} query heads: query head i uses KV head i / (NH/NKV).
     * Each KV head is sliced on the channel axis and the copies are concatenated on axis 1 of (1,·,S,W), as maderix
     * tiles (mil_dynamic.h, concat on axis 1 of [1,KV,S,HD]): S and W stay separate axes (a flattened (1,KV,1,S·HD)
     * breaks the axis cap, docs/ane-audit.md F5).
     */
    public static Value tileHeads(FunctionBuilder f, Value kvHeads, int heads) {
        int nkv = kvHeads.shape()[1], s = kvHeads.shape()[2], w = kvHeads.shape()[3], group = heads / nkv;
        if (group == 1) return kvHeads;
        Value[] kvHead = new Value[nkv];
        for (int j = 0; j < nkv; j++) kvHead[j] = f.sliceBySize(kvHeads, new int[] {0, j, 0, 0}, new int[] {1, 1, s, w});    // (1,1,S,W)
        Value[] copies = new Value[heads];
        for (int i = 0; i < heads; i++) copies[i] = kvHead[i / group];
        return f.concat(1, copies);                                                     // (1,NH,S,W)
    }
}
