package ane4j.notebook;

import ane4j.mil.Dialect;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** MIL text as HTML with simple syntax highlighting: keywords, types, op names, strings, numbers, comments. */
public final class MilHighlighter {
    private static final Pattern TOKEN = Pattern.compile(
            "(?<comment>//[^\\n]*)"
                    + "|(?<string>\"(?:[^\"\\\\\\n]|\\\\.)*\")"
                    + "|(?<dialect><ios1[0-9]>)"
                    + "|(?<number>-?(?:0x[0-9a-fA-F.]+p[-+]?\\d+|\\d+(?:\\.\\d+)?(?:[eE][-+]?\\d+)?)|\\b(?:inf|nan|true|false)\\b)"
                    + "|(?<word>[A-Za-z_][A-Za-z0-9_]*)(?<call>\\s*\\()?");
    private static final Set<String> KEYWORDS = Set.of("program", "func");
    private static final Set<String> TYPES = Set.of("tensor", "fp16", "fp32", "fp64", "int8", "uint8", "int16", "uint16", "int32",
            "int64", "bool", "string", "dict", "list", "tuple");

    /** Inline styles, so the colours show in any notebook front end (no CSS needed). */
    static final String KEYWORD = "color:#008000;font-weight:bold", TYPE = "color:#0033b3", OP = "color:#7b1fa2;font-weight:bold",
            STRING = "color:#ba2121", NUMBER = "color:#986801", COMMENT = "color:#6a737d;font-style:italic";

    private MilHighlighter() {}

    /** The program written in the dialect of this machine ({@code -Dane4j.milDialect}, else ios18), highlighted. */
    public static String html(Program program) {
        return html(MilWriter.write(program, Dialect.fromProperty(Dialect.IOS18)));
    }

    public static String html(String milText) {
        StringBuilder sb = new StringBuilder("<pre class=\"ane4j-mil\" style=\"line-height:1.3\">");
        Matcher m = TOKEN.matcher(milText);
        int at = 0;
        while (m.find()) {
            sb.append(Renderers.escape(milText.substring(at, m.start())));
            at = m.end();
            if (m.group("comment") != null) span(sb, COMMENT, m.group());
            else if (m.group("string") != null) span(sb, STRING, m.group());
            else if (m.group("dialect") != null) span(sb, KEYWORD, m.group());
            else if (m.group("number") != null) span(sb, NUMBER, m.group());
            else {
                String w = m.group("word");
                String rest = m.group().substring(w.length());
                if (KEYWORDS.contains(w)) span(sb, KEYWORD, w);
                else if (TYPES.contains(w)) span(sb, TYPE, w);
                else if (m.group("call") != null) span(sb, OP, w);
                else sb.append(Renderers.escape(w));
                sb.append(Renderers.escape(rest));
            }
        }
        sb.append(Renderers.escape(milText.substring(at))).append("</pre>");
        return sb.toString();
    }

    private static void span(StringBuilder sb, String style, String text) {
        sb.append("<span style=\"").append(style).append("\">").append(Renderers.escape(text)).append("</span>");
    }
}
