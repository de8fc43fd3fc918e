package ane4j.backend.ref;

import java.lang.foreign.MemorySegment;

/**
 * A planned fp32 buffer. Values are views into storages; the planner gives every non-view op output its own storage and
 * then maps storages whose lifetimes (first definition … last use, in steps) do not overlap onto shared memory.
 */
final class Storage {
    final long floats;
    final Kind kind;
    /** Decoded constant data (CONSTANT only). */
    final float[] init;
    int firstDef;
    int lastUse;
    /** Bound after planning (and per evaluate for inputs). */
    MemorySegment seg;

    enum Kind { INPUT, CONSTANT, TEMP }

    Storage(long floats, Kind kind, float[] init, int firstDef) {
        this.floats = floats;
        this.kind = kind;
        this.init = init;
        this.firstDef = firstDef;
        this.lastUse = firstDef;
    }
}
