package ane4j.notebook;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.dflib.jjava.jupyter.kernel.BaseKernel;
import org.dflib.jjava.jupyter.kernel.JupyterIO;
import org.dflib.jjava.jupyter.kernel.LanguageInfo;
import org.dflib.jjava.jupyter.kernel.ReplacementOptions;
import org.dflib.jjava.jupyter.kernel.comm.CommManager;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;
import org.dflib.jjava.jupyter.kernel.display.Renderer;
import org.dflib.jjava.jupyter.kernel.magic.MagicsRegistry;
import org.dflib.jjava.jupyter.kernel.util.StringStyler;

/** A stand-in for a stock JJava kernel: records what it is asked to evaluate and display. */
final class FakeKernel extends BaseKernel {
    final List<String> evaluated = new ArrayList<>();
    final List<DisplayData> displayed = new ArrayList<>();
    /** Notebook variables: {@link #evalRaw} of a name returns its value (null for anything else). */
    final java.util.Map<String, Object> variables = new java.util.HashMap<>();

    FakeKernel() {
        super("fake", "1", new LanguageInfo.Builder("Java").build(), List.of(), null, new JupyterIO(StandardCharsets.UTF_8),
                new CommManager(), new Renderer(), null, new MagicsRegistry(), true, new StringStyler.Builder().build());
    }

    @Override
    public Object evalRaw(String source) {
        evaluated.add(source);
        return variables.get(source.strip());
    }

    @Override
    public void display(DisplayData data) {
        displayed.add(data);
    }

    @Override
    public DisplayData inspect(String code, int at, boolean extraDetail) {
        return null;
    }

    @Override
    public ReplacementOptions complete(String code, int at) {
        return null;
    }

    @Override
    public String isComplete(String code) {
        return IS_COMPLETE_YES;
    }

    void reinstallDefaultExtensions() {
        installDefaultExtensions();
    }

    int extensionCount() {
        return extensions.size();
    }
}
