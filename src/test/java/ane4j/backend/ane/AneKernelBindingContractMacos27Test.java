package ane4j.backend.ane;

/** {@link AneKernelBindingContractTest} under the fake's macOS 27 profile (fakeobjc.c "OS profiles", H1-H4). */
class AneKernelBindingContractMacos27Test extends AneKernelBindingContractTest {
    @Override int macos() { return 27; }

    /** Rows of 64 bytes (q, k [1,2,32,32] fp16): macOS 27 binds only packed rows in place. */
    @Override ane4j.mil.Program boundProgram() { return ane4j.programs.AcceptancePrograms.a10QkT(2, 32, 32); }
}
