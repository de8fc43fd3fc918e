package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class CommandLineRecordTest {
    /** run.json's command line: arguments a shell would split or expand are single-quoted, quotes inside escaped. */
    @Test
    void argumentsAreQuotedAsAShellNeedsThem() {
        assertEquals("ane4j train --steps 20 --run-dir runs/a", Main.quoted(new String[] {"train", "--steps", "20", "--run-dir", "runs/a"}));
        assertEquals("ane4j train --run-dir 'my runs/a' --model 'it'\\''s'", Main.quoted(new String[] {"train", "--run-dir", "my runs/a", "--model", "it's"}));
    }
}
