/**
 * The Jupyter protocol parts of the ane4j kernel that know nothing of ane4j: {@link ane4j.notebook.kernel.CellQueue}
 * (what happens to the shell's requests around a running cell: held, answered at once, or aborted after an error) and
 * {@link ane4j.notebook.kernel.ProtocolFixes} (what jjava-jupyter 1.0-a6 gets wrong or leaves out of the protocol).
 * {@code ane4j.notebook.JupyterKernel} wires them with the cell runner ({@code ane4j.notebook.CellRunner}) and the
 * one route of magics ({@code ane4j.notebook.MagicDispatch}), which also gives the queue its at-once answers.
 * Depends on no ane4j package (docs/DESIGN.md §2, PackageLayersTest).
 */
package ane4j.notebook.kernel;
