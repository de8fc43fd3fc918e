package ane4j.model;

/** A model, tokenizer, token or config file that cannot be read; the message is one line, tagged like {@code [llama2.bin]}. */
public class ModelFormatException extends IllegalArgumentException {
    public ModelFormatException(String message) { super(message); }

    public ModelFormatException(String message, Throwable cause) { super(message, cause); }
}
