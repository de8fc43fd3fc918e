package ane4j.notebook;

import ane4j.mil.MilParser;
import ane4j.mil.Program;
import ane4j.session.LocalSession;
import ane4j.hub.HfHub;
import ane4j.run.RunSpec;
import ane4j.session.Session;
import ane4j.session.WorkerSession;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * The ane4j notebook API for plain Java cells and jshell scripts:
 * <pre>
 * var g = Mil.program().function("main", f -&gt; f.output(f.relu(f.input("x", Mil.fp16(1, 4, 1, 4))))).build();
 * var k = Ane.compile(g);                 // a CompiledProgram
 * k.run(Map.of("x", new float[16]));      // outputs by name
 * var run = Ane.train("steps = 20; seed = 1");
 * Ane.generate("Once upon a time");
 * </pre>
 * Work goes to the current {@link Session}: by default a {@link WorkerSession} (kernels and training in a supervised
 * child JVM that restarts itself when its compile budget is spent or it dies); {@code -Dane4j.session=local} or
 * {@code Ane.use(Ane.local())} keeps everything in this JVM instead.
 */
public final class Ane {
    /** {@code worker} (default) or {@code local}: the session a notebook or script starts with. */
    public static final String SESSION_PROPERTY = "ane4j.session";

    private static Session session;
    private static final Set<CompiledProgram> LIVE = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

    private Ane() {}

    /** The current session, started on first use. */
    public static synchronized Session session() {
        if (session == null) session = defaultSession();
        return session;
    }

    /** The session a notebook gets by default: the supervised worker, unless {@code -Dane4j.session=local}. */
    static Session defaultSession() {
        String s = System.getProperty(SESSION_PROPERTY, "worker").strip();
        return switch (s) {
            case "worker" -> worker();
            case "local" -> local();
            default -> throw new IllegalArgumentException("[session] -D" + SESSION_PROPERTY + "=" + s + " must be worker or local");
        };
    }

    /** A session in this JVM on {@link ane4j.backend.Backends#select()}. */
    public static Session local() {
        return new LocalSession();
    }

    /** A session on a supervised worker JVM with the default options. */
    public static Session worker() {
        return new WorkerSession();
    }

    /** {@code false}: the kernel does not start the worker JVM at its own start (the first use starts it). */
    public static final String PRESTART_PROPERTY = "ane4j.worker.prestart";

    /**
     * Starts the current session's worker JVM in the background, so that the first {@code %%train} or compile finds it
     * ready instead of waiting for a JVM to start: the ane4j kernel calls this at its start. A worker that cannot start
     * is left to the first use, which says why. {@code -D}{@value #PRESTART_PROPERTY}{@code =false} turns it off.
     */
    public static void prestart() {
        if (!Boolean.parseBoolean(System.getProperty(PRESTART_PROPERTY, "true").strip())) return;
        Thread.ofPlatform().daemon().name("ane4j-worker-prestart").start(() -> {
            try {
                if (session() instanceof WorkerSession w) w.supervisor().startAndWarmUp();
            } catch (RuntimeException e) {
                // the first request starts the worker again and reports what went wrong
            }
        });
    }

    /** Closes the current session (its worker checkpoints training in flight and exits); the next call starts a new one. */
    public static synchronized void shutdown() {
        if (session != null) session.close();
        session = null;
    }

    /** Makes {@code s} the current session (the previous one is closed). */
    public static synchronized void use(Session s) {
        if (session != null && session != s) session.close();
        session = s;
    }

    /** Compiles the program's main function in the current session. */
    public static CompiledProgram compile(Program program) {
        return compile("kernel", program);
    }

    /** Parses MIL text (errors carry line:column) and compiles it. */
    public static CompiledProgram compile(String milText) {
        return compile("kernel", MilParser.parse(milText));
    }

    public static CompiledProgram compile(String name, Program program) {
        Session s = session();
        CompiledProgram k = new CompiledProgram(name, program, s.compile(program), s.backendName());
        LIVE.add(k);
        return k;
    }

    static void released(CompiledProgram k) {
        LIVE.remove(k);
    }

    /** Kernels compiled through this API and not closed (nor garbage-collected). */
    public static int liveKernels() {
        synchronized (LIVE) {
            return (int) LIVE.stream().filter(k -> !k.isClosed()).count();
        }
    }

    public static Session.Status status() {
        return session().status();
    }

    /**
     * Trains with a {@code key = value} configuration (lines or {@code ;}-separated; the keys of {@link RunSpec#KEYS}, e.g.
     * {@code compileBudget}), printing a progress line every 10%; returns the finished run.
     */
    public static TrainingRun train(String config) {
        return TrainingRun.start(session(), runSpec(RunSpec.parseText(config))).follow(System.out);
    }

    /** {@link #train(String)} from a map: the same keys, in any spelling ({@code weight-decay}, {@code model.dim}). */
    public static TrainingRun train(Map<String, ?> config) {
        Map<String, String> m = new java.util.LinkedHashMap<>();
        config.forEach((k, v) -> m.put(k, String.valueOf(v)));
        return TrainingRun.start(session(), runSpec(m)).follow(System.out);
    }

    /** The hub that Hugging Face ids in training settings resolve through (tests point it at a local server). */
    static java.util.function.Supplier<HfHub> hub = HfHub::fromEnvironment;

    /**
     * A run from settings in which {@code init}, {@code model} or {@code tokenizer} may be a Hugging Face id
     * ({@code init = Qwen/Qwen3-0.6B}): resolved into the huggingface_hub cache by the CLI's rule ({@link HfHub#resolveRunKeys}).
     */
    static RunSpec runSpec(Map<String, String> given) {
        return RunSpec.of(HfHub.resolveRunKeys(given, RunSpec.KEYS::canonical, hub));
    }

    /**
     * Trains the parameters of a graph you built (issue 31) as a run of the run layer, like {@link #train(String)}: the
     * graph, its data and the parameters' starting values are written into the run folder ({@code graph.mil},
     * {@code data/NAME.npy}, {@code val/NAME.npy}, {@code init/NAME.npy}) and the run names them ({@code graph},
     * {@code data}, {@code valData}, {@code init}), so it trains in the session's worker (or in this JVM with
     * {@code inProcess = true}) with AdamW, the schedule, clipping, loss scaling, validation, checkpoints, resume and
     * restarts, and writes metrics.jsonl, run.json and loss.png. In a notebook the cell shows the live progress line
     * and loss plot; elsewhere a progress line is printed every 10%.
     *
     * @param data       each data input of the graph → every sample along the first axis (input x [B, 64]: [N, 64]);
     *                   with {@code logits = NAME; labels = NAME} in {@code config} (the loss on the CPU: the mean
     *                   cross-entropy of the graph's logits output), the int32 labels too, whether or not the graph has
     *                   an input of that name
     * @param validation held-out samples of the same inputs, or null: the last valFraction of {@code data} (0.1)
     * @param init       starting values of parameters by input name (row-major); a parameter not given starts from the
     *                   seed (matrices N(0, 1/fan_in), vectors 0). The parameters are the float inputs without data.
     * @param config     {@code key = value} lines of the run keys ({@code steps}, {@code lr}, {@code loss}, {@code seed},
     *                   {@code evalEvery}, {@code runDir}, {@code inProcess} …; {@code %train help} lists them)
     */
    public static Fit fit(Program graph, Map<String, ane4j.backend.TensorBuffer> data, Map<String, ane4j.backend.TensorBuffer> validation,
                          Map<String, float[]> init, String config) {
        return fit(graph, data, validation, init, RunSpec.parseText(config == null ? "" : config));
    }

    /** {@link #fit(Program, Map, Map, Map, String)} without validation data (the last valFraction of the samples are held out). */
    public static Fit fit(Program graph, Map<String, ane4j.backend.TensorBuffer> data, Map<String, float[]> init, String config) {
        return fit(graph, data, null, init, config);
    }

    /** {@link #fit(Program, Map, Map, Map, String)} with the run keys as a map. */
    public static Fit fit(Program graph, Map<String, ane4j.backend.TensorBuffer> data, Map<String, ane4j.backend.TensorBuffer> validation,
                          Map<String, float[]> init, Map<String, String> config) {
        TrainingRun run = FitFiles.start(session(), graph, data, validation, init, config);
        org.dflib.jjava.jupyter.kernel.BaseKernel kernel = notebookKernel();
        if (kernel != null) run.followInNotebook(kernel);
        else run.follow(System.out);
        return new Fit(run);
    }

    /** The kernel of the running notebook, or null (JShell, a script, a test). */
    static org.dflib.jjava.jupyter.kernel.BaseKernel notebookKernel() {
        try {
            return org.dflib.jjava.jupyter.kernel.BaseKernel.notebookKernel();
        } catch (NullPointerException outsideANotebook) {
            return null;
        }
    }

    /** The last training run of this JVM, or null. */
    public static TrainingRun lastRun() {
        return TrainingRun.current();
    }

    /** Text from the last run's model: 64 tokens, temperature 0.8, top-p 0.9, seed 42. */
    public static String generate(String prompt) {
        return generate(prompt, 64, 0.8f, 0.9f, 42);
    }

    public static String generate(String prompt, int maxTokens, float temperature, float topP, long seed) {
        return generate(prompt, maxTokens, temperature, topP, seed, "cpu");
    }

    /**
     * Text from the last run's model, {@code backend} "cpu" (the CPU path) or the session's backend ("ane", "ref", or
     * "backend"): the prompt's prefill as MIL kernels there, decoding where that backend decodes by default
     * (docs/generation.md).
     */
    public static String generate(String prompt, int maxTokens, float temperature, float topP, long seed, String backend) {
        return generate(prompt, maxTokens, temperature, topP, seed, backend, null);
    }

    /** {@link #generate(String, int, float, float, long, String)} with {@code decode} "backend" or "cpu" (null: the backend's default). */
    public static String generate(String prompt, int maxTokens, float temperature, float topP, long seed, String backend, String decode) {
        TrainingRun run = TrainingRun.current();
        if (run == null) throw new IllegalStateException("[generate] no model yet: train one with %%train or Ane.train(\"steps = 60\")");
        return run.generate(prompt, maxTokens, temperature, topP, seed, backend, decode);
    }

    /** The ane4j packages and classes a script imports (what the notebook kernel imports at start). */
    public static List<String> imports() {
        return List.of("ane4j.mil.*", "ane4j.backend.*", "ane4j.train.*", "ane4j.session.*", "ane4j.notebook.Ane", "ane4j.notebook.CompiledProgram", "ane4j.notebook.TrainingRun", "ane4j.notebook.Fit");
    }
}
