/*
 * fakeobjc.c — a fake Objective-C runtime, Foundation subset, IOSurface C API and fake _ANE* classes,
 * for the contract tests of ane4j.backend.ane.ffm on Linux. One shared library provides every symbol the
 * Java side looks up on macOS; point ane4j.ane.libraryOverride at it.
 *
 * It records every message (receiver, selector, arguments as it decoded them, result), every
 * retain/release, pool push/pop and C call in a log the tests read through the fake_* functions.
 * It enforces the contract facts of docs/ane-facts.md §2–§3 (MIL as NSData, weights dictionary not nil,
 * files in NSTemporaryDirectory()/<hex>/ before compile, call order, QoS, procedureIndex as an object,
 * equal surface sizes) and reports violations as errors (fake_error_*), failing the call like the
 * real framework would (nil / NO + NSError).
 *
 * ABI note (x86-64 SysV): objc_msgSend is defined here as a plain non-variadic function taking 7 pointer
 * arguments after self and _cmd. Integer and pointer arguments go in rdi, rsi, rdx, rcx, r8, r9 and then
 * on the stack in declaration order, exactly as for a caller that declares the exact prototype, so a
 * Java downcall with fewer int/pointer arguments delivers them correctly (the unused trailing slots hold
 * garbage and are never read for that selector). A 32-bit argument (unsigned int QoS, int) arrives in the
 * low half of its register; the upper half is unspecified, so it is truncated with a cast before use.
 * BOOL results are returned in al (the low byte of rax). Floating-point arguments would go in xmm
 * registers and are not supported (none of the selectors used take one).

 *
 * ---- What the fake models of Apple's framework, and where each rule was observed ----
 * Sources, named by the labels in brackets below (decompiled AppleNeuralEngine class dumps of iOS restore images,
 * which carry the same framework classes as macOS; docs/ane-audit.md F1, F2 and F13 read them):
 *  [desc-18.2]  EthanArbuckle/iPhone17-1_18.2_22C152_Restore,
 *               System/Library/PrivateFrameworks/AppleNeuralEngine.framework/_ANEInMemoryModelDescriptor.m (iOS 18.2)
 *  [model-26.1] EthanArbuckle/iPhone18-3_26.1_23B85_Restore,
 *               System/Library/PrivateFrameworks/AppleNeuralEngine.framework/AppleNeuralEngine/_ANEInMemoryModel.m (iOS 26.1)
 *  [model-26.1+] samhenrigold/iPhone18-3_26.1_23B85_Restore, the same path as _ANEInMemoryModel.mm (a fuller decompile
 *               of the same build: compileWithQoS:, loadWithQoS:, unloadWithQoS:)
 *  [hash-26.1]  EthanArbuckle/iPhone18-3_26.1_23B85_Restore,
 *               System/Library/PrivateFrameworks/AppleNeuralEngine.framework/AppleNeuralEngine/_ANEHashEncoding.m
 *  [cache-probe] m0at/ANEtransformers, tests/ane_cache_probe2.m (a public probe; its header comment states what its
 *               first version found on its author's Mac)
 * None of this was run on Apple hardware by ane4j.
 *
 * D1 modelWithMILText:weights:optionsPlist: returns nil when the MIL or the weights dictionary is nil
 *    (initWithNetworkText:... "if (v11 && v12)", [desc-18.2]; maderix commit 20cd236 changed nil to @{}).
 * D2 ... and nil when an entry of the weights dictionary has no values ("Empty weights dictionary for index=%@",
 *    [desc-18.2], initWithNetworkText:...cold.1). An empty dictionary @{} itself is accepted (maderix's weight-free programs pass it).
 * D3 hexStringIdentifier is [NSString stringWithFormat:@"%@_%@_%@", networkTextHash, weightsHash, optionsPlistHash]
 *    ([desc-18.2] -hexStringIdentifier): each SHA-256 printed "%02X" (convertToHexString:length:, [hash-26.1]); networkTextHash
 *    over the MIL bytes; weightsHash = hexStringForDataArray: over the entries' allValues.firstObject in sorted key order,
 *    which hashes 4 zero bytes first (CC_SHA256_Update(&c, &data, 4), data = 0) then each object's -bytes/-length;
 *    optionsPlistHash over the plist's bytes, nil giving the hash of nothing. Keys sort as strcmp (NSString compare:
 *    on the ASCII keys ane4j writes; the comparator block itself is not in the dumps).
 * D4 an entry's allValues.firstObject / allKeys.firstObject is its "data" value when it has one: maderix's
 *    @{@"offset":@0, @"data":d} hashes and saves on hardware, and saveModelFiles ([model-26.1]) writes
 *    entry[allKeys.firstObject] to <dir>/<that key>, which is the <hex>/data file maderix PR #22 found after compile.
 *    A first value that is not NSData gets -bytes: NSInvalidArgumentException (an exception, rule X1).
 * D5 inMemoryModelWithDescriptor: copies the descriptor's identifier (initWithDesctiptor:, [model-26.1], [model-26.1+]).
 * C1 compileWithQoS:options:error: always compiles (saveModelFiles, then compileModel: with
 *    compilerOptionsWithOptions:isCompiledModelCached:0, [model-26.1+] compileWithQoS:options:error:): saveModelFiles writes each entry's first value to
 *    <dir>/<its key>, i.e. <dir>/data (D4); the compiler leaves net.plist (maderix PR #22 found both after compile).
 * A1 compiledModelExists asks aned ([sharedConnection compiledModelExistsMatchingHash:hexStringIdentifier], [model-26.1]
 *    -compiledModelExists); BOOL(id,SEL) as [cache-probe] calls it.
 * A2 aned keeps a compiled program by identifier after compile, across unload and outside the client process: the
 *    [cache-probe] header comment ("loadWithQoS works without compileWithQoS (1.5ms vs 14ms) because the aned daemon caches compiled
 *    programs keyed by hexStringIdentifier"; "persist across unload? (YES from probe1)"); across processes is what the
 *    daemon being a separate process implies and what that probe's phase 2 tests (its result is not published).
 *    Here: one directory per identifier under fake_set_daemon_dir / $FAKE_ANED_DIR.
 * A3 purgeCompiledModel drops it (purgeCompiledModelMatchingHash:, same decompiles; exercised by the probe).
 * L1 loadWithQoS:options:error: loads what aned has without a compile (decompile: compiledModelExists → loadModel: with
 *    isCompiledModelCached:YES). For a program aned does not have, the decompile calls saveModelFiles and loadModel:
 *    with isCompiledModelCached:NO; whether aned compiles then is unknown, so the fake fails that load (ane4j always
 *    compiles first in that case and never relies on either answer).
 * U1 unloadWithQoS:error: removes NSTemporaryDirectory()/<identifier> after unloadModel:, whether or not that succeeded
 *    (removeItemAtPath:localModelPath, [model-26.1+] unloadWithQoS:error:; docs/ane-audit.md F13).
 * K1 the compiler leak: compiles fail after about 119 per process (maderix README, tiny_train.m; 119-132 on M4, PR #23):
 *    fake_set_leak_after(n) fails compiles after n in this "process" (fake_new_process starts the count again). Loads
 *    from aned's cache are not counted (maderix PR #22 counts only real compiles: g_compile_count++ when !fromCache).
 * Knob F7: fake_set_refuse_dialect("ios18"|"ios16") fails compiles of that dialect like ANECCompile(): which dialect the
 *    dynamic-weight kernels need on M1/M2 is unknown (maderix PR #6 vs its M1 Pro/Max ios18 runs; docs/ane-audit.md F7), so the
 *    backend must cope with either answer.
 * X1 an Objective-C exception raised inside a framework call unwinds to the caller: unrecognized selectors raise
 *    NSInvalidArgumentException (NSObject doesNotRecognizeSelector:); through a plain objc_msgSend from FFM it aborts the
 *    JVM (docs/anchors.md §4.4 item 7; docs/ane-audit.md F9). The fake reports it through ane4j_guarded_send, the entry point of
 *    ane4j's @try/@catch trampoline, and flags it as a contract error when it reaches an unguarded objc_msgSend.
 * Knob S1: fake_set_min_surface_bytes(n) (default off) fails evaluate with 0x1d for a surface below n bytes: Orion
 *    docs/ane_constraints.md #4 saw 0x1d below ~48 KB on M4 Max, ironmill docs/design/ane-constraints.md says 16 KB;
 *    the test picks n, so either answer can be exercised.
 * Knob A4: _ANEDeviceInfo aneSubType answers "h16g" by default, as maderix's README names M4 "(M4, H16G)"; maderix
 *    PR #50 reports "h17" on M5 Max (docs/ane-facts.md, "Other selectors seen"); fake_set_ane_subtype picks another.
 *
 * ---- OS profiles: fake_set_macos(26 | 27), default 26 (or $FAKE_MACOS) ----
 * 26 is every rule above: the framework as macOS 15/26 shipped it (AppleNeuralEngine 370.x/380.x). 27 (382.x) adds
 * (sources in docs/macos27-ane.md; none was run on Apple hardware by ane4j). Labels:
 *  [pmetal]     Epistates/pmetal, crates/pmetal-metal/src/ane/runtime.rs (the functions named; its comments cite
 *               pmetal issue #34, whose thread is not in the index)
 *  [ipsw-27]    blacktop/ipsw-diffs, the macOS 26 -> 27 diffs DYLIBS/AppleNeuralEngine.md (symbols and strings added to
 *               AppleNeuralEngine.framework/Versions/A/AppleNeuralEngine) and DYLIBS/ANECompilerService.md (which now
 *               calls verifyBundleAtPath:expectedHashes:error:); the release folder of those two files could not be
 *               resolved from the index, whose snapshot of that repository is too large to fetch
 *  [ipsw-382.100] blacktop/ipsw-diffs, DYLIBS/AppleNeuralEngine.md of the 382.15.1 -> 382.100 diff (cloneIfWritable:
 *               ...useClone:); folder not resolved, as above
 *  [q38]        a probe script of the "Q38" ANE engine (ane_w8a8 activation accuracy; M5 Max, macOS 27.0 26A428) in a
 *               public repository the index could not name
 *  [espresso-app] a verification note of a Swift app adding an Espresso ANE backend (M5 Max, macOS 27) in a public
 *               repository the index could not name
 * H1 compileWithQoS: the compiler service re-hashes the bundle's files (+[_ANEHashEncoding verifyBundleAtPath:
 *    expectedHashes:error:], SHA-256 per file, [ipsw-27]) and a program with two or more files under
 *    weights/ fails with Code=10: [pmetal] pack_weights ("fails verifyBundleAtPath with a hash
 *    mismatch (Code=10; #34)"), "a program with more than one blob FILE fails verifyBundleAtPath: invalid model"
 *    ([q38], M5 Max, 27.0 26A428), Espresso "code 10, verifyBundleAtPath: invalid model" ([espresso-app]). The
 *    NSError here: code 10, localizedDescription "verifyBundleAtPath: invalid model", NSUnderlyingError carrying the
 *    hash-mismatch string of C1 ("verifyBundleAtPath: hash mismatch for %@ in bundle %@ (TOCTOU?)"). The domain string is
 *    quoted by no source: "com.apple.appleneuralengine" is an assumption, and ane4j classifies on code + message only.
 * H2 -[_ANERequest validate] sends -count to perfStats: a non-nil perfStats that is not an array raises
 *    NSInvalidArgumentException at evaluate ([pmetal] perf_stats_request_supported, citing pmetal #34).
 * H3 +[_ANECloneHelper bundleContainsSymlinkAtPath:]: a bundle holding a symbolic link is refused ("refusing model bundle
 *    containing a symbolic link", [ipsw-27]; [ipsw-382.100] adds cloneIfWritable:...useClone:).
 * H4 I/O rows are laid out with a 64-byte row stride (modelAttributes NetworkStatusList LiveInputList RowStride; [pmetal]
 *    AneTensorLayout and restride()): for a tensor whose last axis is not a multiple of 64 bytes, evaluate reads row r of
 *    an input from byte r * stride and writes row r of an output there, so a surface written packed is misread, silently.
 *    Each surface's rows are those of its tensor in binding order (alphabetical by name, ORION #3, #13).
 *
 * Pure test knobs (no Apple behaviour behind them): fake_set_fail_compile, fake_set_identifier, fake_set_throw and
 *    fake_set_throw_times (how many sends raise X1), fake_set_tmpdir, fake_set_evaluate_hook.
 *
 * Checks of what hardware-proven callers do (a deviation is reported through fake_error_*, not a model of Apple):
 * MIL as NSData and optionsPlist nil (maderix io.h, Orion ane_runtime.m), entries {offset: NSNumber, data: NSData}
 * under "@model_path/..." keys (maderix train.m:30-35), model.mil and the weight files in NSTemporaryDirectory()/<id>/
 * before compile (maderix io.h:105-115, [cache-probe] prepopulate_tmpdir), QoS 21 and @{} options, procedureIndex an NSNumber,
 * selectors sent inside an autorelease pool, retain/release balance, equal surface sizes (Orion #2/#3). */
#define _GNU_SOURCE   /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

enum kind { K_CLASS, K_STRING, K_DATA, K_NUMBER, K_ARRAY, K_DICT, K_ERROR,
            K_DESC, K_MODEL, K_REQUEST, K_SURFOBJ, K_SURFACE };

static const char *KIND_NAMES[] = { "class", "NSString", "NSData", "NSNumber", "NSArray", "NSDictionary",
    "NSError", "_ANEInMemoryModelDescriptor", "_ANEInMemoryModel", "_ANERequest", "_ANEIOSurfaceObject",
    "IOSurface" };

typedef struct fobj {
    int kind, id, rc, dead, immortal, ignored;
    const char *clsName;          /* K_CLASS */
    char *str;                    /* K_STRING, K_ERROR (description) */
    unsigned char *bytes;         /* K_DATA, K_SURFACE memory */
    size_t len;                   /* K_DATA length, K_SURFACE alloc size */
    long long num;                /* K_NUMBER */
    struct fobj **items, **keys;  /* K_ARRAY, K_DICT (retained) */
    int count;
    /* K_DESC: mil (NSData), weights (NSDictionary or NULL); K_MODEL: desc; K_SURFOBJ: surface;
       K_REQUEST: inputs, inIdx, outputs, outIdx, procIdx */
    struct fobj *ref[5];
    int state;                    /* K_MODEL: 0 created, 1 compiled, 2 loaded, 3 unloaded */
    char hex[512];                /* K_MODEL: hexStringIdentifier, 64+1+64+1+64 characters */
    int locked;                   /* K_SURFACE lock depth */
    struct fobj *perf;            /* K_REQUEST: perfStats (profile 27, H2) */
    long long ioRow[2][64], ioRows[2][64]; int nio[2];   /* K_MODEL: row bytes and row count of each input/output (H4) */
} fobj;

/* ---- registry, log, errors, knobs ---- */

static fobj **g_objs; static int g_nobjs, g_capobjs;
static char **g_log; static int g_nlog, g_caplog;
static char **g_err; static int g_nerr, g_caperr;
static char *g_failCompile;       /* fake_set_fail_compile (a test knob) */
static char *g_identifierOverride; /* fake_set_identifier (a test knob): what hexStringIdentifier returns instead of rule D3's value */
static int g_leakAfter = -1;      /* fake_set_leak_after: compiles that succeed before the emulated leak */
static int g_compiles;            /* successful compiles since reset */
static int g_realCompiles;        /* compiles since reset */
static int g_daemonLoads;         /* loads of a program aned had, without a compile by that model object */
static char g_refuseDialect[32];  /* fake_set_refuse_dialect */
static char g_daemonDir[4096];    /* aned's cache of compiled programs: one empty directory per identifier */
static const char *g_evaluatingHex; /* the model whose evaluate is running the hook */
static long long g_minSurface;    /* fake_set_min_surface_bytes (knob S1: Orion #4 ~48 KB vs ironmill 16 KB) */
static char g_subType[64] = "h16g"; /* knob A4: maderix README "(M4, H16G)"; PR #50 "h17" */
static int g_macos = 26;          /* fake_set_macos: the OS profile (26: macOS 15/26 rules; 27: adds H1-H4) */
static char g_tmpdir[4096];
static void (*g_hook)(int, void **, long long *, int, void **, long long *);

/* autorelease pools: a stack of object lists */
#define MAX_POOLS 64
static fobj **g_pool[MAX_POOLS]; static int g_poolN[MAX_POOLS], g_poolCap[MAX_POOLS];
static int g_depth;

static void push_str(char ***arr, int *n, int *cap, const char *s) {
    if (*n == *cap) { *cap = *cap ? *cap * 2 : 256; *arr = realloc(*arr, sizeof(char *) * *cap); }
    (*arr)[(*n)++] = strdup(s);
}

static void logf_(const char *fmt, ...) {
    char buf[8192]; va_list ap; va_start(ap, fmt); vsnprintf(buf, sizeof buf, fmt, ap); va_end(ap);
    push_str(&g_log, &g_nlog, &g_caplog, buf);
}

static void errf(const char *fmt, ...) {
    char buf[4096]; va_list ap; va_start(ap, fmt); vsnprintf(buf, sizeof buf, fmt, ap); va_end(ap);
    push_str(&g_err, &g_nerr, &g_caperr, buf);
    logf_("error\t\t\t%s\t", buf);
}

static fobj *new_obj(int kind) {
    fobj *o = calloc(1, sizeof(fobj));
    o->kind = kind; o->rc = 1; o->id = g_nobjs + 1;
    if (g_nobjs == g_capobjs) { g_capobjs = g_capobjs ? g_capobjs * 2 : 1024; g_objs = realloc(g_objs, sizeof(fobj *) * g_capobjs); }
    g_objs[g_nobjs++] = o;
    return o;
}

static void ensure_registered(void);
static int known(const void *p) {
    ensure_registered();
    for (int i = g_nobjs - 1; i >= 0; i--) if (g_objs[i] == p) return 1;
    return 0;
}

static fobj *as_obj(void *p) { return (p && known(p)) ? (fobj *)p : NULL; }

static void release_obj(fobj *o);

static void dealloc(fobj *o) {
    o->dead = 1;
    for (int i = 0; i < o->count; i++) {
        if (o->items) release_obj(o->items[i]);
        if (o->keys) release_obj(o->keys[i]);
    }
    for (int i = 0; i < 5; i++) if (o->ref[i]) release_obj(o->ref[i]);
    if (o->perf) release_obj(o->perf);
    if (o->kind == K_SURFACE) { free(o->bytes); o->bytes = NULL; }
}

static void retain_obj(fobj *o) { if (o && !o->immortal) o->rc++; }

static void release_obj(fobj *o) {
    if (!o || o->immortal) return;
    if (o->dead) { errf("release of deallocated %s#%d", KIND_NAMES[o->kind], o->id); return; }
    if (--o->rc == 0) dealloc(o);
}

static fobj *autorelease(fobj *o) {
    if (g_depth == 0) { errf("autorelease of %s#%d with no pool in place (leaks on macOS)", KIND_NAMES[o->kind], o->id); return o; }
    int d = g_depth - 1;
    if (g_poolN[d] == g_poolCap[d]) { g_poolCap[d] = g_poolCap[d] ? g_poolCap[d] * 2 : 64; g_pool[d] = realloc(g_pool[d], sizeof(fobj *) * g_poolCap[d]); }
    g_pool[d][g_poolN[d]++] = o;
    return o;
}

/* short description of an argument or result */
static void describe(fobj *o, char *buf, size_t n) {
    if (!o) { snprintf(buf, n, "nil"); return; }
    switch (o->kind) {
    case K_CLASS: snprintf(buf, n, "class:%s", o->clsName); break;
    case K_STRING: snprintf(buf, n, "NSString(\"%.60s\")", o->str); break;
    case K_DATA: snprintf(buf, n, "NSData(len=%zu)", o->len); break;
    case K_NUMBER: snprintf(buf, n, "NSNumber(%lld)", o->num); break;
    case K_ARRAY: case K_DICT: {
        size_t k = (size_t)snprintf(buf, n, o->kind == K_ARRAY ? "NSArray[" : "NSDictionary{");
        for (int i = 0; i < o->count && k < n; i++) {
            char a[512], b[512];
            describe(o->items[i], b, sizeof b);
            if (o->kind == K_DICT) { describe(o->keys[i], a, sizeof a); k += (size_t)snprintf(buf + k, n - k, "%s%s=%s", i ? "," : "", a, b); }
            else k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "", b);
        }
        if (k < n) snprintf(buf + k, n - k, o->kind == K_ARRAY ? "]" : "}");
        break;
    }
    default: snprintf(buf, n, "%s#%d", KIND_NAMES[o->kind], o->id);
    }
}

static const char *desc_ptr(void *p, char *buf, size_t n) {
    if (!p) snprintf(buf, n, "nil");
    else if (known(p)) describe((fobj *)p, buf, n);
    else snprintf(buf, n, "ptr");
    return buf;
}

/* ---- classes and selectors ---- */

static fobj CLASSES[] = {
    { .kind = K_CLASS, .immortal = 1, .clsName = "NSString" },
    { .kind = K_CLASS, .immortal = 1, .clsName = "NSData" },
    { .kind = K_CLASS, .immortal = 1, .clsName = "NSNumber" },
    { .kind = K_CLASS, .immortal = 1, .clsName = "NSArray" },
    { .kind = K_CLASS, .immortal = 1, .clsName = "NSDictionary" },
    { .kind = K_CLASS, .immortal = 1, .clsName = "_ANEInMemoryModelDescriptor" },
    { .kind = K_CLASS, .immortal = 1, .clsName = "_ANEInMemoryModel" },
    { .kind = K_CLASS, .immortal = 1, .clsName = "_ANERequest" },
    { .kind = K_CLASS, .immortal = 1, .clsName = "_ANEIOSurfaceObject" },
    { .kind = K_CLASS, .immortal = 1, .clsName = "_ANEDeviceInfo" },
};
#define NCLASSES (int)(sizeof CLASSES / sizeof CLASSES[0])

/* classes macOS 27 (382.x) added to AppleNeuralEngine ([ipsw-27], [ipsw-382.100] in the legend; docs/macos27-ane.md
   C1, C5, C9): objc_getClass finds them only under the 27 profile, so doctor's capability fingerprint can be tested */
static fobj CLASSES_27[] = {
    { .kind = K_CLASS, .immortal = 1, .clsName = "_ANEHashEncoding" },
    { .kind = K_CLASS, .immortal = 1, .clsName = "_ANECloneHelper" },
    { .kind = K_CLASS, .immortal = 1, .clsName = "_ANESandboxingHelper" },
};
#define NCLASSES_27 (int)(sizeof CLASSES_27 / sizeof CLASSES_27[0])

/* kIOSurface* keys: immortal string objects, exported as `const CFStringRef` data symbols like Apple's */
static fobj S_WIDTH = { .kind = K_STRING, .immortal = 1, .str = "IOSurfaceWidth" };
static fobj S_HEIGHT = { .kind = K_STRING, .immortal = 1, .str = "IOSurfaceHeight" };
static fobj S_BPE = { .kind = K_STRING, .immortal = 1, .str = "IOSurfaceBytesPerElement" };
static fobj S_BPR = { .kind = K_STRING, .immortal = 1, .str = "IOSurfaceBytesPerRow" };
static fobj S_ALLOC = { .kind = K_STRING, .immortal = 1, .str = "IOSurfaceAllocSize" };
static fobj S_PIXFMT = { .kind = K_STRING, .immortal = 1, .str = "IOSurfacePixelFormat" };
const void *kIOSurfaceWidth = &S_WIDTH;
const void *kIOSurfaceHeight = &S_HEIGHT;
const void *kIOSurfaceBytesPerElement = &S_BPE;
const void *kIOSurfaceBytesPerRow = &S_BPR;
const void *kIOSurfaceAllocSize = &S_ALLOC;
const void *kIOSurfacePixelFormat = &S_PIXFMT;

static void register_static(fobj *o) {
    if (g_nobjs == g_capobjs) { g_capobjs = g_capobjs ? g_capobjs * 2 : 1024; g_objs = realloc(g_objs, sizeof(fobj *) * g_capobjs); }
    g_objs[g_nobjs++] = o;
    o->id = g_nobjs;
}

static int registered;
static void ensure_registered(void) {
    if (registered) return;
    registered = 1;
    for (int i = 0; i < NCLASSES; i++) register_static(&CLASSES[i]);
    for (int i = 0; i < NCLASSES_27; i++) register_static(&CLASSES_27[i]);
    fobj *keys[] = { &S_WIDTH, &S_HEIGHT, &S_BPE, &S_BPR, &S_ALLOC, &S_PIXFMT };
    for (int i = 0; i < 6; i++) register_static(keys[i]);
}

void *objc_getClass(const char *name) {
    ensure_registered();
    for (int i = 0; i < NCLASSES; i++) if (strcmp(CLASSES[i].clsName, name) == 0) { logf_("objc_getClass\t\t\t%s\tclass:%s", name, name); return &CLASSES[i]; }
    if (g_macos >= 27)
        for (int i = 0; i < NCLASSES_27; i++) if (strcmp(CLASSES_27[i].clsName, name) == 0) { logf_("objc_getClass\t\t\t%s\tclass:%s", name, name); return &CLASSES_27[i]; }
    logf_("objc_getClass\t\t\t%s\tnil", name);
    return NULL;
}

static char **g_sels; static int g_nsels, g_capsels;
void *sel_registerName(const char *name) {
    for (int i = 0; i < g_nsels; i++) if (strcmp(g_sels[i], name) == 0) return g_sels[i];
    push_str(&g_sels, &g_nsels, &g_capsels, name);
    logf_("sel_registerName\t\t\t%s\t", name);
    return g_sels[g_nsels - 1];
}

/* ---- memory management entry points ---- */

void *objc_retain(void *p) {
    fobj *o = as_obj(p);
    if (!o) { if (p) errf("objc_retain of unknown pointer"); return p; }
    if (o->dead) errf("objc_retain of deallocated %s#%d", KIND_NAMES[o->kind], o->id);
    retain_obj(o);
    char d[256]; describe(o, d, sizeof d);
    logf_("retain\t%s\t\t\trc=%d", d, o->rc);
    return p;
}

void objc_release(void *p) {
    fobj *o = as_obj(p);
    if (!o) { if (p) errf("objc_release of unknown pointer"); return; }
    char d[256]; describe(o, d, sizeof d);
    release_obj(o);
    logf_("release\t%s\t\t\trc=%d", d, o->rc);
}

void *CFRetain(void *p) {
    fobj *o = as_obj(p);
    if (!o) { errf("CFRetain of unknown or NULL pointer"); return p; }
    retain_obj(o);
    char d[256]; describe(o, d, sizeof d);
    logf_("CFRetain\t%s\t\t\trc=%d", d, o->rc);
    return p;
}

void CFRelease(void *p) {
    fobj *o = as_obj(p);
    if (!o) { errf("CFRelease of unknown or NULL pointer (crashes on macOS)"); return; }
    char d[256]; describe(o, d, sizeof d);
    release_obj(o);
    logf_("CFRelease\t%s\t\t\trc=%d", d, o->rc);
}

void *objc_autoreleasePoolPush(void) {
    if (g_depth == MAX_POOLS) { errf("autorelease pools nested too deep"); return NULL; }
    g_poolN[g_depth] = 0;
    g_depth++;
    logf_("poolPush\t\t\t\tdepth=%d", g_depth);
    return (void *)(intptr_t)g_depth;
}

void objc_autoreleasePoolPop(void *token) {
    int t = (int)(intptr_t)token;
    if (t < 1 || t > g_depth) { errf("objc_autoreleasePoolPop with bad token %d (depth %d)", t, g_depth); return; }
    while (g_depth >= t) {
        int d = g_depth - 1;
        for (int i = 0; i < g_poolN[d]; i++) release_obj(g_pool[d][i]);
        g_poolN[d] = 0;
        g_depth--;
    }
    logf_("poolPop\t\t\t\tdepth=%d", g_depth);
}

/* ---- Foundation object constructors (all +0, autoreleased) ---- */

static fobj *mk_string(const char *s) { fobj *o = new_obj(K_STRING); o->str = strdup(s); return autorelease(o); }
static fobj *mk_number(long long v) { fobj *o = new_obj(K_NUMBER); o->num = v; return autorelease(o); }
static fobj *mk_error(const char *msg) { fobj *o = new_obj(K_ERROR); o->str = strdup(msg); return autorelease(o); }
/* an NSError with a domain (kept in hex), code (num) and an NSUnderlyingError (ref[0], retained) */
static fobj *mk_error_full(const char *domain, long long code, const char *msg, fobj *underlying) {
    fobj *o = mk_error(msg);
    snprintf(o->hex, sizeof o->hex, "%s", domain);
    o->num = code;
    if (underlying) { o->ref[0] = underlying; underlying->rc++; }
    return o;
}

static fobj *mk_container(int kind, void **objs, void **keys, long long n) {
    fobj *o = new_obj(kind);
    o->count = (int)n;
    o->items = calloc((size_t)(n ? n : 1), sizeof(fobj *));
    if (kind == K_DICT) o->keys = calloc((size_t)(n ? n : 1), sizeof(fobj *));
    for (long long i = 0; i < n; i++) {
        fobj *v = as_obj(objs[i]);
        if (!v) errf("%s element %lld is nil or not an object (NSInvalidArgumentException on macOS)", KIND_NAMES[kind], i);
        retain_obj(v); o->items[i] = v;
        if (kind == K_DICT) { fobj *k = as_obj(keys[i]); if (!k) errf("NSDictionary key %lld is nil", i); retain_obj(k); o->keys[i] = k; }
    }
    return autorelease(o);
}

static fobj *dict_get(fobj *d, const char *key) {
    if (!d || d->kind != K_DICT) return NULL;
    for (int i = 0; i < d->count; i++) if (d->keys[i] && d->keys[i]->kind == K_STRING && strcmp(d->keys[i]->str, key) == 0) return d->items[i];
    return NULL;
}

void *NSTemporaryDirectory(void) {
    const char *t = g_tmpdir[0] ? g_tmpdir : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp/");
    char buf[4200]; snprintf(buf, sizeof buf, "%s%s", t, t[strlen(t) - 1] == '/' ? "" : "/");
    fobj *s = mk_string(buf);
    logf_("NSTemporaryDirectory\t\t\t\t%s", buf);
    return s;
}

/* ---- helpers for the ANE fakes ---- */

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ULL; }
    return h;
}


/* SHA-256 (FIPS 180-4), for the identifier rule F1 below. */
typedef struct { uint32_t h[8]; unsigned char buf[64]; size_t nbuf; uint64_t bits; } sha256;
static const uint32_t SHA_K[64] = {
    0x428a2f98,0x71374491,0xb5c0fbcf,0xe9b5dba5,0x3956c25b,0x59f111f1,0x923f82a4,0xab1c5ed5,0xd807aa98,0x12835b01,
    0x243185be,0x550c7dc3,0x72be5d74,0x80deb1fe,0x9bdc06a7,0xc19bf174,0xe49b69c1,0xefbe4786,0x0fc19dc6,0x240ca1cc,
    0x2de92c6f,0x4a7484aa,0x5cb0a9dc,0x76f988da,0x983e5152,0xa831c66d,0xb00327c8,0xbf597fc7,0xc6e00bf3,0xd5a79147,
    0x06ca6351,0x14292967,0x27b70a85,0x2e1b2138,0x4d2c6dfc,0x53380d13,0x650a7354,0x766a0abb,0x81c2c92e,0x92722c85,
    0xa2bfe8a1,0xa81a664b,0xc24b8b70,0xc76c51a3,0xd192e819,0xd6990624,0xf40e3585,0x106aa070,0x19a4c116,0x1e376c08,
    0x2748774c,0x34b0bcb5,0x391c0cb3,0x4ed8aa4a,0x5b9cca4f,0x682e6ff3,0x748f82ee,0x78a5636f,0x84c87814,0x8cc70208,
    0x90befffa,0xa4506ceb,0xbef9a3f7,0xc67178f2 };
#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
static void sha_block(sha256 *c, const unsigned char *p) {
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++) w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, c->h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = v[7] + (ROR(v[4], 6) ^ ROR(v[4], 11) ^ ROR(v[4], 25)) + ((v[4] & v[5]) ^ (~v[4] & v[6])) + SHA_K[i] + w[i];
        uint32_t t2 = (ROR(v[0], 2) ^ ROR(v[0], 13) ^ ROR(v[0], 22)) + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof(uint32_t));
        v[4] += t1; v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++) c->h[i] += v[i];
}
static void sha_init(sha256 *c) {
    static const uint32_t H0[8] = { 0x6a09e667,0xbb67ae85,0x3c6ef372,0xa54ff53a,0x510e527f,0x9b05688c,0x1f83d9ab,0x5be0cd19 };
    memcpy(c->h, H0, sizeof H0); c->nbuf = 0; c->bits = 0;
}
static void sha_update(sha256 *c, const unsigned char *p, size_t n) {
    c->bits += (uint64_t)n * 8;
    while (n--) { c->buf[c->nbuf++] = *p++; if (c->nbuf == 64) { sha_block(c, c->buf); c->nbuf = 0; } }
}
/* the digest as 64 upper-case hex digits ("%02X" per byte, _ANEHashEncoding convertToHexString:length:) */
static void sha_final_hex(sha256 *c, char *out) {
    uint64_t bits = c->bits; unsigned char pad = 0x80, zero = 0, len[8];
    sha_update(c, &pad, 1);
    while (c->nbuf != 56) sha_update(c, &zero, 1);
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha_update(c, len, 8);
    for (int i = 0; i < 8; i++) snprintf(out + 8 * i, 9, "%08X", c->h[i]);
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

/* The first value of an NSDictionary as -allValues/-allKeys enumerate it (rule D4): "data" when there is such a key,
   else the first inserted. */
static fobj *first_value(fobj *d) {
    if (!d || d->kind != K_DICT || d->count == 0) return NULL;
    fobj *data = dict_get(d, "data");
    return data ? data : d->items[0];
}

/* An Objective-C exception raised inside a framework call (rule X1): kept until the guarded entry point
   ane4j_guarded_send returns it; an unguarded objc_msgSend that raises is a contract error (on macOS the process aborts). */
static char g_excName[256], g_excReason[1024];
static int g_excPending;
static int g_inGuard;             /* inside ane4j_guarded_send */
static char g_throwSel[256], g_throwName[256], g_throwReason[1024];   /* fake_set_throw */
static int g_throwLeft = -1;      /* raises left for fake_set_throw (-1: every send; a test knob, not an observed rule) */
static void raise_exception(const char *name, const char *reason) {
    snprintf(g_excName, sizeof g_excName, "%s", name);
    snprintf(g_excReason, sizeof g_excReason, "%.1000s", reason);
    g_excPending = 1;
    logf_("raise\t\t\t%s\t%s", name, reason);
}


/* Deletes a file tree; 1 when something was there. */
static int remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char child[8192]; snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            remove_tree(child);
        }
        if (d) closedir(d);
        rmdir(path);
    } else unlink(path);
    return 1;
}

/* A2: aned keeps compiled programs by identifier, outside the client process ([cache-probe]: "loadWithQoS works
   without compileWithQoS ... because the aned daemon caches compiled programs keyed by hexStringIdentifier"); here a
   directory per identifier under fake_set_daemon_dir (or $FAKE_ANED_DIR), so a second process sees it too. */
static void daemon_path(const char *id, char *out, size_t n) { snprintf(out, n, "%s/%s", g_daemonDir, id); }
static int daemon_has(const char *id) {
    if (!g_daemonDir[0]) return 0;
    char p[8192]; daemon_path(id, p, sizeof p);
    struct stat st; return stat(p, &st) == 0;
}
static void daemon_store(const char *id) {
    if (!g_daemonDir[0]) return;
    char p[8192]; daemon_path(id, p, sizeof p);
    mkdir(g_daemonDir, 0700); mkdir(p, 0700);
}
static void daemon_purge(const char *id) {
    if (!g_daemonDir[0]) return;
    char p[8192]; daemon_path(id, p, sizeof p);
    remove_tree(p);
}

static void set_error(void **errOut, const char *msg) {
    fobj *e = mk_error(msg);
    if (errOut) *errOut = e;
}

/* H1: the files under <dir>/weights (the compiler service lists the bundle itself); 0 when there is no such directory */
static int count_weight_files(const char *dir, char *first, char *second, size_t n) {
    char wdir[4800]; snprintf(wdir, sizeof wdir, "%s/weights", dir);
    DIR *d = opendir(wdir); if (!d) return 0;
    int count = 0; struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (count == 0) snprintf(first, n, "weights/%s", e->d_name);
        else if (count == 1) snprintf(second, n, "weights/%s", e->d_name);
        count++;
    }
    closedir(d);
    return count;
}

/* H3: whether anything under dir is a symbolic link */
static int contains_symlink(const char *dir) {
    DIR *d = opendir(dir); if (!d) return 0;
    struct dirent *e; int found = 0;
    while (!found && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[8192]; snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) != 0) continue;
        if (S_ISLNK(st.st_mode)) found = 1;
        else if (S_ISDIR(st.st_mode)) found = contains_symlink(p);
    }
    closedir(d);
    return found;
}

/* H4: the row bytes (last axis x element size) and row count of the tensor type text "tensor<fp16, [1, 64, 1, 16]>" */
static void tensor_rows(const char *t, long long *rowBytes, long long *rows) {
    int elem = strncmp(t + 7, "fp32", 4) == 0 ? 4 : 2;
    long long dims[8]; int nd = 0;
    const char *b = strchr(t, '[');
    while (b && *b != ']' && nd < 8) { b++; dims[nd++] = strtoll(b, (char **)&b, 10); while (*b == ' ') b++; if (*b != ',') break; }
    *rowBytes = nd ? dims[nd - 1] * elem : 0;
    *rows = 1; for (int i = 0; i + 1 < nd; i++) *rows *= dims[i];
}

/* H4: the i-th surface of a request is the i-th tensor in binding order, alphabetical by MIL name (ORION #3, #13, as
   ane4j's SurfacePlan.BINDING_ORDER): the parsed rows are sorted into that order (byte order, as for ASCII names) */
static void sort_io_rows(fobj *m, int k, char names[64][256]) {
    for (int i = 1; i < m->nio[k]; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[256]; memcpy(t, names[j], 256); memcpy(names[j], names[j - 1], 256); memcpy(names[j - 1], t, 256);
            long long r = m->ioRow[k][j]; m->ioRow[k][j] = m->ioRow[k][j - 1]; m->ioRow[k][j - 1] = r;
            long long n = m->ioRows[k][j]; m->ioRows[k][j] = m->ioRows[k][j - 1]; m->ioRows[k][j - 1] = n;
        }
}

/* H4: reads the input types from "func main<...>(tensor<...> a, ...)" and the output types from their definitions */
static void parse_io_rows(fobj *m, const unsigned char *mil, size_t len) {
    char *text = malloc(len + 1); memcpy(text, mil, len); text[len] = 0;
    static char names[2][64][256];
    m->nio[0] = m->nio[1] = 0;
    char *f = strstr(text, "func main<");
    char *p = f ? strchr(f, '(') : NULL;
    while (p && m->nio[0] < 64 && (p = strstr(p, "tensor<")) && p < strchr(f, '{')) {
        tensor_rows(p, &m->ioRow[0][m->nio[0]], &m->ioRows[0][m->nio[0]]);
        p = strchr(p, '>') + 1;
        while (*p == ' ') p++;
        int k = 0;
        while (*p && *p != ',' && *p != ')' && *p != ' ' && k < 255) names[0][m->nio[0]][k++] = *p++;
        names[0][m->nio[0]][k] = 0;
        m->nio[0]++;
    }
    char *arrow = f ? strstr(f, "} -> (") : NULL;
    if (arrow) {
        char *q = arrow + 6;
        while (*q && *q != ')' && m->nio[1] < 64) {
            char name[256]; int k = 0;
            while (*q == ' ' || *q == ',') q++;
            while (*q && *q != ',' && *q != ')' && *q != ' ' && k < 255) name[k++] = *q++;
            name[k] = 0;
            if (!k) break;
            char pat[300]; snprintf(pat, sizeof pat, "> %s = ", name);
            char *def = strstr(text, pat);
            char *ty = def; while (ty && ty > text && strncmp(ty, "tensor<", 7) != 0) ty--;
            if (ty && def) { tensor_rows(ty, &m->ioRow[1][m->nio[1]], &m->ioRows[1][m->nio[1]]); memcpy(names[1][m->nio[1]], name, 256); m->nio[1]++; }
        }
    }
    sort_io_rows(m, 0, names[0]);
    sort_io_rows(m, 1, names[1]);
    free(text);
}

static long long stride64(long long rowBytes) { return (rowBytes + 63) / 64 * 64; }

/* checks that dir/rel exists with exactly len bytes equal to want; appends "rel:len:hash" to files */
static int check_file(const char *dir, const char *rel, const unsigned char *want, size_t wlen, char *files, size_t fn, char *why, size_t wn) {
    char path[8192]; snprintf(path, sizeof path, "%s/%s", dir, rel);
    size_t len = 0; unsigned char *got = read_file(path, &len);
    if (!got) { snprintf(why, wn, "fake: %s missing (write it before compileWithQoS:options:error:)", path); return 0; }
    int same = len == wlen && memcmp(got, want, len) == 0;
    size_t k = strlen(files);
    snprintf(files + k, fn - k, "%s%s:%zu:%016llx", k ? "|" : "", rel, len, (unsigned long long)fnv(0xcbf29ce484222325ULL, got, len));
    free(got);
    if (!same) { snprintf(why, wn, "fake: %s differs from the descriptor's bytes", path); return 0; }
    return 1;
}

static int require_pool(const char *sel) {
    if (g_depth > 0) return 1;
    errf("%s sent outside an autorelease pool", sel);
    return 0;
}

/* ---- objc_msgSend ---- */

#define YES ((void *)(intptr_t)1)
#define NO ((void *)(intptr_t)0)

static void *send(fobj *o, const char *s, void *a, void *b, void *c, void *d, void *e, void *f, void *g, char *args, size_t an);

void *objc_msgSend(void *self, void *sel, void *a, void *b, void *c, void *d, void *e, void *f, void *g) {
    const char *s = (const char *)sel;
    char recv[256], args[4096] = "", ret[1024];
    if (!self) { logf_("send\tnil\t%s\t\tnil", s); return NULL; }
    fobj *o = as_obj(self);
    if (!o) { errf("message %s to unknown pointer", s); return NULL; }
    describe(o, recv, sizeof recv);
    if (o->dead) { errf("message %s to deallocated %s", s, recv); return NULL; }
    void *r = send(o, s, a, b, c, d, e, f, g, args, sizeof args);
    if (g_excPending && !g_inGuard) {
        g_excPending = 0;
        errf("%s raised %s (%s) through an unguarded objc_msgSend: the process aborts on macOS", s, g_excName, g_excReason);
    }
    /* BOOL-returning selectors end in "error:"; the others return objects, pointers or integers */
    size_t sl = strlen(s);
    if ((sl >= 6 && strcmp(s + sl - 6, "error:") == 0) || strcmp(s, "compiledModelExists") == 0) snprintf(ret, sizeof ret, "%s", r ? "YES" : "NO");
    else if (strcmp(s, "UTF8String") == 0) snprintf(ret, sizeof ret, "char*");
    else if (strcmp(s, "state") == 0) snprintf(ret, sizeof ret, "%lld", (long long)(intptr_t)r);
    else desc_ptr(r, ret, sizeof ret);
    logf_("send\t%s\t%s\t%s\t%s", recv, s, args, ret);
    return r;
}

const char *sel_getName(void *sel) { return (const char *)sel; }

/* The entry point of ane4j's @try/@catch trampoline (src/main/objc/ane4j_guard.m), same prototype: calls imp with the
   receiver, selector and seven argument words; 1 with the exception's name and reason when one was raised (X1). */
int ane4j_guarded_send(void *imp, void *self, void *sel, void *a1, void *a2, void *a3, void *a4, void *a5, void *a6,
                       void *a7, uintptr_t *result, char *name, char *reason, size_t cap) {
    typedef void *(*send_fn)(void *, void *, void *, void *, void *, void *, void *, void *, void *);
    g_inGuard++;
    void *r = ((send_fn)imp)(self, sel, a1, a2, a3, a4, a5, a6, a7);
    g_inGuard--;
    if (g_excPending) {
        g_excPending = 0;
        snprintf(name, cap, "%s", g_excName);
        snprintf(reason, cap, "%s", g_excReason);
        return 1;
    }
    *result = (uintptr_t)r;
    return 0;
}

#define ARGS(...) snprintf(args, an, __VA_ARGS__)
#define IS(sel) (strcmp(s, sel) == 0)

static void *send(fobj *o, const char *s, void *a, void *b, void *c, void *d, void *e, void *f, void *g, char *args, size_t an) {
    char da[1024], db[1024], dc[1024], dd[1024], de[1024], df[1024], dg[1024], why[8400];
    int isClass = o->kind == K_CLASS;
    const char *cls = isClass ? o->clsName : NULL;

    if (g_throwSel[0] && IS(g_throwSel) && g_throwLeft != 0) {   /* X1 on demand: the framework raises inside this selector */
        if (g_throwLeft > 0) g_throwLeft--;
        ARGS("(raises)");
        raise_exception(g_throwName, g_throwReason);
        return NULL;
    }

    /* NSObject protocol, any receiver */
    if (IS("retain")) { retain_obj(o); ARGS("rc=%d", o->rc); return o; }
    if (IS("release")) { release_obj(o); ARGS("rc=%d", o->rc); return NULL; }
    if (IS("description")) {
        if (o->kind == K_STRING) return o;
        char buf[1024]; describe(o, buf, sizeof buf);
        return mk_string(o->kind == K_ERROR ? o->str : buf);
    }

    if (isClass && strcmp(cls, "NSString") == 0 && IS("stringWithUTF8String:")) {
        ARGS("char*(\"%.60s\")", a ? (const char *)a : "(null)");
        if (!a) { errf("stringWithUTF8String: NULL"); return NULL; }
        return mk_string((const char *)a);
    }
    if (isClass && strcmp(cls, "NSData") == 0 && IS("dataWithBytes:length:")) {
        size_t n = (size_t)(uintptr_t)b;
        ARGS("ptr|u64:%zu", n);
        fobj *x = new_obj(K_DATA); x->len = n; x->bytes = malloc(n ? n : 1);
        if (n) memcpy(x->bytes, a, n);
        return autorelease(x);
    }
    if (isClass && strcmp(cls, "NSNumber") == 0 && IS("numberWithInt:")) { int v = (int)(intptr_t)a; ARGS("i32:%d", v); return mk_number(v); }
    if (isClass && strcmp(cls, "NSNumber") == 0 && IS("numberWithUnsignedLongLong:")) { unsigned long long v = (unsigned long long)(uintptr_t)a; ARGS("u64:%llu", v); return mk_number((long long)v); }
    if (isClass && strcmp(cls, "NSArray") == 0 && IS("arrayWithObjects:count:")) {
        long long n = (long long)(intptr_t)b; ARGS("id*|u64:%lld", n);
        return mk_container(K_ARRAY, (void **)a, NULL, n);
    }
    if (isClass && strcmp(cls, "NSDictionary") == 0 && IS("dictionaryWithObjects:forKeys:count:")) {
        long long n = (long long)(intptr_t)c; ARGS("id*|id*|u64:%lld", n);
        return mk_container(K_DICT, (void **)a, (void **)b, n);
    }
    if (o->kind == K_STRING && IS("UTF8String")) return o->str;
    if (o->kind == K_ERROR && IS("localizedDescription")) return mk_string(o->str);
    /* the fake's own errors (set_error) have no domain: ane4j then prints the description alone */
    if (o->kind == K_ERROR && IS("domain")) return o->hex[0] ? mk_string(o->hex) : NULL;
    if (o->kind == K_ERROR && IS("code")) return (void *)(intptr_t)o->num;
    if (o->kind == K_ERROR && IS("userInfo")) {
        if (!o->ref[0]) return mk_container(K_DICT, NULL, NULL, 0);
        fobj *key = mk_string("NSUnderlyingError");
        void *objs[1] = { o->ref[0] }, *keys[1] = { key };
        return mk_container(K_DICT, objs, keys, 1);
    }
    if (o->kind == K_DICT && IS("objectForKey:")) {
        fobj *k = as_obj(a);
        ARGS("%s", desc_ptr(a, da, sizeof da));
        return k && k->kind == K_STRING ? dict_get(o, k->str) : NULL;
    }

    /* 1. +[_ANEInMemoryModelDescriptor modelWithMILText:weights:optionsPlist:] (rules D1-D4 in the header) */
    if (isClass && strcmp(cls, "_ANEInMemoryModelDescriptor") == 0 && IS("modelWithMILText:weights:optionsPlist:")) {
        ARGS("%s|%s|%s", desc_ptr(a, da, sizeof da), desc_ptr(b, db, sizeof db), desc_ptr(c, dc, sizeof dc));
        fobj *mil = as_obj(a), *w = as_obj(b), *opt = as_obj(c);
        if (!a) return NULL;   /* D1 */
        if (!mil || mil->kind != K_DATA) { errf("modelWithMILText: MIL must be NSData (UTF-8), got %s", da); return NULL; }
        if (b && (!w || w->kind != K_DICT)) { errf("modelWithMILText: weights must be an NSDictionary, got %s", db); return NULL; }
        if (!b) return NULL;   /* D1 */
        if (c) errf("modelWithMILText: optionsPlist should be nil (every hardware-proven caller passes nil), got %s", dc);
        for (int i = 0; i < w->count; i++) {
            fobj *k = w->keys[i], *v = w->items[i];
            fobj *off = dict_get(v, "offset"), *data = dict_get(v, "data");
            if (!k || k->kind != K_STRING || strncmp(k->str, "@model_path/", 12) != 0) errf("weights key %d is not an \"@model_path/...\" string", i);
            if (!off || off->kind != K_NUMBER || !data || data->kind != K_DATA) errf("weights entry %d is not {offset: NSNumber, data: NSData}", i);
        }
        /* D2: an entry with no values makes the descriptor nil ("Empty weights dictionary for index=%@") */
        for (int i = 0; i < w->count; i++)
            if (!w->items[i] || w->items[i]->kind != K_DICT || w->items[i]->count == 0) return NULL;
        /* D3: SHA-256 of the MIL bytes; of 4 zero bytes then each entry's first value's bytes, keys sorted; of the
           options plist's bytes (nil: nothing). Joined "%@_%@_%@". */
        char milHash[65], weightsHash[65], optionsHash[65];
        sha256 h;
        sha_init(&h); sha_update(&h, mil->bytes, mil->len); sha_final_hex(&h, milHash);
        int order[4096], n = w->count < 4096 ? w->count : 4096;
        for (int i = 0; i < n; i++) order[i] = i;
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && strcmp(w->keys[order[j - 1]]->str, w->keys[order[j]]->str) > 0; j--) { int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t; }
        static const unsigned char zero4[4] = { 0, 0, 0, 0 };
        sha_init(&h); sha_update(&h, zero4, 4);
        for (int i = 0; i < n; i++) {
            fobj *first = first_value(w->items[order[i]]);
            if (!first || first->kind != K_DATA) {   /* D4: -bytes sent to a non-NSData value */
                char what[256]; describe(first, what, sizeof what);
                snprintf(why, sizeof why, "-[%s bytes]: unrecognized selector sent to instance", first ? KIND_NAMES[first->kind] : "nil");
                raise_exception("NSInvalidArgumentException", why);
                return NULL;
            }
            sha_update(&h, first->bytes, first->len);
        }
        sha_final_hex(&h, weightsHash);
        sha_init(&h); if (opt && opt->kind == K_DATA) sha_update(&h, opt->bytes, opt->len); sha_final_hex(&h, optionsHash);
        fobj *x = new_obj(K_DESC);
        x->ref[0] = mil; retain_obj(mil);
        x->ref[1] = w; retain_obj(w);
        x->str = malloc(200);
        snprintf(x->str, 200, "%s_%s_%s", milHash, weightsHash, optionsHash);
        return autorelease(x);
    }
    /* 2. +[_ANEInMemoryModel inMemoryModelWithDescriptor:] — the model keeps its descriptor and copies its identifier (D5) */
    if (isClass && strcmp(cls, "_ANEInMemoryModel") == 0 && IS("inMemoryModelWithDescriptor:")) {
        ARGS("%s", desc_ptr(a, da, sizeof da));
        fobj *dsc = as_obj(a);
        if (!dsc || dsc->kind != K_DESC) { errf("inMemoryModelWithDescriptor: wants a descriptor, got %s", da); return NULL; }
        fobj *m = new_obj(K_MODEL);
        m->ref[0] = dsc; retain_obj(dsc);
        snprintf(m->hex, sizeof m->hex, "%s", g_identifierOverride ? g_identifierOverride : dsc->str);
        return autorelease(m);
    }
    if (o->kind == K_MODEL && IS("hexStringIdentifier")) return mk_string(o->hex);
    if (o->kind == K_MODEL && IS("state")) return (void *)(intptr_t)o->state;

    /* 4. -[_ANEInMemoryModel compileWithQoS:options:error:] */
    if (o->kind == K_MODEL && IS("compileWithQoS:options:error:")) {
        unsigned qos = (unsigned)(uintptr_t)a;
        ARGS("u32:%u|%s|%s", qos, desc_ptr(b, db, sizeof db), c ? "NSError**" : "NULL");
        require_pool(s);
        fobj *opt = as_obj(b);
        if (!opt || opt->kind != K_DICT) errf("compileWithQoS: options must be an NSDictionary (@{}), got %s", db);
        if (o->state != 0) { set_error(c, "fake: compile of a model that is not freshly created"); return NO; }
        fobj *dsc = o->ref[0];
        if (g_failCompile) { set_error(c, g_failCompile); return NO; }
        if (g_leakAfter >= 0 && g_compiles >= g_leakAfter) {
            snprintf(why, sizeof why, "fake: ANECCompile() FAILED (emulated compiler leak after %d compiles)", g_leakAfter);
            set_error(c, why); return NO;
        }
        const char *t = g_tmpdir[0] ? g_tmpdir : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        char dir[4700]; snprintf(dir, sizeof dir, "%s/%s", t, o->hex);
        char files[16384] = "";
        fobj *mil = dsc->ref[0], *w = dsc->ref[1];
        int ok = check_file(dir, "model.mil", mil->bytes, mil->len, files, sizeof files, why, sizeof why);
        for (int i = 0; ok && w && i < w->count; i++) {
            fobj *data = dict_get(w->items[i], "data");
            ok = check_file(dir, w->keys[i]->str + 12, data->bytes, data->len, files, sizeof files, why, sizeof why);
        }
        logf_("compileFiles\t%s\t\t%s\t%s", dir, files, ok ? "ok" : why);
        if (!ok) { set_error(c, why); return NO; }
        if (g_macos >= 27) {
            if (contains_symlink(dir)) {   /* H3 */
                snprintf(why, sizeof why, "refusing model bundle containing a symbolic link: %s", dir);
                if (c) *(fobj **)c = mk_error_full("com.apple.appleneuralengine", 10, why, NULL);
                return NO;
            }
            char first[1024] = "", second[1024] = "";
            int nfiles = count_weight_files(dir, first, second, sizeof first);
            if (nfiles > 1) {               /* H1 */
                char inner[8192]; snprintf(inner, sizeof inner, "verifyBundleAtPath: hash mismatch for %s in bundle %s (TOCTOU?)", second, dir);
                fobj *under = mk_error_full("com.apple.appleneuralengine", 10, inner, NULL);
                if (c) *(fobj **)c = mk_error_full("com.apple.appleneuralengine", 10, "verifyBundleAtPath: invalid model", under);
                logf_("verifyBundle\t%s\t\t%d files under weights/\tCode=10", dir, nfiles);
                return NO;
            }
            parse_io_rows(o, mil->bytes, mil->len);   /* H4 */
        } else o->nio[0] = o->nio[1] = 0;
        if (g_refuseDialect[0]) {   /* a test knob: docs/ane-audit.md F7, the dialect M1/M2 accept is unknown */
            char tag[80]; snprintf(tag, sizeof tag, "func main<%s>", g_refuseDialect);
            if (memmem(mil->bytes, mil->len, tag, strlen(tag))) {
                snprintf(why, sizeof why, "_ANECompiler : ANECCompile() FAILED (fake: this chip refuses %s)", g_refuseDialect);
                set_error(c, why); return NO;
            }
        }
        /* C1: saveModelFiles writes each entry's first value to <dir>/<its key> (<dir>/data, rule D4); the compiler
           leaves net.plist (maderix PR #22 listed both after compile). A2: aned now has the program. */
        for (int i = 0; w && i < w->count; i++) {
            fobj *first = first_value(w->items[i]);
            char dataPath[4800]; snprintf(dataPath, sizeof dataPath, "%s/data", dir);
            FILE *df = fopen(dataPath, "wb"); if (df) { fwrite(first->bytes, 1, first->len, df); fclose(df); }
        }
        char plist[4800]; snprintf(plist, sizeof plist, "%s/net.plist", dir);
        FILE *pf = fopen(plist, "w"); if (pf) { fprintf(pf, "<plist><!-- fake net %s --></plist>\n", o->hex); fclose(pf); }
        daemon_store(o->hex);
        g_realCompiles++;
        o->state = 1; g_compiles++;
        return YES;
    }
    /* A1: -[_ANEInMemoryModel compiledModelExists] asks aned (compiledModelExistsMatchingHash:) */
    if (o->kind == K_MODEL && IS("compiledModelExists")) return daemon_has(o->hex) ? YES : NO;
    /* A3: -[_ANEInMemoryModel purgeCompiledModel] (purgeCompiledModelMatchingHash:) */
    if (o->kind == K_MODEL && IS("purgeCompiledModel")) { daemon_purge(o->hex); return NULL; }
    /* 5. -[_ANEInMemoryModel loadWithQoS:options:error:] (L1) */
    if (o->kind == K_MODEL && IS("loadWithQoS:options:error:")) {
        unsigned qos = (unsigned)(uintptr_t)a;
        ARGS("u32:%u|%s|%s", qos, desc_ptr(b, db, sizeof db), c ? "NSError**" : "NULL");
        require_pool(s);
        if (o->state == 2) { set_error(c, "fake: load of a model that is already loaded"); return NO; }
        if (!daemon_has(o->hex)) {
            set_error(c, "fake: loadModel:options:qos:error: failed (aned has no compiled program for this identifier; "
                         "what the real load does then is not known, so ane4j compiles first)");
            return NO;
        }
        if (o->state != 1) { g_daemonLoads++; logf_("daemonLoad\t%s\t\t\t", o->hex); }
        if (g_macos >= 27) { fobj *m = o->ref[0]->ref[0]; parse_io_rows(o, m->bytes, m->len); }   /* H4 for a cached load too */
        else o->nio[0] = o->nio[1] = 0;
        o->state = 2;
        return YES;
    }
    /* 6. +[_ANEIOSurfaceObject objectWithIOSurface:] — the wrapper keeps its surface */
    if (isClass && strcmp(cls, "_ANEIOSurfaceObject") == 0 && IS("objectWithIOSurface:")) {
        ARGS("%s", desc_ptr(a, da, sizeof da));
        fobj *sf = as_obj(a);
        if (!sf || sf->kind != K_SURFACE) { errf("objectWithIOSurface: wants an IOSurfaceRef, got %s", da); return NULL; }
        fobj *x = new_obj(K_SURFOBJ); x->ref[0] = sf; retain_obj(sf);
        return autorelease(x);
    }
    /* 7. +[_ANERequest requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:] */
    if (isClass && strcmp(cls, "_ANERequest") == 0 && IS("requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:")) {
        ARGS("%s|%s|%s|%s|%s|%s|%s", desc_ptr(a, da, sizeof da), desc_ptr(b, db, sizeof db), desc_ptr(c, dc, sizeof dc),
             desc_ptr(d, dd, sizeof dd), desc_ptr(e, de, sizeof de), desc_ptr(f, df, sizeof df), desc_ptr(g, dg, sizeof dg));
        fobj *arr[4] = { as_obj(a), as_obj(b), as_obj(c), as_obj(d) };
        for (int i = 0; i < 4; i++) if (!arr[i] || arr[i]->kind != K_ARRAY) { errf("requestWith...: argument %d must be an NSArray", i + 1); return NULL; }
        for (int k = 0; k < 4; k += 2) {
            if (arr[k]->count != arr[k + 1]->count) errf("requestWith...: %d surfaces but %d indices", arr[k]->count, arr[k + 1]->count);
            for (int i = 0; i < arr[k]->count; i++) {
                if (!arr[k]->items[i] || arr[k]->items[i]->kind != K_SURFOBJ) errf("requestWith...: element %d is not an _ANEIOSurfaceObject", i);
                fobj *ix = i < arr[k + 1]->count ? arr[k + 1]->items[i] : NULL;
                if (!ix || ix->kind != K_NUMBER || ix->num != i) errf("requestWith...: index %d is not NSNumber(%d)", i, i);
            }
        }
        if (e || f) errf("requestWith...: weightsBuffer and perfStats should be nil");
        fobj *perf = as_obj(f);
        fobj *pi = as_obj(g);
        if (!pi || pi->kind != K_NUMBER) { errf("requestWith...: procedureIndex must be an NSNumber object, got %s", dg); return NULL; }
        fobj *x = new_obj(K_REQUEST);
        for (int i = 0; i < 4; i++) { x->ref[i] = arr[i]; retain_obj(arr[i]); }
        x->ref[4] = pi; retain_obj(pi);
        if (perf) { x->perf = perf; retain_obj(perf); }
        return autorelease(x);
    }
    /* 8. -[_ANEInMemoryModel evaluateWithQoS:options:request:error:] */
    if (o->kind == K_MODEL && IS("evaluateWithQoS:options:request:error:")) {
        unsigned qos = (unsigned)(uintptr_t)a;
        ARGS("u32:%u|%s|%s|%s", qos, desc_ptr(b, db, sizeof db), desc_ptr(c, dc, sizeof dc), d ? "NSError**" : "NULL");
        require_pool(s);
        fobj *rq = as_obj(c);
        if (o->state != 2) { set_error(d, "fake: evaluate of a model that is not loaded"); return NO; }
        if (!rq || rq->kind != K_REQUEST) { set_error(d, "fake: evaluate without an _ANERequest"); return NO; }
        void *bases[2][64]; long long sizes[2][64]; int n[2];
        for (int k = 0; k < 2; k++) {
            fobj *list = rq->ref[k * 2];
            if (list->count > 64) {   /* the fake's limit, not Apple's */
                snprintf(why, sizeof why, "fake: %d %s surfaces; the fake handles at most 64", (int)list->count, k ? "output" : "input");
                set_error(d, why); return NO;
            }
            n[k] = list->count;
            for (int i = 0; i < n[k]; i++) {
                fobj *sf = list->items[i]->ref[0];
                if (sf->locked) { set_error(d, "fake: a surface is still locked by the CPU during evaluate"); return NO; }
                if (g_minSurface && (long long)sf->len < g_minSurface) {
                    snprintf(why, sizeof why, "fake: 0x1d (surface of %zu bytes is below the minimum %lld)", sf->len, g_minSurface);
                    set_error(d, why); return NO;
                }
                if (i > 0 && (long long)sf->len != sizes[k][0]) {
                    snprintf(why, sizeof why, "fake: 0x1d (%s surfaces differ in size: %lld vs %zu)", k ? "output" : "input", sizes[k][0], sf->len);
                    set_error(d, why); return NO;
                }
                bases[k][i] = sf->bytes; sizes[k][i] = (long long)sf->len;
            }
        }
        if (g_macos >= 27 && rq->perf && rq->perf->kind != K_ARRAY) {   /* H2: -[_ANERequest validate] sends -count */
            char r2[256]; describe(rq->perf, r2, sizeof r2);
            errf("evaluate: perfStats %s gets -count on macOS 27 (pass nil)", r2);
            snprintf(why, sizeof why, "-[%s count]: unrecognized selector sent to instance", KIND_NAMES[rq->perf->kind]);
            raise_exception("NSInvalidArgumentException", why);
            return NO;
        }
        /* H4: rows of a tensor whose last axis is not a multiple of 64 bytes are read and written at a 64-byte stride */
        unsigned char *moved[2][64] = {{0}};
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < n[k] && i < o->nio[k]; i++) {
                long long rb = o->ioRow[k][i], rows = o->ioRows[k][i], st = stride64(rb);
                if (rb == 0 || rb == st) continue;
                moved[k][i] = calloc(1, (size_t)sizes[k][i]);
                if (k == 0)
                    for (long long r = 0; r < rows && (r + 1) * rb <= sizes[k][i]; r++)
                        if (r * st + rb <= sizes[k][i]) memcpy(moved[k][i] + r * rb, (unsigned char *)bases[k][i] + r * st, (size_t)rb);
                bases[k][i] = moved[k][i];
            }
        g_evaluatingHex = o->hex;
        if (g_hook) g_hook(n[0], bases[0], sizes[0], n[1], bases[1], sizes[1]);
        g_evaluatingHex = NULL;
        for (int i = 0; i < n[1] && i < o->nio[1]; i++) {
            if (!moved[1][i]) continue;
            long long rb = o->ioRow[1][i], rows = o->ioRows[1][i], st = stride64(rb);
            unsigned char *surf = rq->ref[2]->items[i]->ref[0]->bytes;
            memset(surf, 0, (size_t)sizes[1][i]);
            for (long long r = 0; r < rows && r * st + rb <= sizes[1][i]; r++) memcpy(surf + r * st, moved[1][i] + r * rb, (size_t)rb);
        }
        for (int k = 0; k < 2; k++) for (int i = 0; i < 64; i++) free(moved[k][i]);
        return YES;
    }
    /* 9. -[_ANEInMemoryModel unloadWithQoS:error:] */
    if (o->kind == K_MODEL && IS("unloadWithQoS:error:")) {
        unsigned qos = (unsigned)(uintptr_t)a;
        ARGS("u32:%u|%s", qos, b ? "NSError**" : "NULL");
        require_pool(s);
        int ok = o->state == 2;
        if (!ok) set_error(b, "fake: unload of a model that is not loaded");
        else o->state = 3;
        /* U1: unloadWithQoS removes localModelPath = NSTemporaryDirectory()/<identifier> after unloadModel:, whether
           or not the unload succeeded ([model-26.1+] unloadWithQoS:error:) */
        const char *t = g_tmpdir[0] ? g_tmpdir : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        char dir[4700]; snprintf(dir, sizeof dir, "%s/%s", t, o->hex);
        if (remove_tree(dir)) logf_("removeItemAtPath	%s			", dir);
        return ok ? YES : NO;
    }
    if (isClass && strcmp(cls, "_ANEDeviceInfo") == 0 && IS("aneSubType")) return mk_string(g_subType);

    char r[256]; describe(o, r, sizeof r);
    errf("unrecognized selector %s sent to %s (NSInvalidArgumentException on macOS)", s, r);
    snprintf(why, sizeof why, "-[%s %s]: unrecognized selector sent to instance", o->kind == K_CLASS ? o->clsName : KIND_NAMES[o->kind], s);
    raise_exception("NSInvalidArgumentException", why);   /* X1 */
    return NULL;
}

/* ---- IOSurface C API ---- */

void *IOSurfaceCreate(void *props) {
    char dsc[4096]; desc_ptr(props, dsc, sizeof dsc);
    fobj *p = as_obj(props);
    if (!p || p->kind != K_DICT) { errf("IOSurfaceCreate: properties must be a dictionary, got %s", dsc); return NULL; }
    fobj *keys[] = { &S_WIDTH, &S_HEIGHT, &S_BPE, &S_BPR, &S_ALLOC, &S_PIXFMT };
    long long v[6];
    for (int k = 0; k < 6; k++) {
        fobj *n = NULL;
        for (int i = 0; i < p->count; i++) if (p->keys[i] == keys[k]) n = p->items[i];
        if (!n || n->kind != K_NUMBER) { errf("IOSurfaceCreate: %s missing or not an NSNumber", keys[k]->str); return NULL; }
        v[k] = n->num;
    }
    if (p->count != 6) errf("IOSurfaceCreate: expected exactly 6 properties, got %d", p->count);
    if (v[0] != v[3] || v[0] != v[4] || v[1] != 1 || v[2] != 1 || v[5] != 0 || v[4] <= 0)
        errf("IOSurfaceCreate: not a 1-row byte buffer (width=bytesPerRow=allocSize, height 1, bpe 1, format 0): %s", dsc);
    fobj *sf = new_obj(K_SURFACE);  /* +1, Create rule */
    sf->len = (size_t)v[4];
    sf->bytes = calloc(sf->len ? sf->len : 1, 1);
    logf_("IOSurfaceCreate\t\t\t%s\tIOSurface#%d", dsc, sf->id);
    return sf;
}

static fobj *surface(void *p, const char *fn) {
    fobj *o = as_obj(p);
    if (!o || o->kind != K_SURFACE || o->dead) { errf("%s: not a live IOSurface", fn); return NULL; }
    return o;
}

int IOSurfaceLock(void *s, uint32_t options, uint32_t *seed) {
    fobj *o = surface(s, "IOSurfaceLock");
    if (!o) return -1;
    o->locked++;
    if (seed) *seed = 1;
    logf_("IOSurfaceLock\tIOSurface#%d\t\tu32:%u\t0", o->id, options);
    return 0;
}

int IOSurfaceUnlock(void *s, uint32_t options, uint32_t *seed) {
    fobj *o = surface(s, "IOSurfaceUnlock");
    if (!o) return -1;
    if (o->locked == 0) { errf("IOSurfaceUnlock of an unlocked surface"); return -1; }
    o->locked--;
    if (seed) *seed = 1;
    logf_("IOSurfaceUnlock\tIOSurface#%d\t\tu32:%u\t0", o->id, options);
    return 0;
}

void *IOSurfaceGetBaseAddress(void *s) { fobj *o = surface(s, "IOSurfaceGetBaseAddress"); return o ? o->bytes : NULL; }
size_t IOSurfaceGetAllocSize(void *s) { fobj *o = surface(s, "IOSurfaceGetAllocSize"); return o ? o->len : 0; }

/* ---- test controls and queries ---- */

int fake_log_count(void) { return g_nlog; }
const char *fake_log_entry(int i) { return i >= 0 && i < g_nlog ? g_log[i] : NULL; }
int fake_error_count(void) { return g_nerr; }
const char *fake_error(int i) { return i >= 0 && i < g_nerr ? g_err[i] : NULL; }
int fake_pool_depth(void) { return g_depth; }

/* objects created since the last reset that are still alive (not counting classes and constant keys) */
int fake_live_objects(void) {
    int n = 0;
    for (int i = 0; i < g_nobjs; i++) if (!g_objs[i]->immortal && !g_objs[i]->dead && !g_objs[i]->ignored) n++;
    return n;
}

/* description of the live objects, for failure messages */
const char *fake_live_description(void) {
    static char buf[8192]; size_t k = 0; buf[0] = 0;
    for (int i = 0; i < g_nobjs && k < sizeof buf - 300; i++) {
        fobj *o = g_objs[i];
        if (o->immortal || o->dead || o->ignored) continue;
        char d[256]; describe(o, d, sizeof d);
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s(rc=%d)", k ? ", " : "", d, o->rc);
    }
    return buf;
}

void fake_reset(void) {
    ensure_registered();
    for (int i = 0; i < g_nlog; i++) free(g_log[i]);
    for (int i = 0; i < g_nerr; i++) free(g_err[i]);
    g_nlog = 0; g_nerr = 0;
    for (int i = 0; i < g_nobjs; i++) g_objs[i]->ignored = 1;
    free(g_failCompile); g_failCompile = NULL;
    free(g_identifierOverride); g_identifierOverride = NULL; g_excPending = 0; g_throwSel[0] = 0; g_throwLeft = -1;
    g_leakAfter = -1; g_compiles = 0; g_realCompiles = 0; g_daemonLoads = 0; g_refuseDialect[0] = 0;
    snprintf(g_daemonDir, sizeof g_daemonDir, "%s", getenv("FAKE_ANED_DIR") ? getenv("FAKE_ANED_DIR") : "");
    g_minSurface = 0; g_hook = NULL;
    snprintf(g_subType, sizeof g_subType, "h16g");
    g_macos = getenv("FAKE_MACOS") ? atoi(getenv("FAKE_MACOS")) : 26;
}

void fake_set_fail_compile(const char *msg) { free(g_failCompile); g_failCompile = msg ? strdup(msg) : NULL; }
/* the next sends of `selector` raise an Objective-C exception with this name and reason (NULL selector: off) */
void fake_set_throw(const char *selector, const char *name, const char *reason) {
    snprintf(g_throwSel, sizeof g_throwSel, "%s", selector ? selector : "");
    snprintf(g_throwName, sizeof g_throwName, "%s", name ? name : "");
    snprintf(g_throwReason, sizeof g_throwReason, "%s", reason ? reason : "");
    g_throwLeft = -1;
}
/* only the next n sends of fake_set_throw's selector raise, later ones run normally (a fault that passes, e.g. the
   compiler service restarting); a test knob, not an observed rule; call after fake_set_throw */
void fake_set_throw_times(int n) { g_throwLeft = n; }
void fake_set_identifier(const char *id) { free(g_identifierOverride); g_identifierOverride = id ? strdup(id) : NULL; }
void fake_set_leak_after(int compiles) { g_leakAfter = compiles; }
void fake_set_min_surface_bytes(long long n) { g_minSurface = n; }
/* the OS profile: 26 (macOS 15/26 rules) or 27 (adds H1-H4, see the header) */
void fake_set_macos(int major) { g_macos = major; }
int fake_macos(void) { return g_macos; }
void fake_set_ane_subtype(const char *s) { snprintf(g_subType, sizeof g_subType, "%s", s); }
void fake_set_tmpdir(const char *dir) { snprintf(g_tmpdir, sizeof g_tmpdir, "%s", dir); }
void fake_set_evaluate_hook(void (*hook)(int, void **, long long *, int, void **, long long *)) { g_hook = hook; }
/* the hex id of the model being evaluated, while the evaluate hook runs (else NULL) */
const char *fake_evaluating_hex(void) { return g_evaluatingHex; }
/* compiles since reset, and loads served from aned's cache without a compile by that model */
int fake_real_compiles(void) { return g_realCompiles; }
int fake_daemon_loads(void) { return g_daemonLoads; }
/* where aned keeps compiled programs ("" : nowhere, nothing is cached) */
void fake_set_daemon_dir(const char *dir) { snprintf(g_daemonDir, sizeof g_daemonDir, "%s", dir ? dir : ""); }
/* compiles of MIL whose function is main<dialect> fail like ANECCompile() (NULL or "": off) */
void fake_set_refuse_dialect(const char *d) { snprintf(g_refuseDialect, sizeof g_refuseDialect, "%s", d ? d : ""); }
/* a new process: the compiler-leak count starts again (aned and its cache stay) */
void fake_new_process(void) { g_compiles = 0; }
