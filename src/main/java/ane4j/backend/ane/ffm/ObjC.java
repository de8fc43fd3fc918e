package ane4j.backend.ane.ffm;

import ane4j.backend.AneException;
import ane4j.backend.FrameworkException;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The Objective-C runtime through FFM: library loading, cached classes and selectors, one exact
 * {@code objc_msgSend} downcall handle per C prototype, retain/release, autorelease pools and the
 * {@code NSError**} convention.
 *
 * <p>{@code objc_msgSend} is declared variadic but is not: it must be called with the callee's exact C
 * prototype (receiver, selector, then the fixed arguments). On arm64 a variadic call puts the extra
 * arguments on the stack where the method never looks, so {@code Linker.Option.firstVariadicArg} is never
 * used here. See Apple, "Addressing architectural differences in your macOS code" (on calling
 * {@code objc_msgSend} through a cast to the exact function type), and docs/anchors.md §4.4:
 * https://developer.apple.com/documentation/apple-silicon/addressing-architectural-differences-in-your-macos-code
 *
 * <p>{@code BOOL} is a C {@code bool} on arm64 and a {@code signed char} on x86-64 (objc.h), so it is read
 * as {@link java.lang.foreign.ValueLayout#JAVA_BYTE} and tested for non-zero.
 *
 * <p>Exceptions: an Objective-C exception raised inside a framework call would unwind through the JVM's frames and
 * abort the process (docs/anchors.md §4.4 item 7; docs/ane-audit.md F9). When the {@code @try/@catch} trampoline
 * {@code ane4j_guarded_send} is present ({@code src/main/objc/ane4j_guard.m}, built by install.sh with the system
 * {@code clang} into {@value #GUARD_LIBRARY_NAME} next to the jar, or {@value #GUARD_PROPERTY}; the tests' fake runtime
 * exports it too), every {@link #msgSend} handle goes through it and an exception becomes an {@link AneException}
 * {@code "[selector] raised Name: reason"}. Without it the calls are direct and an exception aborts the JVM
 * ({@link #exceptionGuard()} says which).
 *
 * <p>Ownership: Java has no ARC. Results of {@code alloc/new/copy/mutableCopy} and of C {@code *Create*}
 * functions are +1 and must be released; every other result is +0 (autoreleased) and must be retained
 * with {@link #retain} if it is kept after the enclosing {@link AutoreleasePool} closes.
 */
public final class ObjC {
    /** One shared library that provides every symbol below (the fake runtime in the tests). */
    public static final String LIBRARY_OVERRIDE_PROPERTY = ane4j.backend.Backends.LIBRARY_OVERRIDE_PROPERTY;

    // macOS library paths (docs/ane-facts.md §2.1; system libraries live in the dyld shared cache, so these are
    // dlopen names rather than files that exist on disk). Unverified on Apple hardware by this project.
    static final String LIBOBJC = "/usr/lib/libobjc.A.dylib";
    static final String FOUNDATION = "/System/Library/Frameworks/Foundation.framework/Foundation";
    static final String CORE_FOUNDATION = "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation";
    static final String IOSURFACE = "/System/Library/Frameworks/IOSurface.framework/IOSurface";
    /** The private framework maderix dlopens (docs/ane-facts.md §2.1); the only one its training code opens. */
    public static final String APPLE_NEURAL_ENGINE =
            "/System/Library/PrivateFrameworks/AppleNeuralEngine.framework/AppleNeuralEngine";

    /** {@code id}, {@code Class}, {@code SEL} and C pointers: all pointer-sized addresses. */
    public static final AddressLayout ID = ADDRESS;
    /** {@code BOOL}, read as one byte (see the class comment). */
    public static final java.lang.foreign.ValueLayout.OfByte BOOL = JAVA_BYTE;

    // id objc_retain(id), Class objc_getClass(const char *), SEL sel_registerName(const char *)
    private static final FunctionDescriptor ID_OF_ID = FunctionDescriptor.of(ID, ID);
    private static final FunctionDescriptor VOID_OF_ID = FunctionDescriptor.ofVoid(ID);
    private static final FunctionDescriptor ID_OF_NOTHING = FunctionDescriptor.of(ID);
    private static final FunctionDescriptor SEND_ID = FunctionDescriptor.of(ID, ID, ID);

    /** The trampoline library's file name, looked for next to the jar (or the classes directory's parent). */
    public static final String GUARD_LIBRARY_NAME = "libane4j_guard.dylib";
    /** Overrides where the trampoline library is. */
    public static final String GUARD_PROPERTY = "ane4j.ane.guardLibrary";
    static final String GUARD_SYMBOL = "ane4j_guarded_send";
    /** int ane4j_guarded_send(imp, self, sel, 7 argument words, uintptr_t *result, char *name, char *reason, size_t cap) */
    private static final FunctionDescriptor GUARDED_SEND = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS,
            JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG);
    private static final int GUARD_WORDS = 7, GUARD_TEXT_BYTES = 1024;
    private static final MethodHandle GUARDED_INVOKE;

    static {
        try {
            GUARDED_INVOKE = MethodHandles.lookup().findVirtual(ObjC.class, "guardedInvoke",
                    MethodType.methodType(Object.class, FunctionDescriptor.class, Object[].class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static ObjC instance;

    private final String origin;
    private final Linker linker = Linker.nativeLinker();
    private final SymbolLookup lookup;
    private final MemorySegment msgSendAddress;
    private final MethodHandle objc_getClass, sel_registerName, objc_retain, objc_release;
    private final MethodHandle objc_autoreleasePoolPush, objc_autoreleasePoolPop;
    private final Map<String, MemorySegment> classes = new ConcurrentHashMap<>();
    private final Map<String, MemorySegment> selectors = new ConcurrentHashMap<>();
    private final Map<FunctionDescriptor, MethodHandle> msgSends = new ConcurrentHashMap<>();
    private final Map<String, MethodHandle> functions = new ConcurrentHashMap<>();
    private final MethodHandle guard, sel_getName;   // null: no trampoline, direct calls
    private final String guardOrigin;

    private ObjC(String origin, SymbolLookup lookup, SymbolLookup guardLookup, String guardOrigin) {
        this.origin = origin;
        this.lookup = lookup;
        this.msgSendAddress = symbol("objc_msgSend");
        Optional<MemorySegment> g = guardLookup == null ? Optional.empty() : guardLookup.find(GUARD_SYMBOL);
        this.guard = g.map(a -> linker.downcallHandle(a, GUARDED_SEND)).orElse(null);
        this.guardOrigin = guard == null ? null : guardOrigin;
        this.sel_getName = guard == null ? null : downcall("sel_getName", ID_OF_ID);
        this.objc_getClass = downcall("objc_getClass", ID_OF_ID);
        this.sel_registerName = downcall("sel_registerName", ID_OF_ID);
        this.objc_retain = downcall("objc_retain", ID_OF_ID);
        this.objc_release = downcall("objc_release", VOID_OF_ID);
        this.objc_autoreleasePoolPush = downcall("objc_autoreleasePoolPush", ID_OF_NOTHING);
        this.objc_autoreleasePoolPop = downcall("objc_autoreleasePoolPop", VOID_OF_ID);
    }

    /** The process-wide runtime, loaded on first use; throws {@link AneException} when the libraries cannot be loaded. */
    public static synchronized ObjC get() {
        if (instance == null) instance = load();
        return instance;
    }

    private static ObjC load() {
        String override = System.getProperty(LIBRARY_OVERRIDE_PROPERTY);
        List<String> libraries = override != null && !override.isBlank()
                ? List.of(override)
                : List.of(LIBOBJC, CORE_FOUNDATION, FOUNDATION, IOSURFACE, APPLE_NEURAL_ENGINE);
        SymbolLookup lookup = null;
        for (String library : libraries) {
            SymbolLookup one;
            try {
                // by name, so dlopen sees the path as given (the dyld shared cache resolves it on macOS)
                one = SymbolLookup.libraryLookup(library, Arena.global());
            } catch (IllegalArgumentException | IllegalCallerException e) {
                throw new AneException("[ane.load] cannot load " + library + ": " + e.getMessage()
                        + (override != null ? " (set by -D" + LIBRARY_OVERRIDE_PROPERTY + ")" : ""), e);
            }
            lookup = lookup == null ? one : lookup.or(one);
        }
        String joined = String.join(", ", libraries);
        if (lookup.find(GUARD_SYMBOL).isPresent()) return new ObjC(joined, lookup, lookup, joined);
        Path guardFile = guardLibrary();
        if (guardFile == null) return new ObjC(joined, lookup, null, null);
        try {
            return new ObjC(joined, lookup, SymbolLookup.libraryLookup(guardFile, Arena.global()), guardFile.toString());
        } catch (IllegalArgumentException e) {
            throw new AneException("[ane.load] cannot load the exception guard " + guardFile + ": " + e.getMessage()
                    + "; rebuild it with ./install.sh or delete it (ObjC exceptions then abort the JVM)", e);
        }
    }

    /** {@value #GUARD_PROPERTY}, else {@value #GUARD_LIBRARY_NAME} beside the jar or classes directory; null when absent. */
    static Path guardLibrary() {
        String set = System.getProperty(GUARD_PROPERTY);
        if (set != null && !set.isBlank()) return Path.of(set);
        try {
            Path code = Path.of(ObjC.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            Path candidate = code.getParent().resolve(GUARD_LIBRARY_NAME);
            return Files.isRegularFile(candidate) ? candidate : null;
        } catch (Exception e) {   // no code source (e.g. a custom class loader): no guard
            return null;
        }
    }

    /**
     * Where the {@code @try/@catch} trampoline was loaded from, or null when there is none and an Objective-C exception
     * inside a framework call aborts the JVM.
     */
    public String exceptionGuard() { return guardOrigin; }

    /** The libraries this runtime was loaded from. */
    public String origin() { return origin; }

    /** The address of a C symbol (function or data). */
    public MemorySegment symbol(String name) {
        return lookup.find(name).orElseThrow(() -> new AneException("[ane.load] symbol " + name + " not found in " + origin));
    }

    /** A downcall handle for a C function, cached by name; the descriptor must be the exact C prototype. */
    public MethodHandle downcall(String name, FunctionDescriptor descriptor) {
        MethodHandle h = functions.computeIfAbsent(name, n -> linker.downcallHandle(symbol(n), descriptor));
        if (!h.type().equals(descriptor.toMethodType()))
            throw new IllegalArgumentException("[ane.ffm] " + name + " already bound as " + h.type() + ", not " + descriptor);
        return h;
    }

    /** The value of a C global of pointer type, e.g. {@code extern const CFStringRef kIOSurfaceWidth}. */
    public MemorySegment pointerGlobal(String name) {
        return symbol(name).reinterpret(ID.byteSize()).get(ID, 0);
    }

    /**
     * The {@code objc_msgSend} handle for one exact method prototype, cached. The descriptor starts with the
     * receiver and the selector ({@code id, SEL, ...}); no variadic option, ever (see the class comment).
     */
    public MethodHandle msgSend(FunctionDescriptor descriptor) {
        assert descriptor.argumentLayouts().size() >= 2 : "receiver and selector come first: " + descriptor;
        return msgSends.computeIfAbsent(descriptor, d -> guard == null ? linker.downcallHandle(msgSendAddress, d) : guarded(d));
    }

    /** A handle of the descriptor's exact type that calls objc_msgSend through the trampoline (see the class comment). */
    private MethodHandle guarded(FunctionDescriptor d) {
        List<MemoryLayout> args = d.argumentLayouts();
        if (args.size() - 2 > GUARD_WORDS)
            throw new IllegalArgumentException("[ane.ffm] " + d + " has more than " + GUARD_WORDS + " arguments after the selector");
        for (MemoryLayout l : args)
            if (!(l instanceof ValueLayout v) || v.carrier() == float.class || v.carrier() == double.class)
                throw new IllegalArgumentException("[ane.ffm] " + d + ": only integer and pointer arguments pass through the guard");
        return GUARDED_INVOKE.bindTo(this).bindTo(d).asCollector(Object[].class, args.size()).asType(d.toMethodType());
    }

    /** Per-thread out-buffers of the trampoline (result, name, reason), reused unless a call is already using them. */
    private static final class GuardScratch {
        final MemorySegment result, name, reason;
        boolean busy;

        GuardScratch(Arena arena) {
            result = arena.allocate(JAVA_LONG);
            name = arena.allocate(GUARD_TEXT_BYTES);
            reason = arena.allocate(GUARD_TEXT_BYTES);
        }
    }

    private static final ThreadLocal<GuardScratch> SCRATCH = ThreadLocal.withInitial(() -> new GuardScratch(Arena.ofAuto()));

    @SuppressWarnings("unused")   // through GUARDED_INVOKE
    private Object guardedInvoke(FunctionDescriptor d, Object[] args) throws Throwable {
        long[] w = new long[GUARD_WORDS];
        for (int i = 2; i < args.length; i++) w[i - 2] = word(args[i]);
        GuardScratch shared = SCRATCH.get();
        // a send made while another is in flight on this thread (an upcall from inside the framework) gets its own buffers
        GuardScratch g = shared.busy ? new GuardScratch(Arena.ofAuto()) : shared;
        g.busy = true;
        try {
            int raised = (int) guard.invokeExact(msgSendAddress, (MemorySegment) args[0], (MemorySegment) args[1],
                    w[0], w[1], w[2], w[3], w[4], w[5], w[6], g.result, g.name, g.reason, (long) GUARD_TEXT_BYTES);
            if (raised != 0) throw new FrameworkException(selectorName((MemorySegment) args[1]), g.name.getString(0), g.reason.getString(0));
            long r = g.result.get(JAVA_LONG, 0);
            return d.returnLayout().map(l -> fromWord(l, r)).orElse(null);
        } finally {
            g.busy = false;
        }
    }

    private static long word(Object arg) {
        return switch (arg) {
            case MemorySegment m -> m.address();
            case Long l -> l;
            case Integer i -> i;
            case Short s -> s;
            case Byte b -> b;
            case Character c -> c;
            default -> throw new IllegalArgumentException("[ane.ffm] cannot pass " + arg.getClass() + " through the guard");
        };
    }

    private static Object fromWord(MemoryLayout l, long r) {
        ValueLayout v = (ValueLayout) l;
        if (v instanceof AddressLayout) return MemorySegment.ofAddress(r);
        if (v.carrier() == byte.class) return (byte) r;
        if (v.carrier() == int.class) return (int) r;
        if (v.carrier() == long.class) return r;
        if (v.carrier() == short.class) return (short) r;
        throw new IllegalArgumentException("[ane.ffm] cannot return " + l + " through the guard");
    }

    private String selectorName(MemorySegment sel) {
        try {
            MemorySegment p = (MemorySegment) sel_getName.invokeExact(sel);
            return p.reinterpret(Long.MAX_VALUE).getString(0);
        } catch (Throwable t) {
            return "selector " + sel;
        }
    }

    /** {@code objc_getClass(name)}, cached; a missing class is an error naming it. */
    public MemorySegment cls(String name) {
        MemorySegment c = classes.get(name);
        if (c != null) return c;
        try (Arena arena = Arena.ofConfined()) {
            c = (MemorySegment) objc_getClass.invokeExact(arena.allocateFrom(name));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (c.equals(MemorySegment.NULL))
            throw new AneException("[objc_getClass] class " + name + " not found in " + origin
                    + "; the private API may have changed in this macOS version");
        classes.put(name, c);
        return c;
    }

    /** Whether {@code objc_getClass(name)} finds the class (no error when it does not): for capability fingerprints. */
    public boolean hasClass(String name) {
        if (classes.containsKey(name)) return true;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment c = (MemorySegment) objc_getClass.invokeExact(arena.allocateFrom(name));
            return !c.equals(MemorySegment.NULL);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code sel_registerName(name)}, cached. */
    public MemorySegment sel(String name) {
        MemorySegment s = selectors.get(name);
        if (s != null) return s;
        try (Arena arena = Arena.ofConfined()) {
            s = (MemorySegment) sel_registerName.invokeExact(arena.allocateFrom(name));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        selectors.put(name, s);
        return s;
    }

    /**
     * {@code objc_retain}: +1 on an object Java keeps beyond the current pool. Returns it. {@code objc_retain} and
     * {@code objc_release} are the C entry points clang emits under ARC (exported by libobjc); they behave as
     * sending {@code retain}/{@code release}.
     */
    public MemorySegment retain(MemorySegment object) {
        try {
            return (MemorySegment) objc_retain.invokeExact(object);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code objc_release}: balances a +1 (an alloc/new/copy result or an earlier {@link #retain}). */
    public void release(MemorySegment object) {
        try {
            objc_release.invokeExact(object);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code objc_autoreleasePoolPush}; close the result to pop it. Every compile and evaluate runs inside one. */
    public AutoreleasePool pool() {
        try {
            return new AutoreleasePool(this, (MemorySegment) objc_autoreleasePoolPush.invokeExact());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void poolPop(MemorySegment token) {
        try {
            objc_autoreleasePoolPop.invokeExact(token);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code [receiver selector]} for a selector without arguments that returns an object or pointer. */
    public MemorySegment sendId(MemorySegment receiver, String selector) {
        try {
            return (MemorySegment) msgSend(SEND_ID).invokeExact(receiver, sel(selector));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** A method with an {@code NSError**} last argument; returns its {@code BOOL}. */
    @FunctionalInterface
    public interface ErrorCall {
        byte call(MemorySegment errorSlot) throws Throwable;
    }

    /**
     * Runs a BOOL-returning method whose last argument is {@code NSError**}: allocates the out slot, checks
     * the result and throws {@code AneException("[selector] " + localizedDescription)} on NO. Must run inside
     * an autorelease pool: the NSError is autoreleased (+0) and is read before the pool drains.
     */
    public void callWithError(String selector, ErrorCall call) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment slot = arena.allocate(ID);
            slot.set(ID, 0, MemorySegment.NULL);
            byte ok;
            try {
                ok = call.call(slot);
            } catch (Throwable t) {
                throw rethrow(t);
            }
            if (ok != 0) return;
            MemorySegment error = slot.get(ID, 0);
            if (error.equals(MemorySegment.NULL)) throw new AneException("[" + selector + "] failed without an NSError");
            throw errorOf(selector, error);
        }
    }

    private static final FunctionDescriptor LONG_OF_NOTHING = FunctionDescriptor.of(JAVA_LONG, ID, ID);
    private static final FunctionDescriptor ID_SEND_ID = FunctionDescriptor.of(ID, ID, ID, ID);

    /**
     * What an NSError says, in one line: {@code [selector] description (domain Code=n; underlying: …)}. The domain, code
     * and {@code userInfo[NSUnderlyingError]}'s description go into the exception too: macOS 27's bundle check is told
     * apart by them (Code=10, {@code verifyBundleAtPath}: docs/macos27-ane.md C1/C2). {@code domain}, {@code code},
     * {@code userInfo} and {@code objectForKey:} are public NSError/NSDictionary API on every macOS release.
     */
    AneException errorOf(String selector, MemorySegment error) {
        String message = utf8(sendId(error, "localizedDescription"));
        String domain = utf8(sendId(error, "domain"));
        long code;
        String underlying = null;
        try {
            code = (long) msgSend(LONG_OF_NOTHING).invokeExact(error, sel("code"));
            MemorySegment info = sendId(error, "userInfo");
            if (!info.equals(MemorySegment.NULL)) {
                MemorySegment key = Foundation.string("NSUnderlyingError");
                MemorySegment inner = (MemorySegment) msgSend(ID_SEND_ID).invokeExact(info, sel("objectForKey:"), key);
                if (!inner.equals(MemorySegment.NULL)) underlying = utf8(sendId(inner, "localizedDescription"));
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
        String line = "[" + selector + "] " + message + (domain == null ? ""
                : " (" + domain + " Code=" + code + (underlying != null ? "; underlying: " + underlying : "") + ")");
        return new AneException(line, domain, code, underlying, null);
    }

    /** {@code [nsString UTF8String]} copied into a Java string; nil gives null. */
    public String utf8(MemorySegment nsString) {
        if (nsString.equals(MemorySegment.NULL)) return null;
        MemorySegment chars = sendId(nsString, "UTF8String");
        return chars.equals(MemorySegment.NULL) ? null : chars.reinterpret(Long.MAX_VALUE).getString(0);
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new AneException("[ane.ffm] native call failed: " + t, t);
    }
}
