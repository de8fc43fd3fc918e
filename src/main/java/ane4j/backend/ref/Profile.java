package ane4j.backend.ref;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Opt-in time per op of every reference kernel: {@code -Dane4j.ref.profile=true} prints, at exit, the wall time spent in
 * each op kind (and in input/output conversion) summed over all evaluations, largest first, per kernel (named by its
 * function and output type) and over all kernels; {@code -Dane4j.ref.profile.values=true} lists every op on its own
 * (matmuls with their shapes).
 */
final class Profile {
    private Profile() {}

    static final boolean ON = Boolean.getBoolean("ane4j.ref.profile");
    private static final boolean VALUES = Boolean.getBoolean("ane4j.ref.profile.values");
    private static final Map<String, LongAdder> NANOS = new ConcurrentHashMap<>();

    static {
        if (ON) Runtime.getRuntime().addShutdownHook(new Thread(Profile::print, "ane4j-ref-profile"));
    }

    /** Adds the time since {@code since} to the op kind of {@code label} ("softmax probs" → "softmax"); returns now. */
    static long add(String function, String label, long since) {
        long now = System.nanoTime();
        int sp = label.indexOf(' ');
        String op = VALUES || sp < 0 ? label : label.substring(0, sp);
        NANOS.computeIfAbsent(function + " " + op, k -> new LongAdder()).add(now - since);
        NANOS.computeIfAbsent("(all kernels) " + op, k -> new LongAdder()).add(now - since);
        return now;
    }

    /** Forgets what was measured so far (e.g. the warm-up). */
    static void reset() { NANOS.clear(); }

    private static void print() {
        System.err.println("[ref] time per op (all evaluations):");
        NANOS.entrySet().stream().sorted((a, b) -> Long.compare(b.getValue().sum(), a.getValue().sum())).limit(60)
                .forEach(e -> System.err.printf("  %10.1f ms  %s%n", e.getValue().sum() / 1e6, e.getKey()));
    }
}
