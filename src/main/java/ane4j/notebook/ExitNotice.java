package ane4j.notebook;

import java.util.List;
import java.util.Map;
import org.dflib.jjava.jupyter.channels.ShellReplyEnvironment;
import org.dflib.jjava.jupyter.messages.publish.PublishError;
import org.dflib.jjava.jupyter.messages.reply.ErrorReply;
import org.dflib.jjava.jupyter.messages.reply.ExecuteReply;

/**
 * Cells' own System.exit / Runtime.exit / Runtime.halt calls are refused ({@link CellInstrumenter}); an exit the
 * kernel cannot see coming (from library code, reflection or a method handle) still ends the process. Then the
 * kernel's shutdown hook calls {@link #tell} so the running cell at least says why the kernel is going, instead of a
 * silent death.
 */
final class ExitNotice {
    private ExitNotice() {}

    /** Ends the running cell {@code cell} (of {@code env}) with an error naming the exit's caller; nothing when no thread called exit. */
    static void tell(ShellReplyEnvironment env, int cell) {
        String caller = exitCaller();
        if (caller == null) return;   // a signal or the JVM ending on its own, not a call
        String msg = "[notebook] the kernel is exiting: System.exit was called from " + caller + ", which the kernel cannot refuse;"
                + " the notebook's variables are lost. Restart the kernel (Kernel > Restart)";
        try {
            List<String> tb = List.of(ErrorFormatter.RED + msg + ErrorFormatter.RESET);
            env.publish(new PublishError("KernelExit", msg, tb));
            ErrorReply reply = new ErrorReply("KernelExit", msg, tb);
            reply.setExecutionCount(cell);
            env.replyError(ExecuteReply.MESSAGE_TYPE.error(), reply);
            env.setStatusIdle();
            Thread.sleep(300);   // ZeroMQ sends in the background; give it time before the JVM halts
        } catch (RuntimeException | InterruptedException e) {
            // the connection is already closing: nothing more to tell
        }
    }

    /** The first frame outside the JDK of the thread that called exit, or null when no thread did. */
    static String exitCaller() {
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            StackTraceElement[] st = e.getValue();
            int i = 0;
            while (i < st.length && !(st[i].getClassName().equals("java.lang.Shutdown") && st[i].getMethodName().equals("exit"))) i++;
            if (i == st.length || e.getKey().getName().startsWith("SIG")) continue;
            while (i < st.length && (st[i].getClassName().startsWith("java.") || st[i].getClassName().startsWith("jdk.internal."))) i++;
            if (i == st.length) return "JDK code on thread " + e.getKey().getName();
            StackTraceElement f = st[i];
            boolean cellFrame = f.getClassName().startsWith("REPL.") || f.getFileName() != null && f.getFileName().startsWith("#");
            return cellFrame ? "the cell through reflection or a method handle" : "library code at " + f;
        }
        return null;
    }
}
