package ane4j.train;

import ane4j.backend.Backend;
import ane4j.backend.TensorBuffer;
import ane4j.model.ParameterView;
import ane4j.model.Rng;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A user graph's micro-step: B samples drawn uniformly (with replacement) from the training samples through
 * {@link GraphStep} (forward and backward compiled once, matmul/linear/conv weight gradients by sgemm on the CPU), its
 * loss's upstream gradient seeded with the loss scale (or, with a {@link CpuLossHead}, d_logits scaled by it). Validation reads the held-out samples in consecutive batches of
 * B (the last batch wraps to the first held-out samples; fewer than B held out: one batch, wrapping).
 */
final class GraphRunStep implements RunStep {
    private final GraphStep step;
    private final GraphData data;
    private final int batch;
    private final Map<String, TensorBuffer> buffers = new LinkedHashMap<>();   // data input → this step's batch

    GraphRunStep(GraphData data, Backend backend) {
        this.data = data;
        // the graph's loss output, its upstream gradient an input seeded with the loss scale; or the CPU loss head, whose
        // d_logits carries the scale
        this.step = data.head() != null ? new GraphStep(data.program(), data.head(), data.params(), backend, GraphStep.Options.defaults())
                : new GraphStep(data.program(), data.loss(), data.params(), backend, GraphStep.Options.defaults().withSeedInput(true));
        if (!step.views().equals(data.layout().views())) {
            step.close();
            throw new IllegalStateException("[train] internal: the graph step's parameter layout differs from the run's");
        }
        this.batch = data.batch();
        for (String n : data.samples().keySet()) buffers.put(n, TensorBuffer.allocate(data.batchType(n)));
    }

    /** The trained parameters' views of the flat array (AdamW: decay on matrices only). */
    List<ParameterView> views() { return step.views(); }

    @Override
    public float forwardBackward(float[] weights, float[] grads, Rng rng, float lossScale, long microStep) {
        // row i of the batch is sample k_i, k_i uniform in [0, train): one draw per row, the same sample for every input
        for (int i = 0; i < batch; i++) {
            int k = rng.nextInt(data.train());
            for (var e : buffers.entrySet()) GraphData.copySample(data.samples().get(e.getKey()), k, e.getValue(), i);
        }
        return step.forwardBackward(weights, grads, buffers, lossScale);
    }

    @Override
    public float validationLoss(float[] weights) {
        int m = data.heldOutCount(), batches = Math.max(1, m / batch);
        double sum = 0;
        for (int b = 0; b < batches; b++) {
            for (int i = 0; i < batch; i++) {
                int k = (b * batch + i) % m;
                for (var e : buffers.entrySet()) GraphData.copySample(data.heldOut().get(e.getKey()), k, e.getValue(), i);
            }
            sum += step.loss(weights, buffers);
        }
        return (float) (sum / batches);
    }

    @Override public void stageWeights(float[] weights) {}   // the parameters travel with every step's inputs (PackedParams)

    @Override public Map<String, Double> phaseMillis() { return Map.of(); }

    @Override public long stagedActivationBytes() { return 0; }

    @Override public long stagedWeightBytes() { return 0; }

    @Override public int tokensPerStep() { return 0; }

    @Override public void close() { step.close(); }
}
