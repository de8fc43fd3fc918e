package ane4j.model;

/**
 * Converts q/k projection rows between the two RoPE pairings so that a model computes the same function
 * after its {@link RopeStyle} changes. Within each head, interleaved row {@code 2i + p} (p = 0, 1) becomes
 * rotate-half row {@code p·headDim/2 + i}; this is the permutation Hugging Face's Llama conversion applies.
 * The QK-norm weights (one head vector) are permuted the same way.
 */
final class RopePermutation {
    private RopePermutation() {}

    /** A copy of {@code src} (from ropeStyle {@code from}) re-laid out for ropeStyle {@code to}. */
    static Parameters convert(Parameters src, RopeStyle to) {
        ModelConfig c = src.config();
        if (c.ropeStyle() == to) return src;
        ModelConfig target = new ModelConfig(c.name(), c.dim(), c.hiddenDim(), c.nLayers(), c.nHeads(), c.nKvHeads(), c.headDim(),
                c.vocabSize(), c.seqLen(), c.ropeTheta(), to, c.qkNorm(), c.tiedEmbedding(), c.normEps(), c.residualScale(), c.ropeScaling());
        Parameters dst = new Parameters(new ParameterLayout(target), src.data().clone());
        boolean toHalf = to == RopeStyle.HALF;
        int hd = c.headDim();
        for (int l = 0; l < c.nLayers(); l++) {
            ParameterLayout.Layer layer = src.layer(l);
            permuteRows(src.data(), dst.data(), layer.wq().offset(), c.nHeads(), hd, c.dim(), toHalf);
            permuteRows(src.data(), dst.data(), layer.wk().offset(), c.nKvHeads(), hd, c.dim(), toHalf);
            if (c.qkNorm()) {
                permuteRows(src.data(), dst.data(), layer.qNorm().offset(), 1, hd, 1, toHalf);
                permuteRows(src.data(), dst.data(), layer.kNorm().offset(), 1, hd, 1, toHalf);
            }
        }
        return dst;
    }

    // rows of nHeads heads of headDim rows of `cols` floats each, starting at `offset`
    private static void permuteRows(float[] src, float[] dst, int offset, int nHeads, int headDim, int cols, boolean toHalf) {
        int half = headDim / 2;
        for (int h = 0; h < nHeads; h++) {
            int base = offset + h * headDim * cols;
            for (int i = 0; i < half; i++) {
                for (int p = 0; p < 2; p++) {
                    int interleaved = 2 * i + p, rotateHalf = p * half + i;
                    int from = toHalf ? interleaved : rotateHalf, to = toHalf ? rotateHalf : interleaved;
                    System.arraycopy(src, base + from * cols, dst, base + to * cols, cols);
                }
            }
        }
    }
}
