package ane4j.notebook;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a method as a notebook magic. The method takes one {@link MagicCall} and returns the cell's value (or void):
 * <pre>
 * &#64;Magic(value = "ane", help = "backend, chip, JDK, worker state")
 * Object ane(MagicCall call) { ... }
 * </pre>
 * {@code cell = true} makes it a cell magic ({@code %%name args} on the first line, the body below). Listing the class
 * in {@link Ane4jExtension#MAGICS} (or adding it to a {@link MagicRegistry}) is the one registration: every call then
 * goes through {@link MagicDispatch}, from a magic cell, from Java code, or answered while another cell runs.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface Magic {
    /** The name used after {@code %} or {@code %%}. */
    String value();

    boolean cell() default false;

    String[] aliases() default {};

    /** One line shown by {@code %lsmagic}: what it does and its arguments. */
    String help();

    /**
     * The arguments (the whole argument line, e.g. {@code "stop"}) with which this line magic, alone in its cell, is
     * answered while another cell runs, where IPython would queue it; such a call only reads or stops. The magic sees
     * {@link MagicCall#answeredAtOnce()} and may return {@link MagicCall#IN_TURN} to wait its turn after all.
     */
    String[] atOnce() default {};
}
