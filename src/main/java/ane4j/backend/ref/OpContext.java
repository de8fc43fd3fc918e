package ane4j.backend.ref;

import ane4j.backend.BackendException;
import ane4j.mil.DType;
import ane4j.mil.Literal;
import ane4j.mil.Operation;
import ane4j.mil.Value;

import java.lang.foreign.ValueLayout;

/**
 * What an op's semantics may ask of the {@link Planner} while it plans the op {@link #cur()}: its inputs as views, new
 * dense outputs, steps to run, and the definition of its output. The op families ({@link Views}, {@link Elementwise},
 * {@link Reductions}, {@link MatmulConv}, {@link Attention}, {@link Quantization}, {@link Gather}) are written against it.
 */
interface OpContext {
    ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    /** Heap chunks for the vectorised loops (C2 vectorises array loops, not segment loops): two per thread. */
    int CHUNK = 2048;
    ThreadLocal<float[][]> SCRATCH = ThreadLocal.withInitial(() -> new float[][] {new float[CHUNK], new float[CHUNK]});

    /** The op being planned. */
    Operation cur();

    RefBackend.Options opt();

    /** The view of value {@code v}, marking it used by the current step. */
    T get(Value v);

    /** The view of input {@code param} of the current op (an inline literal becomes a constant), or null if absent. */
    T in(String param);

    Literal lit(String param);

    /** The axis named by literal {@code param}, a negative one counted from the end; out of range is an error. */
    int axis(String param, int rank);

    T constant(Literal l, String name);

    float[] decode(Literal l, String name);

    /** Whether a batched matmul runs its products one per thread (else each product is split across the threads). */
    boolean batchParallel();

    /** Where the op making {@code v} may write it (its view in a concat's output), or null: see {@link Planner#placed}. */
    T placed(Value v);

    /** Whether {@code v} is read only through views by the concat that places it. */
    boolean onlyInConcat(Value v);

    /** The output of a concat: the buffer ops already write their values into, else a new one. */
    T concatOutput(Value out);

    /** A new dense tensor in a planned temporary buffer. */
    T newOut(int[] shape, DType dtype);

    Storage temp(long floats);

    void addStorage(Storage s);

    /** Defines value {@code v} as the view {@code t}. */
    void def(Value v, T t);

    /** Adds a step to the kernel. */
    void add(Runnable r);

    /** Adds a step and, for fp16 outputs with fp16 storage, the rounding of its dense result. */
    void addRounded(Runnable r, T out);

    /** Whether values of this type are rounded to fp16 after the op that makes them. */
    boolean rounds(DType dtype);

    /** {@code t} if it is dense, else a dense copy made by a step. */
    T contig(T t);

    void copyStep(T src, T dst);

    /** Shapes appended to the next step's label (shown by the profile). */
    void label(String extra);

    /** A warning kept with the kernel and logged. */
    void warn(String w);

    boolean transposesLastTwo(Value v);

    BackendException err(String format, Object... args);
}
