package ane4j.backend.ane;

import ane4j.backend.AneException;
import ane4j.backend.BackendException;
import ane4j.backend.CompileBudgetExceededException;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

class CompileBudgetTest {
    @Test
    void theCompilePastTheBudgetThrowsAndIsNotCounted() {
        CompileBudget b = new CompileBudget(2, 100);
        b.acquire();
        b.acquire();
        assertEquals(0, b.remaining());
        assertThrows(CompileBudgetExceededException.class, b::acquire);
        assertEquals(2, b.used());
    }

    @Test
    void failuresAreTheLeakOnlyAfterEnoughEarlierCompiles() {
        CompileBudget b = new CompileBudget(10, 2);
        AneException f = new AneException("[compileWithQoS:options:error:] boom");
        b.acquire();                       // compile #1 fails: 0 before it
        assertSame(f, b.classifyFailure(f));
        b.acquire();
        assertSame(f, b.classifyFailure(f)); // #2: 1 before
        b.acquire();                       // #3: 2 before → the leak
        BackendException leak = b.classifyFailure(f);
        assertEquals(2, ((CompileBudgetExceededException) leak).count());
        assertInstanceOf(CompileBudgetExceededException.class, leak);
        assertSame(f, leak.getCause());
        assertTrue(leak.getMessage().endsWith("[compileWithQoS:options:error:] boom"));
    }

    @Test
    void defaultsFollowMaderix() {
        assertEquals(100, CompileBudget.DEFAULT_BUDGET);
        assertThrows(IllegalArgumentException.class, () -> new CompileBudget(-1, 0));
    }
}
