package ane4j.backend.ane;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

class SurfacePlanTest {
    @Test
    void sortsByMilNameAndSizesAllToTheLargestAboveTheMinimum() {
        List<SurfacePlan.Slot> slots = SurfacePlan.plan("input", List.of(
                new SurfaceSpec("k", 200_000), new SurfaceSpec("q", 70_000), new SurfaceSpec("V", 10)));
        assertEquals(List.of("V", "k", "q"), slots.stream().map(s -> s.spec().name()).toList());
        assertEquals(List.of(0, 1, 2), slots.stream().map(SurfacePlan.Slot::index).toList());
        // 200 000 rounded up to a multiple of 128 (maderix PR #35, ane-audit-2 R9)
        assertTrue(slots.stream().allMatch(s -> s.allocBytes() == 200_064), slots.toString());
    }

    @Test
    void doctorsExactPlanGivesEachSurfaceItsOwnSizeRoundedTo128() {
        List<SurfacePlan.Slot> slots = SurfacePlan.plan("input", List.of(
                new SurfaceSpec("a", 256), new SurfaceSpec("b", 512), new SurfaceSpec("c", 129)), true);
        assertEquals(List.of(256L, 512L, 256L), slots.stream().map(SurfacePlan.Slot::allocBytes).toList());
    }

    @Test
    void aSmallSingleSurfaceIsPaddedToTheMinimum() {
        SurfacePlan.Slot only = SurfacePlan.plan("output", List.of(new SurfaceSpec("y", 2 * 768))).get(0);
        assertEquals(49_152, SurfacePlan.MIN_SURFACE_BYTES);
        assertEquals(SurfacePlan.MIN_SURFACE_BYTES, only.allocBytes());
        assertEquals(2 * 768, only.spec().bytes());
    }

    @Test
    void rejectsEmptyDuplicateAndNonPositive() {
        assertEquals("[ane.surface] a program needs at least one input",
                assertThrows(IllegalArgumentException.class, () -> SurfacePlan.plan("input", List.of())).getMessage());
        assertThrows(IllegalArgumentException.class, () -> SurfacePlan.plan("input", List.of(new SurfaceSpec("a", 1), new SurfaceSpec("a", 2))));
        assertEquals("[ane.surface] x has 0 bytes; it must be positive",
                assertThrows(IllegalArgumentException.class, () -> new SurfaceSpec("x", 0)).getMessage());
    }
}
