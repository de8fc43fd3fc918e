package ane4j.model;

/**
 * A small seedable random generator whose whole state is one {@code long}, so training can save it in a
 * checkpoint and resume bit-identically. SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014): the state advances by a fixed odd constant and each output is a mix of it.
 */
public final class Rng {
    private static final long GOLDEN_GAMMA = 0x9E3779B97F4A7C15L;
    private long state;

    public Rng(long seed) { this.state = seed; }

    /** The current state; {@code new Rng(0).restore(s)} continues the same sequence. */
    public long state() { return state; }

    public Rng restore(long savedState) {
        this.state = savedState;
        return this;
    }

    public long nextLong() {
        long z = (state += GOLDEN_GAMMA);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Uniform in [0, 1) with 24 random bits. */
    public float nextFloat() { return (nextLong() >>> 40) * 0x1.0p-24f; }

    /** Uniform in [0, 1) with 53 random bits. */
    public double nextDouble() { return (nextLong() >>> 11) * 0x1.0p-53; }

    /** Uniform in [0, bound). */
    public int nextInt(int bound) {
        if (bound <= 0) throw new IllegalArgumentException("[rng] bound must be positive, got " + bound);
        return (int) Math.floorMod(nextLong() >>> 1, (long) bound);
    }

    /** Standard normal by Box–Muller, one value per call (no cached second value, so the state stays one long). */
    public double nextGaussian() {
        double u1 = 1.0 - nextDouble(); // (0, 1]: log is finite
        double u2 = nextDouble();
        return Math.sqrt(-2.0 * Math.log(u1)) * Math.cos(2.0 * Math.PI * u2);
    }
}
