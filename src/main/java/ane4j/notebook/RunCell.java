package ane4j.notebook;

/**
 * A {@code %%train} or {@code %%fit} cell read once: its first line's {@code [NAME] [--background] [key=value …]} and the
 * body's {@code key = value} lines after them, as one settings text; {@code help} when the first line asks for it.
 * Refused in one line: a second name, a flag the magic does not take, or a run still running in the session.
 */
record RunCell(String name, boolean background, boolean help, String settings) {

    static RunCell read(MagicCall call, String magic, boolean takesBackground) {
        String name = null;
        boolean background = false;
        StringBuilder settings = new StringBuilder();
        for (String a : call.args()) {
            if (a.equals("--help") || a.equals("-h")) return new RunCell(null, false, true, "");
            if (takesBackground && a.equals("--background")) background = true;
            else if (a.contains("=")) settings.append(a).append('\n');
            else if (name == null && !a.startsWith("-")) name = a;
            else throw new MagicException("[%%" + magic + "] unexpected argument '" + a + "'; the first line takes [NAME]"
                    + (takesBackground ? " [--background]" : "") + ", the cell key = value lines");
        }
        settings.append(call.body());
        TrainingRun cur = TrainingRun.current();
        if (cur != null && cur.running())
            throw new MagicException("[%%" + magic + "] a run is still running (" + cur.progressLine() + "); %train stop first");
        return new RunCell(name, background, false, settings.toString());
    }
}
