package ane4j.model;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The built-in training data: short children's stories from templates and word lists (written for this project),
 * deterministic for a seed, and a BPE {@link Tokenizer} of {@link ModelConfig#TINY_VOCAB} tokens fitted to them.
 * A few hundred KB of text take well under a second, so nothing is downloaded or stored.
 *
 * <p>Story i of a seed is generated from {@code new Rng(seed)} after stories 0..i-1. Stories with
 * {@code i % 10 == 9} form the validation split, the others the training split. Token streams are
 * TinyStories-style: each story is {@code BOS, encode(story)}.
 */
public final class EmbeddedCorpus {
    private EmbeddedCorpus() {}

    /** The seed of the stories the tokenizer is fitted to. */
    public static final long TOKENIZER_SEED = 0x5eed;
    static final int TOKENIZER_STORIES = 2000;

    private static volatile Tokenizer tokenizer;

    /** The tokenizer fitted to the corpus (vocabulary {@link ModelConfig#TINY_VOCAB}); built once, then cached. */
    public static Tokenizer tokenizer() {
        Tokenizer t = tokenizer;
        if (t == null) {
            synchronized (EmbeddedCorpus.class) {
                t = tokenizer;
                if (t == null) tokenizer = t = BpeTrainer.train(stories(TOKENIZER_SEED, TOKENIZER_STORIES), ModelConfig.TINY_VOCAB);
            }
        }
        return t;
    }

    /** The first {@code n} stories of a seed. */
    public static List<String> stories(long seed, int n) {
        Rng rng = new Rng(seed);
        List<String> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) out.add(story(rng));
        return out;
    }

    /** The first {@code nTokens} tokens of all stories of a seed. */
    public static int[] tokens(long seed, int nTokens) { return stream(seed, nTokens, Split.ALL); }

    private record Drawn(long seed, int nTokens, int[] tokens) {}

    private static Drawn lastTrain;   // the last training stream, guarded by the class: a rerun or resume of a seed reuses it

    /**
     * The first {@code nTokens} tokens of the training stories (i % 10 != 9) of a seed. The last one drawn is kept, so
     * that a worker that drew the default run's stream ahead of time ({@code Trainer.warmUp}) hands it to that run.
     */
    public static synchronized int[] train(long seed, int nTokens) {
        Drawn d = lastTrain;
        if (d == null || d.seed() != seed || d.nTokens() != nTokens) lastTrain = d = new Drawn(seed, nTokens, stream(seed, nTokens, Split.TRAIN));
        return d.tokens().clone();
    }

    /** The first {@code nTokens} tokens of the validation stories (i % 10 == 9) of a seed; disjoint from {@link #train}. */
    public static int[] validation(long seed, int nTokens) { return stream(seed, nTokens, Split.VALIDATION); }

    private enum Split { ALL, TRAIN, VALIDATION }

    private static int[] stream(long seed, int nTokens, Split split) {
        if (nTokens < 0) throw new IllegalArgumentException("[corpus] nTokens must be ≥ 0, got " + nTokens);
        Tokenizer tok = tokenizer();
        Rng rng = new Rng(seed);
        int[] out = new int[nTokens];
        int n = 0;
        for (int i = 0; n < nTokens; i++) {
            String s = story(rng);
            boolean val = i % 10 == 9;
            if (split == Split.TRAIN && val || split == Split.VALIDATION && !val) continue;
            int[] t = tok.encode(s, true, false);
            int k = Math.min(t.length, nTokens - n);
            System.arraycopy(t, 0, out, n, k);
            n += k;
        }
        return out;
    }

    // ----------------------------------------------------------------------------------------------
    // story generator

    private record Hero(String name, String he, String him, String his, String kind) {}

    private static final Hero[] HEROES = {
        new Hero("Lily", "she", "her", "her", "girl"), new Hero("Tom", "he", "him", "his", "boy"),
        new Hero("Mia", "she", "her", "her", "girl"), new Hero("Ben", "he", "him", "his", "boy"),
        new Hero("Sue", "she", "her", "her", "girl"), new Hero("Tim", "he", "him", "his", "boy"),
        new Hero("Anna", "she", "her", "her", "girl"), new Hero("Max", "he", "him", "his", "boy"),
        new Hero("Lucy", "she", "her", "her", "girl"), new Hero("Sam", "he", "him", "his", "boy"),
        new Hero("Zoe", "she", "her", "her", "girl"), new Hero("Jack", "he", "him", "his", "boy"),
        new Hero("Pip", "he", "him", "his", "bunny"), new Hero("Daisy", "she", "her", "her", "cow"),
        new Hero("Spot", "he", "him", "his", "dog"), new Hero("Kitty", "she", "her", "her", "cat"),
    };
    private static final String[] FRIENDS = {"a bird", "a frog", "a duck", "a little mouse", "a big bear", "a fox", "an owl",
        "a puppy", "a kitten", "a turtle", "a squirrel", "a fish", "a lamb", "a bee"};
    private static final String[] ADJ = {"little", "big", "happy", "kind", "shiny", "soft", "funny", "brave", "small", "pretty",
        "old", "new", "red", "blue", "yellow", "green", "tiny", "fluffy", "bright", "quiet"};
    private static final String[] THINGS = {"ball", "kite", "box", "hat", "book", "cake", "flower", "toy", "boat", "car", "drum",
        "cup", "sock", "shell", "stone", "leaf", "key", "bell", "map", "apple"};
    private static final String[] PLACES = {"park", "garden", "forest", "house", "beach", "river", "school", "farm", "hill",
        "yard", "pond", "shop", "field", "kitchen"};
    private static final String[][] VERBS = {{"play", "played"}, {"run", "ran"}, {"jump", "jumped"}, {"sing", "sang"},
        {"dance", "danced"}, {"read", "read"}, {"swim", "swam"}, {"paint", "painted"}, {"climb", "climbed"}, {"draw", "drew"},
        {"bake", "baked"}, {"build", "built"}, {"hide", "hid"}, {"look", "looked"}};
    private static final String[] FEELINGS = {"happy", "sad", "scared", "excited", "proud", "tired", "surprised", "angry", "curious"};
    private static final String[] WEATHER = {"The sun was warm and bright.", "It was a windy day.", "It started to rain.",
        "The sky was blue and clear.", "The stars came out at night.", "Snow fell on the ground."};
    private static final String[] MORALS = {"it is good to share", "friends help each other", "being kind is important",
        "you should always say sorry", "trying again makes you stronger", "listening to your mom is wise"};

    private static String pick(Rng r, String[] a) { return a[r.nextInt(a.length)]; }

    private static String an(String word) { return ("aeiou".indexOf(word.charAt(0)) >= 0 ? "an " : "a ") + word; }

    private static String cap(String s) { return Character.toUpperCase(s.charAt(0)) + s.substring(1); }

    /** One story: an opening, three to six middle sentences, an ending. */
    static String story(Rng r) {
        Hero h = HEROES[r.nextInt(HEROES.length)];
        String friend = pick(r, FRIENDS), place = pick(r, PLACES), thing = pick(r, THINGS), adj = pick(r, ADJ);
        String[] verb = VERBS[r.nextInt(VERBS.length)];
        String friendName = friend.substring(friend.indexOf(' ') + 1);
        List<String> s = new ArrayList<>();
        switch (r.nextInt(4)) {
            case 0 -> s.add("Once upon a time, there was " + an(pick(r, ADJ)) + " " + h.kind + " named " + h.name + ".");
            case 1 -> s.add("One day, " + h.name + " went to the " + place + ".");
            case 2 -> s.add(h.name + " was " + an(pick(r, ADJ)) + " " + h.kind + " who loved to " + verb[0] + ".");
            default -> s.add("There was once " + an(h.kind) + " called " + h.name + " who lived near the " + place + ".");
        }
        int middle = 3 + r.nextInt(4);
        int[] kinds = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
        for (int i = 0; i < middle; i++) {
            // distinct sentence kinds, in random order (partial Fisher-Yates shuffle)
            int j = i + r.nextInt(kinds.length - i), kind = kinds[j];
            kinds[j] = kinds[i];
            kinds[i] = kind;
            s.add(switch (kind) {
                case 0 -> cap(h.he) + " saw " + an(adj) + " " + thing + " in the " + place + ".";
                case 1 -> cap(h.he) + " wanted to " + verb[0] + " with the " + thing + ".";
                case 2 -> cap(h.he) + " met " + friend + ". \"Hello!\" said " + h.name + ". \"Do you want to " + verb[0] + " with me?\"";
                case 3 -> "The " + friendName + " said, \"Yes! Let's " + verb[0] + " together.\"";
                case 4 -> "But then the " + thing + " fell into the " + pick(r, new String[]{"pond", "river", "mud", "grass", "hole"}) + ". "
                        + h.name + " felt " + pick(r, FEELINGS) + ".";
                case 5 -> pick(r, WEATHER);
                case 6 -> h.name + " and the " + friendName + " " + verb[1] + " all day long.";
                case 7 -> cap(h.he) + " asked " + h.his + " mom, \"Can I take the " + thing + " to the " + place + "?\" "
                        + "Mom smiled and said, \"Yes, but be careful.\"";
                case 8 -> "The " + friendName + " helped " + h.him + " find the " + thing + ". " + h.name + " said, \"Thank you!\"";
                default -> cap(h.he) + " was very " + pick(r, FEELINGS) + " because the " + thing + " was so " + adj + ".";
            });
        }
        s.add(switch (r.nextInt(4)) {
            case 0 -> "In the end, " + h.name + " and the " + friendName + " became best friends.";
            case 1 -> h.name + " smiled and went home to sleep.";
            case 2 -> "From that day on, " + h.name + " always " + verb[1] + " in the " + place + ".";
            default -> "The moral of the story is that " + pick(r, MORALS) + ".";
        });
        return String.join(" ", s);
    }

    /** Fraction of tokens that are byte fallbacks (for tests: the fitted vocabulary should cover the corpus). */
    static double byteFallbackRate(int[] tokens) {
        return Arrays.stream(tokens).filter(t -> t >= 3 && t < 259).count() / (double) Math.max(1, tokens.length);
    }
}
