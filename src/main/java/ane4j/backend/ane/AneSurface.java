package ane4j.backend.ane;

import ane4j.backend.ane.ffm.IOSurfaces;

import java.lang.foreign.MemorySegment;

/**
 * One input or output IOSurface of an {@link AneProgram}, owned by it (released on its close). The tensor
 * occupies the first {@link #bytes()} bytes, dense {@code [1,C,H,W]}; the rest of the allocation is padding.
 * CPU access goes through {@link #lock}: the segment is zero-copy on the surface memory.
 */
public final class AneSurface {
    private final String name;
    private final int index;
    private final long bytes;
    private final long allocBytes;
    private final MemorySegment surface;   // IOSurfaceRef, +1, released by AneProgram.close()
    private final MemorySegment memory;    // the first `bytes` bytes of the base address
    private int locks;

    AneSurface(SurfacePlan.Slot slot, MemorySegment surface) {
        this.name = slot.spec().name();
        this.index = slot.index();
        this.bytes = slot.spec().bytes();
        this.allocBytes = slot.allocBytes();
        this.surface = surface;
        this.memory = IOSurfaces.baseAddress(surface).asSlice(0, bytes);
    }

    /** The MIL name of this input or output. */
    public String name() { return name; }

    /** Its index in the request (alphabetical among inputs, or among outputs). */
    public int index() { return index; }

    /** The tensor's bytes. */
    public long bytes() { return bytes; }

    /** The surface allocation (at least {@link #bytes()}). */
    public long allocBytes() { return allocBytes; }

    MemorySegment ref() { return surface; }

    boolean isLocked() { return locks > 0; }

    /** A CPU access to the tensor bytes, between {@code IOSurfaceLock} and {@code IOSurfaceUnlock}. */
    public final class Access implements AutoCloseable {
        private final int options;
        private boolean closed;

        private Access(int options) { this.options = options; }

        /** The tensor bytes, zero-copy; valid until this access closes. */
        public MemorySegment segment() {
            if (closed) throw new IllegalStateException("[ane.surface] access to " + name + " is closed");
            return options == IOSurfaces.LOCK_READ_ONLY ? memory.asReadOnly() : memory;
        }

        @Override
        public void close() {
            if (closed) return;
            closed = true;
            locks--;
            IOSurfaces.unlock(surface, options);
        }
    }

    /** Locks for writing (options 0, as maderix does before filling an input). */
    public Access lockForWrite() { return lock(IOSurfaces.LOCK_READ_WRITE); }

    /** Locks for reading ({@code kIOSurfaceLockReadOnly}). */
    public Access lockForRead() { return lock(IOSurfaces.LOCK_READ_ONLY); }

    private Access lock(int options) {
        IOSurfaces.lock(surface, options);
        locks++;
        return new Access(options);
    }

    /** Copies {@code source} (exactly {@link #bytes()} long) into the surface. */
    public void write(MemorySegment source) {
        if (source.byteSize() != bytes)
            throw new IllegalArgumentException("[ane.surface] " + name + " holds " + bytes + " bytes, got " + source.byteSize());
        try (Access a = lockForWrite()) {
            a.segment().copyFrom(source);
        }
    }

    /** Copies the surface into {@code target} (exactly {@link #bytes()} long). */
    public void read(MemorySegment target) {
        if (target.byteSize() != bytes)
            throw new IllegalArgumentException("[ane.surface] " + name + " holds " + bytes + " bytes, target has " + target.byteSize());
        try (Access a = lockForRead()) {
            target.copyFrom(a.segment());
        }
    }

    @Override
    public String toString() {
        return name + "#" + index + "(" + bytes + " of " + allocBytes + " bytes)";
    }
}
