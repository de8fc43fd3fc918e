package ane4j.run;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The steps of a run kept in bounded memory, for progress lines, loss charts and tables: the last {@link #RECENT} steps
 * at full resolution, and the older ones downsampled to at most {@link #OLDER} (every stride-th step, the stride
 * doubling each time the older part fills; steps with a validation loss are kept as long as they fit). So a chart or a
 * table still spans the whole run, while memory stays flat: every step used to be kept, about 1.1 KB a step in the
 * launcher (77 -> 162 MB RSS over 20,000 steps, and out of heap after 42,400 steps at -Xmx48m: the 2026-12-05 reliability
 * report, F52/F53). metrics.jsonl in the run folder keeps every step.
 */
public final class StepHistory {
    public static final int RECENT = 2048, OLDER = 4096;

    private final ArrayDeque<StepMetrics> recent = new ArrayDeque<>();
    private final ArrayList<StepMetrics> older = new ArrayList<>();
    private long stride = 1, count;
    private StepMetrics last;

    public synchronized void add(StepMetrics m) {
        count++;
        last = m;
        recent.addLast(m);
        if (recent.size() <= RECENT) return;
        StepMetrics out = recent.removeFirst();
        if (older.isEmpty() || out.step() % stride == 0 || out.validated()) older.add(out);
        if (older.size() > OLDER) thin();
    }

    // doubles the stride: keeps the first step, the steps on the new stride, and validated steps while they fit
    private void thin() {
        stride *= 2;
        StepMetrics first = older.getFirst();
        older.removeIf(m -> m != first && m.step() % stride != 0 && !m.validated());
        if (older.size() > OLDER * 3 / 4) {   // mostly validated steps: keep every other one
            List<StepMetrics> kept = new ArrayList<>(older.size() / 2 + 1);
            for (int i = 0; i < older.size(); i += 2) kept.add(older.get(i));
            older.clear();
            older.addAll(kept);
        }
    }

    /** The steps kept, in order: at most {@link #OLDER} + {@link #RECENT}. */
    public synchronized List<StepMetrics> list() {
        List<StepMetrics> l = new ArrayList<>(older.size() + recent.size());
        l.addAll(older);
        l.addAll(recent);
        return l;
    }

    /** How many steps were added (kept or not). */
    public synchronized long count() { return count; }

    public synchronized boolean isEmpty() { return count == 0; }

    /** The last step added, or null. */
    public synchronized StepMetrics last() { return last; }

    /** A long list of steps (a resumed run's metrics.jsonl) downsampled the same way. */
    public static List<StepMetrics> of(List<StepMetrics> steps) {
        StepHistory h = new StepHistory();
        steps.forEach(h::add);
        return h.list();
    }
}
