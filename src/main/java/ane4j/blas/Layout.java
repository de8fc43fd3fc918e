package ane4j.blas;

/** Storage order of a matrix, with its CBLAS enum value. */
public enum Layout {
    ROW_MAJOR(101),
    COL_MAJOR(102);

    final int cblas;

    Layout(int cblas) { this.cblas = cblas; }

    String label() { return this == ROW_MAJOR ? "row-major" : "column-major"; }
}
