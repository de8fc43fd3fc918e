package ane4j.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.TensorBuffer;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 14 point 1: a shared tensor larger than 2^31 bytes (qwen3-0.6b's weights are 2.38 GB in fp32) is allocated,
 * mapped by the worker and used at offsets past 2^31 without a copy. The region is a sparse file: only the pages the
 * kernel touches take memory.
 */
class LargeSharedTensorTest {
    @TempDir Path tmp;

    @Test
    void viewsPast2GiBOfOneSharedTensorAreEvaluatedInTheWorkerWithoutACopy() throws Exception {
        int channels = (1 << 26) + 16;   // fp16 [1, C, 1, 16]: 32 bytes a channel, 2^31 + 512 bytes in all
        TensorType big = Mil.fp16(1, channels, 1, 16);
        assertTrue(big.byteSize() > 1L << 31);
        Program p = RemoteKernelTest.program(0.5f);
        float[] x = RemoteKernelTest.random((int) RemoteKernelTest.X.count(), 5);
        var log = new WorkerTestSupport.Log();
        var options = WorkerTestSupport.options(log).toBuilder().sharedDir(tmp).build();
        try (Supervisor s = new Supervisor(options)) {
            RemoteKernel k = s.compile(p);
            TensorBuffer whole = s.allocate(big);
            TensorBuffer in = whole.channels(channels - 8, 8), out = whole.channels(channels - 16, 8);   // at 2^31 + 256 and 2^31
            in.copyFrom(x);
            k.evaluate(Map.of("x", in), Map.of("y", out));
            assertArrayEquals(RemoteKernelTest.local(p, x), out.toFloatArray());
            // the input is still there (the output went to its own channels) and nothing was staged through a scratch copy
            assertArrayEquals(TensorBuffer.of(RemoteKernelTest.X, x).toFloatArray(), in.toFloatArray());
            List<Path> regions;
            try (Stream<Path> files = Files.walk(tmp)) {
                regions = files.filter(f -> f.getFileName().toString().matches("t\\d+\\.bin")).toList();
            }
            assertEquals(1, regions.size(), "one shared file (the tensor), no scratch copies: " + regions);
            assertEquals(big.byteSize(), Files.size(regions.getFirst()));
            s.free(whole);
        }
    }
}
