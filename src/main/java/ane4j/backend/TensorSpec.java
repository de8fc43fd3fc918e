package ane4j.backend;

import ane4j.mil.TensorType;

/** A kernel input or output: its MIL name and type. */
public record TensorSpec(String name, TensorType type) {
    @Override public String toString() { return name + ":" + type; }
}
