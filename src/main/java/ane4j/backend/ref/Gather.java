package ane4j.backend.ref;

import ane4j.backend.BackendException;
import ane4j.mil.Value;

import java.lang.foreign.MemorySegment;

/** gather (with batch_dims). */
interface Gather extends OpContext {
    /**
     * gather: y[b, a, j, i] = x[b, a, indices[b, j], i] along axis (b: the leading batch_dims dims shared by x and
     * indices); a negative index counts from the end of the axis (as coremltools/numpy); out of range is an error.
     */
    default void gather(Value out) {
        T x = contig(in("x")), idx = contig(in("indices"));
        int axis = axis("axis", x.rank());
        int b = lit("batch_dims").intValue();
        long batches = 1, outer = 1, inner = 1, ni = 1;
        for (int i = 0; i < b; i++) batches *= x.shape[i];
        for (int i = b; i < axis; i++) outer *= x.shape[i];
        for (int i = axis + 1; i < x.rank(); i++) inner *= x.shape[i];
        for (int i = b; i < idx.rank(); i++) ni *= idx.shape[i];
        int dim = x.shape[axis];
        T o = newOut(out.shape(), out.dtype());
        long fb = batches, fo = outer, fi = inner, fn = ni;
        String name = out.name();
        add(() -> {
            MemorySegment xs = x.st.seg, is = idx.st.seg, os = o.st.seg;
            for (long bt = 0; bt < fb; bt++)
                for (long a = 0; a < fo; a++)
                    for (long j = 0; j < fn; j++) {
                        int raw = (int) is.getAtIndex(F, idx.off + bt * fn + j), ix = raw < 0 ? raw + dim : raw;
                        if (ix < 0 || ix >= dim)
                            throw new BackendException("[gather] index " + raw + " of '" + name + "' is out of range for axis " + axis + " of size " + dim);
                        long row = bt * fo + a;
                        MemorySegment.copy(xs, (x.off + (row * dim + ix) * fi) * 4, os, ((row * fn + j) * fi) * 4, fi * 4);
                    }
        });
        def(out, o);
    }
}
