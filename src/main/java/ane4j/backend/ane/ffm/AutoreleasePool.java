package ane4j.backend.ane.ffm;

import java.lang.foreign.MemorySegment;

/**
 * {@code objc_autoreleasePoolPush}/{@code Pop} as a try-with-resources scope. Every +0 object created
 * inside is released when it closes, so anything Java keeps must be {@link ObjC#retain retained} first.
 * Pools nest strictly; close them on the thread that opened them, in reverse order.
 */
public final class AutoreleasePool implements AutoCloseable {
    private final ObjC objc;
    private final MemorySegment token;
    private boolean closed;

    AutoreleasePool(ObjC objc, MemorySegment token) {
        this.objc = objc;
        this.token = token;
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        objc.poolPop(token);
    }
}
