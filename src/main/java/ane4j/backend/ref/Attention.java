package ane4j.backend.ref;

import ane4j.mil.DType;
import ane4j.mil.Shapes;
import ane4j.mil.Value;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/** scaled_dot_product_attention (the fused op; the training kernels build attention from matmul/softmax instead). */
interface Attention extends OpContext {
    /**
     * scaled_dot_product_attention: softmax(Q·Kᵀ / sqrt(E) [+ mask]) · V per batch. The ANE ignores attn_mask
     * (docs/ane-facts.md §5.5), so the mask is ignored here too unless honorSdpaMask is set; a bool mask keeps positions where
     * it is true, a float mask is added.
     */
    default void sdpa(Value out) {
        T q = contig(in("query")), k = contig(in("key")), v = contig(in("value"));
        T mask = in("attn_mask");
        if (mask != null && !opt().honorSdpaMask()) {
            String w = "[scaled_dot_product_attention] attn_mask of '" + out.name() + "' is ignored, as the ANE ignores it (docs/ane-facts.md §5.5); "
                    + "build attention from matmul/add/softmax, or set -D" + RefBackend.SDPA_MASK_PROPERTY + "=true to apply it";
            warn(w);
            mask = null;
        }
        int r = q.rank();
        int l = q.shape[r - 2], e = q.shape[r - 1], s = k.shape[r - 2], ev = v.shape[r - 1];
        long batches = Shapes.count(Arrays.copyOf(q.shape, r - 2));
        int[] scoreShape = q.shape.clone();
        scoreShape[r - 1] = s;
        Storage scores = temp(batches * l * s);
        Iter maskIt = null;
        T fm = mask;
        if (mask != null) maskIt = Iter.of(scoreShape, T.dense(scores, scoreShape, DType.FP32), mask);
        T o = newOut(out.shape(), out.dtype());
        float scale = (float) (1.0 / Math.sqrt(e));
        Iter fmi = maskIt;
        boolean boolMask = mask != null && mask.dtype == DType.BOOL;
        addRounded(() -> {
            MemorySegment ss = scores.seg;
            for (long b = 0; b < batches; b++)
                Gemm.gemm(false, true, l, s, e, q.st.seg, q.off + b * l * e, e, k.st.seg, k.off + b * s * e, e, 0f, ss, b * l * s, s);
            long cnt = batches * l * s;
            for (long i = 0; i < cnt; i++) ss.setAtIndex(F, i, ss.getAtIndex(F, i) * scale);
            if (fmi != null) {
                MemorySegment ms = fm.st.seg;
                long si = fmi.inner[0], mi = fmi.inner[1];
                fmi.run((f, n) -> {
                    for (int i = 0; i < n; i++) {
                        float mv = ms.getAtIndex(F, f[1] + i * mi);
                        long at = f[0] + i * si;
                        ss.setAtIndex(F, at, boolMask ? (mv != 0 ? ss.getAtIndex(F, at) : Float.NEGATIVE_INFINITY) : ss.getAtIndex(F, at) + mv);
                    }
                });
            }
            Reductions.softmaxRows(ss, 0, ss, 0, batches * l, s, 1, false);
            for (long b = 0; b < batches; b++)
                Gemm.gemm(false, false, l, ev, s, ss, b * l * s, s, v.st.seg, v.off + b * s * ev, ev, 0f, o.st.seg, b * l * ev, ev);
        }, o);
        def(out, o);
    }
}
