package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ane4j.programs.AcceptancePrograms;
import ane4j.mil.Dialect;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.model.ModelConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** doctor's rungs, bench's programs and the golden MIL texts come from the one library: the texts pin what runs. */
class ProgramLibraryTest {
    private static String text(Program p) { return MilWriter.write(p, Dialect.IOS18); }

    @Test
    void doctorsAcceptanceRungsAreTheLibrarysPrograms() {
        Map<String, Program> ladder = Probes.ladder(ModelConfig.parse("tiny")).stream().collect(Collectors.toMap(Probes.Probe::name, Probes.Probe::program));
        assertEquals(text(AcceptancePrograms.a2PeakConvChain(Probes.C, Probes.S, 4)), text(ladder.get("a2-conv-chain")));
        assertEquals(text(AcceptancePrograms.a4DynamicMatmul(Probes.C, Probes.S, Probes.C)), text(ladder.get("dynamic-matmul")));
        assertEquals(text(AcceptancePrograms.a2PeakConvChain(Probes.C, Probes.S, 4, AcceptancePrograms.Io.FP32_CAST, AcceptancePrograms.WeightFiles.PER_WEIGHT)),
                text(ladder.get("a2-fp32-cast")));
    }

    /** `bench peak` runs A2 with fp16 I/O by default, `bench int8` A3 and its twin, `bench sgemm` A4: their goldens are committed. */
    @Test
    void theGoldenTextsAreWhatTheBenchmarksRun() throws IOException {
        Path golden = Path.of("src/test/resources/golden/mil");
        assertEquals(Files.readString(golden.resolve("a2-peak-conv-chain-fp16.mil")), text(AcceptancePrograms.a2PeakConvChain(64, 64, 8)));
        assertEquals(Files.readString(golden.resolve("a3-int8-chain.mil")), text(AcceptancePrograms.a3Int8Chain(64, 64, 64, 3)));
        assertEquals(Files.readString(golden.resolve("a3-fp16-chain.mil")), text(AcceptancePrograms.a3Fp16Chain(64, 64, 64, 3)));
        assertEquals(Files.readString(golden.resolve("a4-dynamic-matmul-stories110m-wo.mil")), text(AcceptancePrograms.a4DynamicMatmul(768, 256, 768)));
    }
}
