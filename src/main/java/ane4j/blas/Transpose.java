package ane4j.blas;

/** Whether an operand is used as stored ({@code NO}) or transposed ({@code YES}), with its CBLAS enum value. */
public enum Transpose {
    NO(111),
    YES(112);

    final int cblas;

    Transpose(int cblas) { this.cblas = cblas; }
}
