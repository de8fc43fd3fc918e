package ane4j.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.Backends;
import ane4j.backend.CountingBackend;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The worker's backend settings: from the options, else this JVM's properties; never copied to the child as -D properties. */
class BackendSettingsTest {
    @Test
    void optionsWinOverPropertiesAndNoBackendPropertyReachesTheCommandLine() {
        String before = System.getProperty(CountingBackend.BUDGET_PROPERTY), storage = System.getProperty(Backends.REF_STORAGE_PROPERTY);
        System.setProperty(CountingBackend.BUDGET_PROPERTY, "17");
        System.setProperty(Backends.REF_STORAGE_PROPERTY, "fp32");
        try {
            Backends.Settings fromProperties = Supervisor.Options.defaults().backendSettings();
            assertEquals(17L, fromProperties.compileBudget());
            assertTrue(fromProperties.fp32Storage());
            Backends.Settings given = Supervisor.Options.defaults().withBackend("ref").withCompileBudget(5).withRefStorage("fp16").backendSettings();
            assertEquals(new Backends.Settings("ref", false, 5L), given);
            try (Supervisor s = new Supervisor(Supervisor.Options.defaults().withBackend("ref").withCompileBudget(5))) {
                List<String> c = s.command();
                assertFalse(c.stream().anyMatch(a -> a.startsWith("-D" + CountingBackend.BUDGET_PROPERTY) || a.startsWith("-D" + Backends.REF_STORAGE_PROPERTY)
                        || a.startsWith("-D" + Backends.PROPERTY + "=")), c.toString());
            }
        } finally {
            restore(CountingBackend.BUDGET_PROPERTY, before);
            restore(Backends.REF_STORAGE_PROPERTY, storage);
        }
    }

    @Test
    void aBadStorageIsOneLine() {
        var e = assertThrows(IllegalArgumentException.class, () -> Supervisor.Options.defaults().withRefStorage("fp64"));
        assertEquals("[worker] refStorage fp64 must be fp16 or fp32", e.getMessage());
        String before = System.getProperty(Backends.REF_STORAGE_PROPERTY);
        System.setProperty(Backends.REF_STORAGE_PROPERTY, "bf16");
        try {
            var p = assertThrows(IllegalArgumentException.class, () -> Supervisor.Options.defaults().backendSettings());
            assertEquals("[ref] -Dane4j.ref.storage=bf16 must be fp16 or fp32", p.getMessage());
            assertNull(Supervisor.Options.defaults().withRefStorage("fp16").backend());
        } finally {
            restore(Backends.REF_STORAGE_PROPERTY, before);
        }
    }

    private static void restore(String key, String value) {
        if (value == null) System.clearProperty(key);
        else System.setProperty(key, value);
    }
}
