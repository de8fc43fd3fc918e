package ane4j.backend.ane;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Where each input or output goes in an {@code _ANERequest} and how big its IOSurface is, following the
 * rules reported by the direct-API projects (docs/anchors.md §1.3). The ANE reads the first C·S elements of a
 * larger surface as a packed buffer (ORION #14), so padding an allocation is harmless.
 */
public final class SurfacePlan {
    /** Minimum IOSurface size for evaluation, about 48 KB, e.g. fp32 [768,16]; smaller fails with 0x1d (ORION #4). */
    public static final long MIN_SURFACE_BYTES = 48 * 1024;
    /**
     * Surfaces bind in alphabetical order of their MIL names (ORION #3, #13; a wrong order gives silently
     * wrong data). Plain {@code String} order, i.e. by UTF-16 code unit: "B" before "a".
     */
    public static final Comparator<SurfaceSpec> BINDING_ORDER = Comparator.comparing(SurfaceSpec::name);

    /** One surface: its request index, its tensor and the allocation (equal for all inputs, and for all outputs; ORION #2, #12). */
    public record Slot(int index, SurfaceSpec spec, long allocBytes) {}

    private SurfacePlan() {}

    /**
     * Allocations are whole multiples of 128 bytes: maderix PR #35 (M5, unmerged): "All input, output, and weight
     * surfaces must be 128-byte aligned. Failure results in silent evaluation errors or compiler rejection" (ane-audit-2
     * R9). Costs nothing: the ANE reads the tensor from the first bytes (ORION #14).
     */
    public static final long ALLOC_ALIGN = 128;

    static long align(long bytes) { return (bytes + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN; }

    /**
     * Sorts by {@link #BINDING_ORDER}, and sizes every surface to max(largest tensor, {@link #MIN_SURFACE_BYTES}) rounded
     * up to {@link #ALLOC_ALIGN}.
     */
    public static List<Slot> plan(String role, List<SurfaceSpec> specs) { return plan(role, specs, false); }

    /**
     * With {@code exact}, each surface is its own tensor's size rounded up to {@link #ALLOC_ALIGN}: no 48 KB floor and no
     * common size. Only {@code doctor}'s surface probes use it, so that they observe the rules they test (ane-audit-2 R2:
     * on the padded plan every multi-I/O and small-surface probe ran on equal 48 KB surfaces).
     */
    public static List<Slot> plan(String role, List<SurfaceSpec> specs, boolean exact) {
        if (specs.isEmpty()) throw new IllegalArgumentException("[ane.surface] a program needs at least one " + role);
        Set<String> names = new HashSet<>();
        for (SurfaceSpec s : specs)
            if (!names.add(s.name())) throw new IllegalArgumentException("[ane.surface] " + role + " \"" + s.name() + "\" is listed twice");
        List<SurfaceSpec> sorted = new ArrayList<>(specs);
        sorted.sort(BINDING_ORDER);
        long alloc = MIN_SURFACE_BYTES;
        for (SurfaceSpec s : sorted) alloc = Math.max(alloc, s.bytes());
        alloc = align(alloc);
        List<Slot> slots = new ArrayList<>(sorted.size());
        for (int i = 0; i < sorted.size(); i++) slots.add(new Slot(i, sorted.get(i), exact ? align(sorted.get(i).bytes()) : alloc));
        return List.copyOf(slots);
    }
}
