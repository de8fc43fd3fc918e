package ane4j.notebook;

import org.dflib.jjava.jupyter.kernel.BaseKernel;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;

/** An output shown with {@link Notebook#display}; {@link #update} replaces it in place (live progress, plots). */
public final class DisplayHandle {
    private final BaseKernel kernel;
    private final String id;

    DisplayHandle(BaseKernel kernel, String id) {
        this.kernel = kernel;
        this.id = id;
    }

    public String id() {
        return id;
    }

    /** Replaces the shown output with {@code value}, rendered the same way. Only works while a cell runs. */
    public void update(Object value) {
        DisplayData data = kernel.getRenderer().render(value);
        data.putTransientData("display_id", id);
        kernel.getIO().display.updateDisplay(id, data);
    }

    @Override
    public String toString() {
        return "display " + id;
    }
}
