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
 * {@code cell = true} makes it a cell magic ({@code %%name args} on the first line, the body below).
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
}
