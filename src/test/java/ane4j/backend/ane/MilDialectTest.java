package ane4j.backend.ane;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

class MilDialectTest {
    @Test
    void everyChipTriesProgram13FirstAndM1AndM2FallBackToProgram10() {
        String saved = System.clearProperty(MilDialect.PROPERTY);
        try {
            assertEquals(MilDialect.PROGRAM_1_3_IOS18, MilDialect.forSubType("h13"));
            assertEquals(MilDialect.PROGRAM_1_3_IOS18, MilDialect.forSubType("H14G"));
            assertEquals(java.util.Optional.of(MilDialect.PROGRAM_1_0_IOS16), MilDialect.fallbackFor("h13", MilDialect.PROGRAM_1_3_IOS18));
            assertEquals(java.util.Optional.of(MilDialect.PROGRAM_1_0_IOS16), MilDialect.fallbackFor("H14G", MilDialect.PROGRAM_1_3_IOS18));
            assertEquals(java.util.Optional.empty(), MilDialect.fallbackFor("h15g", MilDialect.PROGRAM_1_3_IOS18), "M3: no fallback");
            assertEquals(java.util.Optional.empty(), MilDialect.fallbackFor("h13", MilDialect.PROGRAM_1_0_IOS16), "nothing after ios16");
            assertNull(MilDialect.forced());
            assertEquals(MilDialect.PROGRAM_1_3_IOS18, MilDialect.forSubType("h15g"));
            assertEquals(MilDialect.PROGRAM_1_3_IOS18, MilDialect.forSubType("h16g"));
            assertEquals(MilDialect.PROGRAM_1_3_IOS18, MilDialect.forSubType("h17"));
            assertEquals(MilDialect.PROGRAM_1_3_IOS18, MilDialect.forSubType(null));
            System.setProperty(MilDialect.PROPERTY, "ios16");
            assertEquals(MilDialect.PROGRAM_1_0_IOS16, MilDialect.forSubType("h16g"));
            assertEquals(MilDialect.PROGRAM_1_0_IOS16, MilDialect.forced());
        } finally {
            if (saved == null) System.clearProperty(MilDialect.PROPERTY); else System.setProperty(MilDialect.PROPERTY, saved);
        }
    }

    @Test
    void parseAcceptsVersionOpsetOrNameAndNamesTheChoicesOtherwise() {
        assertEquals(MilDialect.PROGRAM_1_3_IOS18, MilDialect.parse(" 1.3 "));
        assertEquals(MilDialect.PROGRAM_1_0_IOS16, MilDialect.parse("program_1_0_ios16"));
        assertEquals("1.3", MilDialect.PROGRAM_1_3_IOS18.programVersion());
        assertEquals("ios16", MilDialect.PROGRAM_1_0_IOS16.opset());
        var e = assertThrows(IllegalArgumentException.class, () -> MilDialect.parse("2.0"));
        assertTrue(e.getMessage().startsWith("[ane4j.milDialect] unknown MIL dialect \"2.0\""));
    }
}
