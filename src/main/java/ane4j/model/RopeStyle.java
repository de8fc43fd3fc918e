package ane4j.model;

/**
 * Which elements of a head vector RoPE rotates together.
 * INTERLEAVED: pairs (2i, 2i+1) (llama2.c, Meta's original Llama). HALF: pairs (i, i + headDim/2)
 * (Hugging Face "rotate_half", Qwen3). Both use frequency theta^(-2i/headDim) for pair i.
 */
public enum RopeStyle {
    INTERLEAVED,
    HALF
}
