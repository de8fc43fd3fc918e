package ane4j.train;

import ane4j.train.TrainingStep.Phase;

import java.util.EnumMap;
import java.util.Map;

/**
 * Wall time of a training step per {@link Phase}, summed over the step (the maderix-style breakdown that metrics.jsonl
 * and {@code ane4j bench step} print). One region:
 * <pre>try (var _ = timer.phase(Phase.IO)) { … }</pre>
 * Regions are not nested (a nested one would count its time twice). Used by the step's thread only.
 */
final class StepTimer {
    private final Map<Phase, Long> nanos = new EnumMap<>(Phase.class);

    /** A running region: closing it adds its time to its phase. */
    final class Region implements AutoCloseable {
        private final Phase phase;
        private final long t0 = System.nanoTime();

        private Region(Phase phase) { this.phase = phase; }

        @Override public void close() { nanos.merge(phase, System.nanoTime() - t0, Long::sum); }
    }

    /** Starts a region of {@code phase}, ended by {@link Region#close()}. */
    Region phase(Phase phase) { return new Region(phase); }

    /** Forgets the last step's times (at the start of each forward). */
    void clear() { nanos.clear(); }

    /** Nanoseconds per phase since the last {@link #clear()}, in {@link Phase} order; phases that did not run are absent. */
    Map<Phase, Long> nanos() { return nanos; }
}
