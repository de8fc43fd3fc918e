package ane4j.bench;

import ane4j.model.Json;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The line that says which BLAS and core the Python side of a benchmark ran, from tools/blas_info.py's JSON. */
class BlasReportTest {

    @Test
    void summarisesTheLoadedLibraryAndTheEnvironment() {
        Object blas = Json.parse("{\"coretype_env\": null, \"libraries\": [{\"path\": \"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so\","
                + " \"core\": \"Prescott\", \"config\": \"OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64\"}], \"config\": \"- BLAS_INFO=open\"}");
        assertEquals("/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so, OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64,"
                + " core Prescott (OPENBLAS_CORETYPE unset)", StepBench.blasSummary(blas));
        assertEquals("- BLAS_INFO=mkl (OPENBLAS_CORETYPE=SkylakeX)",
                StepBench.blasSummary(Map.of("coretype_env", "SkylakeX", "libraries", List.of(), "config", "- BLAS_INFO=mkl")));
        assertTrue(StepBench.blasSummary(null).startsWith("BLAS unknown"));
    }

    @Test
    void numpysBlasIsReadFromTheProcess() {
        Object blas = SgemmBench.numpyBlas("python3");
        if (blas instanceof String reason) {
            // no python3 with numpy here: the reason is one line, never an exception
            assertTrue(reason.startsWith("unknown: "), reason);
            return;
        }
        Map<?, ?> m = (Map<?, ?>) blas;
        assertTrue(m.containsKey("libraries") && m.containsKey("numpy"), m.toString());
    }
}
