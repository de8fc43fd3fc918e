package ane4j.backend.ane;

/**
 * One input or output of a MIL function as an IOSurface: its MIL name and the dense byte size of its
 * {@code [1,C,H,W]} tensor (C·H·W·element size; docs/ane-facts.md §3).
 */
public record SurfaceSpec(String name, long bytes) {
    public SurfaceSpec {
        if (name == null || name.isBlank()) throw new IllegalArgumentException("[ane.surface] a surface needs its MIL name");
        if (bytes <= 0) throw new IllegalArgumentException("[ane.surface] " + name + " has " + bytes + " bytes; it must be positive");
    }
}
