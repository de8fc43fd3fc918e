package ane4j.mil.grad;

/**
 * The vector-Jacobian product of one op: given the upstream gradients of its outputs ({@link Vjp#g()}), it adds the
 * gradient of each input that needs one ({@link Vjp#give}), as MIL ops emitted into the gradient function.
 */
@FunctionalInterface
interface Rule {
    void vjp(Vjp c);
}
