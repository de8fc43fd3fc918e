package ane4j.model;

import java.nio.charset.StandardCharsets;

/**
 * Turns a stream of token bytes into printable text as it comes. A character whose UTF-8 bytes arrive in several tokens
 * (llama2.c byte tokens {@code <0xE2><0x82><0xAC>}) is held back until it is complete; a byte that cannot start or
 * continue a valid sequence, and an incomplete sequence left at {@link #finish}, print as {@code \xe2} escapes (Python's backslashreplace form), so
 * nothing becomes U+FFFD and the bytes stay readable. Control bytes other than tab and line breaks are escaped too.
 */
public final class Utf8Stream {
    private final byte[] pending = new byte[4];
    private int npending;

    /** The text {@code bytes} complete; incomplete trailing bytes wait for the next call. */
    public String push(byte[] bytes) {
        StringBuilder out = new StringBuilder();
        for (byte b : bytes) accept(b & 0xFF, out);
        return out.toString();
    }

    /** Whatever is still held back, as escapes (the stream ended inside a character). */
    public String finish() {
        StringBuilder out = new StringBuilder();
        escapePending(out);
        return out.toString();
    }

    private void accept(int b, StringBuilder out) {
        if (npending > 0) {
            if (isContinuation(b) && continues(b)) {
                pending[npending++] = (byte) b;
                if (npending == length(pending[0] & 0xFF)) {
                    out.append(new String(pending, 0, npending, StandardCharsets.UTF_8));
                    npending = 0;
                }
                return;
            }
            escapePending(out); // the sequence broke off: its bytes as escapes, then b on its own
        }
        int len = length(b);
        if (len == 1) {
            // control bytes other than tab and line breaks would be invisible or move the cursor (run.c's safe_printf skips them)
            if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F) escape(b, out);
            else out.append((char) b);
        }
        else if (len == 0) escape(b, out);
        else pending[npending++] = (byte) b;
    }

    // the second byte's ranges of RFC 3629 §4 exclude overlong forms, surrogates and code points past U+10FFFF
    private boolean continues(int b) {
        if (npending != 1) return true;
        int lead = pending[0] & 0xFF;
        return switch (lead) {
            case 0xE0 -> b >= 0xA0;
            case 0xED -> b <= 0x9F;
            case 0xF0 -> b >= 0x90;
            case 0xF4 -> b <= 0x8F;
            default -> true;
        };
    }

    private static boolean isContinuation(int b) { return (b & 0xC0) == 0x80; }

    // bytes of the sequence a lead byte starts; 0 for a byte that never starts one
    private static int length(int b) {
        if (b < 0x80) return 1;
        if (b >= 0xC2 && b <= 0xDF) return 2;
        if (b >= 0xE0 && b <= 0xEF) return 3;
        if (b >= 0xF0 && b <= 0xF4) return 4;
        return 0;
    }

    private void escapePending(StringBuilder out) {
        for (int i = 0; i < npending; i++) escape(pending[i] & 0xFF, out);
        npending = 0;
    }

    private static void escape(int b, StringBuilder out) { out.append(String.format("\\x%02x", b)); }
}
