package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** Streaming decode of token bytes: whole characters as they complete, everything else as visible \xNN escapes. */
class Utf8StreamTest {
    private static byte[] b(int... v) {
        byte[] out = new byte[v.length];
        for (int i = 0; i < v.length; i++) out[i] = (byte) v[i];
        return out;
    }

    @Test void aCharacterSplitOverTokensPrintsWhenComplete() {
        Utf8Stream s = new Utf8Stream();
        assertEquals("a", s.push(b('a', 0xE2)));
        assertEquals("", s.push(b(0x82)));
        assertEquals("€b", s.push(b(0xAC, 'b')));
        assertEquals("", s.finish());
        assertEquals("😀", s.push(b(0xF0, 0x9F)) + s.push(b(0x98)) + s.push(b(0x80)));
    }

    @Test void anIncompleteCharacterAtTheEndIsEscaped() {
        Utf8Stream s = new Utf8Stream();
        assertEquals("x", s.push(b('x', 0xE2, 0x82)));
        assertEquals("\\xe2\\x82", s.finish());
        assertEquals("", s.finish());
    }

    @Test void invalidBytesAreEscapedNeverReplaced() {
        Utf8Stream s = new Utf8Stream();
        // a lone continuation byte, a byte that never starts UTF-8, a broken-off sequence followed by ASCII
        assertEquals("\\x9f\\xff\\xe2a", s.push(b(0x9F, 0xFF, 0xE2, 'a')));
        // overlong (E0 80), surrogate (ED A0) and past U+10FFFF (F4 90): the lead byte breaks off
        assertEquals("\\xe0\\x80\\xed\\xa0\\xf4\\x90", s.push(b(0xE0, 0x80, 0xED, 0xA0, 0xF4, 0x90)));
        assertEquals("\\xc0\\xc1", s.push(b(0xC0, 0xC1)));
        // invisible control bytes are escaped; tab and line breaks print
        assertEquals("\\x00\\x1b[\\x7f\t\n\r", s.push(b(0, 0x1B, '[', 0x7F, '\t', '\n', '\r')));
        assertEquals("é", s.push(b(0xC3, 0xA9)));
    }
}
