package ane4j.blas;

import java.util.Optional;

/**
 * The classes written with the Vector API ({@code jdk.incubator.vector}), loaded by name only when the module is in the
 * boot layer (started with {@code --add-modules jdk.incubator.vector}), so that everything else runs without it.
 */
final class VectorClasses {
    private VectorClasses() {}

    static final String MODULE = "jdk.incubator.vector";

    static boolean available() { return ModuleLayer.boot().findModule(MODULE).isPresent(); }

    /** A new instance of {@code className} (a no-argument constructor) as {@code type}; empty without the module or if it fails to load. */
    static <T> Optional<T> load(String className, Class<T> type) {
        if (!available()) return Optional.empty();
        try {
            return Optional.of(type.cast(Class.forName(className).getDeclaredConstructor().newInstance()));
        } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
            return Optional.empty();
        }
    }
}
