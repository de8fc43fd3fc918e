package ane4j.notebook;

import static java.lang.constant.ConstantDescs.CD_int;
import static java.lang.constant.ConstantDescs.CD_void;

import java.io.InputStream;
import java.lang.classfile.ClassBuilder;
import java.lang.classfile.ClassElement;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassHierarchyResolver;
import java.lang.classfile.ClassHierarchyResolver.ClassHierarchyInfo;
import java.lang.classfile.ClassModel;
import java.lang.classfile.ClassTransform;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.CodeElement;
import java.lang.classfile.CodeTransform;
import java.lang.classfile.Label;
import java.lang.classfile.MethodModel;
import java.lang.classfile.MethodTransform;
import java.lang.classfile.Opcode;
import java.lang.classfile.instruction.BranchInstruction;
import java.lang.classfile.instruction.InvokeDynamicInstruction;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.classfile.instruction.LabelTarget;
import java.lang.constant.ClassDesc;
import java.lang.constant.ConstantDesc;
import java.lang.constant.DirectMethodHandleDesc;
import java.lang.constant.DynamicCallSiteDesc;
import java.lang.constant.MethodHandleDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.reflect.AccessFlag;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Rewrites the bytecode of every class a cell defines (JShell hands the kernel each snippet's classes before they load):
 * <ul>
 * <li>a {@link CellGuard#check()} call at every method entry and before every backward branch, so an interrupted cell
 * stops even in {@code while (true) n++;}. {@code Thread.stop} is gone (it throws UnsupportedOperationException since
 * JDK 20), so a check woven into the code is the only way to stop a loop that never blocks;</li>
 * <li>{@code System.exit}, {@code Runtime.exit} and {@code Runtime.halt} (calls and method references) become calls to
 * {@link CellGuard}, which refuse them. There is no SecurityManager on JDK 25 to veto an exit, and running cells in a
 * child VM (JShell's remote engine) would lose what the kernel needs in-process: the cells' objects for rich display,
 * display handles, magics called from code, the ane4j session.</li>
 * </ul>
 * JShell's own "local" engine weaves the same stop checks, but resolves types only from the system class loader, so on
 * JDK 25 a method that merges two snippet-defined types fails to load ("Could not resolve class $JShell$3$Sq",
 * JDK-8366926). Here the stack maps are computed with the cells' own classes (this batch and every earlier one), then
 * the cells' class loader; a class that still cannot be rewritten loads unchanged (its loops are then not stoppable,
 * and the kernel says so when an interrupt does not take).
 */
final class CellInstrumenter {
    private static final ClassDesc GUARD = ClassDesc.of(CellGuard.class.getName());
    private static final ClassDesc CD_SYSTEM = ClassDesc.of("java.lang.System"), CD_RUNTIME = ClassDesc.of("java.lang.Runtime");
    private static final MethodTypeDesc MTD_STATUS = MethodTypeDesc.of(CD_void, CD_int);
    private static final MethodTypeDesc MTD_RUNTIME_STATUS = MethodTypeDesc.of(CD_void, CD_RUNTIME, CD_int);
    private static final MethodTypeDesc MTD_CHECK = MethodTypeDesc.of(CD_void);

    /** The classes of every cell so far, and the library classes looked up for them (found ones only). */
    private final Map<ClassDesc, ClassHierarchyInfo> known = new ConcurrentHashMap<>();
    private final ClassFile classFile;
    private volatile int unchanged;

    /** {@code cellLoader}: the class loader of the cells once known (for classes added with %maven / %classpath). */
    CellInstrumenter(Supplier<ClassLoader> cellLoader) {
        ClassHierarchyResolver libraries = ClassHierarchyResolver.defaultResolver()
                .orElse(ClassHierarchyResolver.ofResourceParsing((ClassDesc cd) -> resource(cellLoader.get(), cd)));
        ClassHierarchyResolver resolver = cd -> {
            ClassHierarchyInfo info = known.get(cd);
            if (info == null && (info = libraries.getClassInfo(cd)) != null) known.put(cd, info);
            return info;
        };
        this.classFile = ClassFile.of(ClassFile.ClassHierarchyResolverOption.of(resolver));
    }

    private static InputStream resource(ClassLoader loader, ClassDesc cd) {
        String d = cd.descriptorString();
        String path = d.substring(1, d.length() - 1) + ".class";
        return (loader != null ? loader : ClassLoader.getSystemClassLoader()).getResourceAsStream(path);
    }

    /** The rewritten classes of one load, in order. The batch is learnt first: its classes refer to each other. */
    byte[][] instrument(byte[][] batch) {
        ClassModel[] models = new ClassModel[batch.length];
        for (int i = 0; i < batch.length; i++) {
            models[i] = classFile.parse(batch[i]);
            ClassModel m = models[i];
            known.put(m.thisClass().asSymbol(), m.flags().has(AccessFlag.INTERFACE) ? ClassHierarchyInfo.ofInterface()
                    : ClassHierarchyInfo.ofClass(m.superclass().map(s -> s.asSymbol()).orElse(null)));
        }
        byte[][] out = new byte[batch.length][];
        for (int i = 0; i < batch.length; i++) {
            try {
                out[i] = classFile.transformClass(models[i], ClassTransform.ofStateful(Rewrite::new));
            } catch (RuntimeException e) {
                unchanged++;
                out[i] = batch[i];
            }
        }
        return out;
    }

    /** Loads the ClassFile API (about 0.1-0.2 s cold) by rewriting a small class, so the first cell does not pay for it. */
    void warmUp() {
        try (InputStream in = CellGuard.class.getResourceAsStream("CellGuard.class")) {
            if (in != null) classFile.transformClass(classFile.parse(in.readAllBytes()), ClassTransform.ofStateful(Rewrite::new));
        } catch (java.io.IOException | RuntimeException e) {
            // only a warm-up: the first cell pays instead
        }
    }

    /** Classes loaded without stop checks because they could not be rewritten. */
    int unchanged() {
        return unchanged;
    }

    /** Per class: each method's code through a fresh {@link Weave}. */
    private static final class Rewrite implements ClassTransform {
        @Override
        public void accept(ClassBuilder builder, ClassElement element) {
            if (element instanceof MethodModel m && m.code().isPresent()) {
                // no check on entering a static initializer: stopping there would leave the class unusable for later cells
                boolean atEntry = !m.methodName().equalsString("<clinit>");
                builder.transformMethod(m, MethodTransform.transformingCode(new Weave(atEntry)));
            } else {
                builder.with(element);
            }
        }
    }

    private static final class Weave implements CodeTransform {
        private final boolean atEntry;
        private final Set<Label> bound = new HashSet<>();

        Weave(boolean atEntry) {
            this.atEntry = atEntry;
        }

        @Override
        public void atStart(CodeBuilder code) {
            if (atEntry) code.invokestatic(GUARD, "check", MTD_CHECK);
        }

        @Override
        public void accept(CodeBuilder code, CodeElement element) {
            switch (element) {
                case LabelTarget t -> bound.add(t.label());
                // a branch to a label already passed is a loop's back-edge
                case BranchInstruction b when bound.contains(b.target()) -> code.invokestatic(GUARD, "check", MTD_CHECK);
                case InvokeInstruction call -> {
                    DirectMethodHandleDesc g = guardFor(call.owner().asSymbol(), call.name().stringValue(), call.typeSymbol(),
                            call.opcode() == Opcode.INVOKESTATIC);
                    if (g != null) {
                        code.invokestatic(GUARD, g.methodName(), g.invocationType());
                        return;
                    }
                }
                case InvokeDynamicInstruction indy -> {
                    List<ConstantDesc> args = indy.bootstrapArgs().stream().map(a -> Objects.requireNonNullElse(guardFor(a), a)).toList();
                    if (!args.equals(indy.bootstrapArgs())) {
                        code.invokedynamic(DynamicCallSiteDesc.of(indy.bootstrapMethod(), indy.name().stringValue(), indy.typeSymbol(),
                                args.toArray(ConstantDesc[]::new)));
                        return;
                    }
                }
                default -> { }
            }
            code.with(element);
        }
    }

    /** The CellGuard method for a method reference {@code System::exit}, {@code Runtime::exit|halt}, else null. */
    private static DirectMethodHandleDesc guardFor(ConstantDesc arg) {
        if (!(arg instanceof DirectMethodHandleDesc h)) return null;
        boolean isStatic = h.kind() == DirectMethodHandleDesc.Kind.STATIC;
        if (!isStatic && h.kind() != DirectMethodHandleDesc.Kind.VIRTUAL) return null;
        return guardFor(h.owner(), h.methodName(), MethodTypeDesc.ofDescriptor(h.lookupDescriptor()), isStatic);
    }

    private static DirectMethodHandleDesc guardFor(ClassDesc owner, String name, MethodTypeDesc type, boolean isStatic) {
        if (!type.equals(MTD_STATUS)) return null;
        if (isStatic && owner.equals(CD_SYSTEM) && name.equals("exit"))
            return MethodHandleDesc.ofMethod(DirectMethodHandleDesc.Kind.STATIC, GUARD, "exit", MTD_STATUS);
        if (!isStatic && owner.equals(CD_RUNTIME) && (name.equals("exit") || name.equals("halt")))
            return MethodHandleDesc.ofMethod(DirectMethodHandleDesc.Kind.STATIC, GUARD, name, MTD_RUNTIME_STATUS);
        return null;
    }
}
