// ane4j_guard.m: one @try/@catch around objc_msgSend for ane4j's FFM calls (docs/ane-audit.md F9). An Objective-C exception
// unwinding through JVM frames aborts the process (docs/anchors.md §4.4 item 7); caught here, it comes back to Java as the
// exception's name and reason, which ane4j.backend.ane.ffm.ObjC turns into an AneException naming the selector.
//
// Built by install.sh on macOS, next to the jar:
//   clang -dynamiclib -O2 -fobjc-exceptions -fno-objc-arc -framework Foundation \
//         -o target/libane4j_guard.dylib src/main/objc/ane4j_guard.m
// Never committed. The test suite's fake runtime (src/test/c/fakeobjc.c) exports the same entry point.
//
// One widened prototype serves every selector ane4j sends: receiver, selector and up to seven more arguments, all of
// integer or pointer class (no float, no struct: ObjC.java refuses other descriptors). On arm64 (AAPCS64 as Apple
// uses it) and x86-64 SysV such arguments go in x0-x7 / rdi..r9 and then in 8-byte stack slots in order, and the caller
// owns the stack, so a callee declared with fewer arguments reads exactly the ones it has and never the extra ones;
// the 32-bit QoS arrives in the low half of its register, as the callee reads it. The result register is returned
// whole; Java keeps the low byte of a BOOL. No ARC: the receiver and arguments are passed through untouched.
#import <Foundation/Foundation.h>
#import <objc/runtime.h>
#include <stdint.h>
#include <string.h>

typedef uintptr_t (*ane4j_send_fn)(void *, void *, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

static void copy_text(char *out, size_t cap, const char *text) {
    if (cap == 0) return;
    strlcpy(out, text ? text : "", cap);
}

// Returns 0 with *result set, or 1 with the exception's name and reason in name/reason (each cap bytes, NUL-ended).
__attribute__((visibility("default")))
int ane4j_guarded_send(void *imp, void *self, void *sel,
                       uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4, uintptr_t a5, uintptr_t a6, uintptr_t a7,
                       uintptr_t *result, char *name, char *reason, size_t cap) {
    @try {
        *result = ((ane4j_send_fn)imp)(self, sel, a1, a2, a3, a4, a5, a6, a7);
        return 0;
    } @catch (NSException *e) {
        copy_text(name, cap, [[e name] UTF8String]);
        copy_text(reason, cap, [[e reason] UTF8String]);
        return 1;
    } @catch (id e) {
        copy_text(name, cap, object_getClassName(e));
        copy_text(reason, cap, [[e description] UTF8String]);
        return 1;
    }
}
