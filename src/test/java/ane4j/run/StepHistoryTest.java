package ane4j.run;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Issue 30 point 3: the step history keeps flat memory over a long run and still spans it from the first step to the last. */
class StepHistoryTest {
    static StepMetrics step(long i, float val) {
        return new StepMetrics(i, 1_000_000, 1f / (i + 1), 1e-3f, 1f, 1f, true, false, 1, 1, Map.of("fwd", 0.5),
                0, 0, val, Float.isNaN(val) ? 0 : 2);
    }

    @Test
    void boundedAndSpanningTheRun() {
        StepHistory h = new StepHistory();
        long n = 300_000;
        int maxKept = 0;
        for (long i = 0; i < n; i++) {
            h.add(step(i, i % 1000 == 999 ? 0.5f : Float.NaN));
            if (i % 997 == 0) maxKept = Math.max(maxKept, h.list().size());
        }
        List<StepMetrics> l = h.list();
        assertTrue(l.size() <= StepHistory.OLDER + StepHistory.RECENT && maxKept <= StepHistory.OLDER + StepHistory.RECENT,
                l.size() + " / " + maxKept);
        assertEquals(n, h.count());
        assertEquals(0, l.getFirst().step(), "the first step is kept");
        assertEquals(n - 1, l.getLast().step(), "the last step is kept");
        assertEquals(n - 1, h.last().step());
        for (int i = 1; i < l.size(); i++) assertTrue(l.get(i).step() > l.get(i - 1).step(), "in order, no duplicates");
        // the last RECENT steps at full resolution
        for (int i = 0; i < StepHistory.RECENT; i++) assertEquals(n - StepHistory.RECENT + i, l.get(l.size() - StepHistory.RECENT + i).step());
        // the older part covers the whole run evenly: no gap larger than a few strides
        long maxGap = 0;
        for (int i = 1; i < l.size() - StepHistory.RECENT; i++) maxGap = Math.max(maxGap, l.get(i).step() - l.get(i - 1).step());
        assertTrue(maxGap <= 4L * n / StepHistory.OLDER, "largest gap " + maxGap);
        assertTrue(l.stream().filter(StepMetrics::validated).count() >= 200, "validation steps are kept while they fit");
    }

    @Test
    void shortRunsAreKeptWhole() {
        StepHistory h = new StepHistory();
        for (int i = 0; i < 5000; i++) h.add(step(i, Float.NaN));
        List<StepMetrics> l = h.list();
        assertEquals(5000, l.size());
        for (int i = 0; i < 5000; i++) assertEquals(i, l.get(i).step());
    }
}
