package ane4j.backend.ane;

import ane4j.backend.BackendException;
import ane4j.backend.ref.RefBackend;
import ane4j.chip.Chip;
import ane4j.mil.DType;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/** The ANE backend checks the chip rules of the chip {@code _ANEDeviceInfo} reports before it sends anything to compile. */
class AneChipRulesContractTest extends FakeRuntimeFixture {
    @AfterEach
    void restore() {
        fake.setAneSubType("h16g");
        ane.close();
        assertEquals(List.of(), fake.errors(), "contract violations seen by the fake");
    }

    /** (1,8,256,128) → (1,8,1,32768): over M1–M3's 16384 axis cap. */
    static Program flatten() {
        return Mil.program().function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP16, 1, 8, 256, 128));
            f.output(f.named("y", f.reshape(f.mul(f.reshape(x, 1, 8, 1, 32768), 2f), 1, 8, 256, 128)));
        }).build();
    }

    @Test
    void anM3RefusesTheProgramBeforeCompilingWithTheReferenceBackendsMessage() {
        fake.setAneSubType("h15g");
        int compiles = fake.realCompiles();
        var e = assertThrows(BackendException.class, () -> AneBackendContractTest.backend().compile(flatten()));
        assertTrue(e.getMessage().startsWith("[ane] main breaks chip rule axis-cap on M3: reshape_"), e.getMessage());
        assertEquals(compiles, fake.realCompiles(), "nothing was sent to compileWithQoS");
        var emulated = assertThrows(BackendException.class,
                () -> new RefBackend(RefBackend.Options.ANE_LIKE.withChip(Chip.M3)).compile(flatten()));
        assertEquals(e.getMessage(), emulated.getMessage(), "the same message as -Dane4j.ref.chip=m3");
    }

    @Test
    void theCheckCanBeTurnedOffForProbesThatAskApplesCompiler() {
        fake.setAneSubType("h15g");
        int compiles = fake.realCompiles();
        AneBackendContractTest.backend().chipRulesChecked(false).compile(flatten()).close();
        assertEquals(compiles + 1, fake.realCompiles());
    }

    @Test
    void anM4CompilesIt() {
        fake.setAneSubType("h16g");
        AneBackendContractTest.backend().compile(flatten()).close();
    }

    /** The SPI's chip (run.txt's line, the loss-scale cap's family) is the one {@code _ANEDeviceInfo} reports. */
    @Test
    void describeChipIsTheReportedChip() {
        fake.setAneSubType("h15g");
        assertEquals(new ane4j.backend.ChipDescription(Chip.M3, "M3 (h15g)"), AneBackendContractTest.backend().describeChip());
        fake.setAneSubType("h99");
        var unknown = AneBackendContractTest.backend().describeChip();
        assertNull(unknown.family(), "no family for an unknown sub-type: fp16's cap, no chip rules");
        assertTrue(unknown.text().startsWith("unknown (h99)"), unknown.text());
    }
}
