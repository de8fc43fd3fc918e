package ane4j.model;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jinjava.javax.el.CompositeELResolver;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * A model's chat template (the Jinja {@code chat_template} of its tokenizer_config.json, or a GGUF file's
 * {@code tokenizer.chat_template}), rendered as transformers' {@code apply_chat_template} renders it
 * (transformers/utils/chat_template_utils.py: a Jinja environment with trim_blocks and lstrip_blocks, the functions
 * raise_exception and strftime_now, a tojson filter that is Python's json.dumps with ensure_ascii=False; the context
 * holds messages, tools, add_generation_prompt and the special tokens by name).
 *
 * <p>The engine is HubSpot's Jinjava, a Java Jinja. What Hugging Face templates use of Python beyond Jinja is added here:
 * string methods (startswith, endswith, strip, lstrip, rstrip, split, upper, lower, title, capitalize, replace, join,
 * find, count) and dict methods (get, keys, values, items) through an EL resolver; {@code x[::-1]} (reversing a list),
 * which Jinjava's parser does not take, is rewritten to {@code (x|reverse|list)}; {@code not x is defined} to
 * {@code not (x is defined)} and {@code not x|length == 1} to {@code not (x|length == 1)}, as Jinja binds them
 * (Jinjava's {@code not} binds tighter); keyword arguments of
 * {@code namespace(…)} are parenthesized, since Jinjava would bind {@code a=x|length - 1} as {@code (a=x|length) - 1}.
 * Anything else the engine cannot render is a one-line {@code [chat]} error naming it.
 */
public final class ChatTemplate {
    private static final String TAG = "[chat] ";

    private final String source, template, from;
    private final Map<String, Object> specialTokens;
    private final Jinjava jinjava;

    /**
     * @param source        the Jinja text
     * @param specialTokens bos_token, eos_token, … as the template sees them (tokenizer_config.json's strings)
     * @param from          where the template came from, for messages
     */
    public ChatTemplate(String source, Map<String, Object> specialTokens, String from) {
        this.source = source;
        this.template = rewrite(source);
        this.from = from;
        this.specialTokens = new LinkedHashMap<>(specialTokens);
        CompositeELResolver resolver = new CompositeELResolver();
        resolver.add(new PythonMethods());
        resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
        // Python Jinja's behaviour where Jinjava's default differs: {{- -}} trims, filters bind tighter than operators,
        // dict keys are evaluated, iterating a dict gives its keys, values print as Python prints them
        LegacyOverrides python = LegacyOverrides.newBuilder().withUseTrimmingForNotesAndExpressions(true).withUseNaturalOperatorPrecedence(true)
                .withParseWhitespaceControlStrictly(true).withEvaluateMapKeys(true).withIterateOverMapKeys(true).withUsePyishObjectMapper(true)
                .withKeepNullableLoopValues(true).withWhitespaceRequiredWithinTokens(false).build();
        this.jinjava = new Jinjava(JinjavaConfig.newBuilder().withElResolver(resolver).withTrimBlocks(true).withLstripBlocks(true)
                .withLegacyOverrides(python).withFailOnUnknownTokens(false).withMaxOutputSize(64L << 20).build());
        jinjava.getGlobalContext().registerFilter(new ToJson());
        // Python's strings are iterable (Jinjava's "iterable" is false for them): Llama 3's template tells tool results apart by it
        jinjava.getGlobalContext().registerExpTest(new com.hubspot.jinjava.lib.exptest.ExpTest() {
            @Override public String getName() { return "iterable"; }

            @Override public boolean evaluate(Object v, JinjavaInterpreter interpreter, Object... args) {
                return v instanceof String || v instanceof Iterable<?> || v instanceof Map<?, ?> || (v != null && v.getClass().isArray());
            }
        });
        try {
            jinjava.getGlobalContext().registerFunction(new ELFunctionDefinition("", "raise_exception",
                    ChatTemplate.class.getDeclaredMethod("raiseException", Object.class)));
        } catch (NoSuchMethodException e) {
            throw new AssertionError(e);
        }
    }

    /** The Jinja text as the model ships it. */
    public String source() { return source; }

    /** The special tokens the template sees by name (bos_token, eos_token, …). */
    public Map<String, Object> specialTokens() { return Map.copyOf(specialTokens); }

    /** Renders {@code messages} (each a map with role and content, maybe tool_calls …) as {@code apply_chat_template(tokenize=False)}. */
    public String render(List<? extends Map<String, ?>> messages, boolean addGenerationPrompt, Map<String, Object> extra) {
        Map<String, Object> ctx = new LinkedHashMap<>(specialTokens);
        ctx.put("messages", messages);
        ctx.put("add_generation_prompt", addGenerationPrompt);
        ctx.put("tools", null);
        ctx.put("documents", null);
        if (extra != null) ctx.putAll(extra);
        // transformers gives strftime_now, whose use the templates guard with "is defined": today's date as they ask for it
        if (source.contains("strftime_now") && !ctx.containsKey("date_string"))
            ctx.put("date_string", java.time.LocalDate.now().format(java.time.format.DateTimeFormatter.ofPattern("dd MMM yyyy", Locale.ENGLISH)));
        RenderResult r;
        try {
            r = jinjava.renderForResult(template, ctx);
        } catch (TemplateRaised e) {
            throw new ModelFormatException(TAG + "the chat template of " + from + " refused the messages: " + e.getMessage());
        } catch (RuntimeException e) {
            throw new ModelFormatException(TAG + "the chat template of " + from + " cannot be rendered: " + oneLine(String.valueOf(e.getMessage())), e);
        }
        for (TemplateError e : r.getErrors()) {
            if (e.getSeverity() != TemplateError.ErrorType.FATAL) continue;
            String raised = raised(e);
            if (raised != null) throw new ModelFormatException(TAG + "the chat template of " + from + " refused the messages: " + raised);
            throw new ModelFormatException(TAG + "the chat template of " + from + " uses something ane4j's Jinja engine cannot render (line " + e.getLineno() + ": "
                    + oneLine(e.getMessage()) + (e.getFieldName() == null || e.getFieldName().isEmpty() ? "" : " in '" + oneLine(e.getFieldName()) + "'")
                    + "); give the data as {\"prompt\", \"completion\"} or {\"text\"} lines");
        }
        return r.getOutput();
    }

    private static String raised(TemplateError e) {
        Throwable t = e.getException();
        while (t != null) {
            if (t instanceof TemplateRaised) return t.getMessage();
            t = t.getCause();
        }
        String m = String.valueOf(e.getMessage());
        int at = m.indexOf(TemplateRaised.PREFIX);
        return at < 0 ? null : oneLine(m.substring(at + TemplateRaised.PREFIX.length()));
    }

    private static String oneLine(String s) { return s.replaceAll("\\s*\\R\\s*", " ").strip(); }

    // ----------------------------------------------------------------------------------------------
    // source rewrites for what Jinjava's parser does not take

    private static final Pattern REVERSED = Pattern.compile("([A-Za-z_][\\w.]*(?:\\[[^\\[\\]]*\\])*)\\[::-1\\]");
    private static final Pattern NAMESPACE = Pattern.compile("namespace\\(");

    // "not x is defined" is not (x is defined) in Jinja, but (not x) is defined in Jinjava
    private static final Pattern NOT_IS = Pattern.compile("\\bnot\\s+([A-Za-z_][\\w.]*(?:\\[[^\\[\\]]*\\])*)\\s+is\\s+(not\\s+)?([A-Za-z_]\\w*)");

    // "not x|length == 1" likewise: not (x|length == 1)
    private static final Pattern NOT_CMP = Pattern.compile("\\bnot\\s+([A-Za-z_][\\w.]*(?:\\[[^\\[\\]]*\\])*(?:\\s*\\|\\s*[A-Za-z_]\\w*(?:\\([^()]*\\))?)*)"
            + "\\s*(==|!=|<=|>=|<|>)\\s*(-?\\d+(?:\\.\\d+)?|'[^']*'|\"[^\"]*\"|[A-Za-z_][\\w.]*)");

    static String rewrite(String t) {
        t = REVERSED.matcher(t).replaceAll(m -> Matcher.quoteReplacement("(" + m.group(1) + "|reverse|list)"));
        t = NOT_IS.matcher(t).replaceAll(m -> Matcher.quoteReplacement("not (" + m.group(1) + " is " + (m.group(2) == null ? "" : "not ") + m.group(3) + ")"));
        t = NOT_CMP.matcher(t).replaceAll(m -> Matcher.quoteReplacement("not (" + m.group(1) + " " + m.group(2) + " " + m.group(3) + ")"));
        StringBuilder out = new StringBuilder();
        Matcher m = NAMESPACE.matcher(t);
        int at = 0;
        while (m.find(at)) {
            int open = m.end(), close = matching(t, open);
            if (close < 0) break;
            out.append(t, at, open);
            List<String> args = splitTopLevel(t.substring(open, close));
            for (int i = 0; i < args.size(); i++) {
                String a = args.get(i);
                Matcher kw = Pattern.compile("^\\s*([A-Za-z_]\\w*)\\s*=(?!=)(.*)$", Pattern.DOTALL).matcher(a);
                out.append(i > 0 ? "," : "").append(kw.matches() ? " " + kw.group(1) + "=(" + kw.group(2).strip() + ")" : a);
            }
            out.append(')');
            at = close + 1;
        }
        return out.append(t.substring(at)).toString();
    }

    // the index of the ')' closing the '(' before `from`, skipping strings and nested brackets; -1 if none
    private static int matching(String t, int from) {
        int depth = 0;
        for (int i = from; i < t.length(); i++) {
            char c = t.charAt(i);
            if (c == '\'' || c == '"') {
                int j = i + 1;
                while (j < t.length() && t.charAt(j) != c) j += t.charAt(j) == '\\' ? 2 : 1;
                i = j;
            } else if (c == '(' || c == '[' || c == '{') depth++;
            else if (c == ')' || c == ']' || c == '}') {
                if (depth == 0) return c == ')' ? i : -1;
                depth--;
            }
        }
        return -1;
    }

    private static List<String> splitTopLevel(String s) {
        List<String> parts = new ArrayList<>();
        int depth = 0, start = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\'' || c == '"') {
                int j = i + 1;
                while (j < s.length() && s.charAt(j) != c) j += s.charAt(j) == '\\' ? 2 : 1;
                i = j;
            } else if (c == '(' || c == '[' || c == '{') depth++;
            else if (c == ')' || c == ']' || c == '}') depth--;
            else if (c == ',' && depth == 0) { parts.add(s.substring(start, i)); start = i + 1; }
        }
        if (!s.substring(start).isBlank() || !parts.isEmpty()) parts.add(s.substring(start));
        return parts;
    }

    // ----------------------------------------------------------------------------------------------
    // raise_exception, tojson

    /** What raise_exception throws: the template's own message. */
    static final class TemplateRaised extends RuntimeException {
        static final String PREFIX = "ane4j-template-raised: ";

        TemplateRaised(String m) { super(PREFIX + m); }

        @Override public String getMessage() { return super.getMessage().substring(PREFIX.length()); }
    }

    /** transformers' raise_exception(message): the render stops with the template's message. */
    public static Object raiseException(Object message) { throw new TemplateRaised(String.valueOf(message)); }

    /** tojson as transformers defines it: json.dumps(x, ensure_ascii=False, indent=indent, sort_keys=sort_keys). */
    static final class ToJson implements Filter {
        @Override public String getName() { return "tojson"; }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            return filter(var, interpreter, args, Map.of());
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            Object indent = kwargs.getOrDefault("indent", args.length > 0 ? args[0] : null);
            boolean sort = Boolean.TRUE.equals(kwargs.get("sort_keys"));
            StringBuilder b = new StringBuilder();
            dumps(var, indent == null ? -1 : Integer.parseInt(indent.toString()), sort, 0, b);
            return b.toString();
        }
    }

    /** Python's json.dumps(x, ensure_ascii=False) layout: ", " and ": " separators, or "," with newlines when indented. */
    static void dumps(Object v, int indent, boolean sortKeys, int level, StringBuilder b) {
        switch (v) {
            case null -> b.append("null");
            case Boolean z -> b.append(z ? "true" : "false");
            case String s -> quote(s, b);
            case Double d -> b.append(pyFloat(d));
            case Float f -> b.append(pyFloat(f.doubleValue()));
            case Number n -> b.append(n.longValue());
            case Map<?, ?> m -> {
                if (m.isEmpty()) { b.append("{}"); return; }
                List<Map.Entry<?, ?>> es = new ArrayList<>(m.entrySet());
                if (sortKeys) es.sort((x, y) -> String.valueOf(x.getKey()).compareTo(String.valueOf(y.getKey())));
                b.append('{');
                for (int i = 0; i < es.size(); i++) {
                    b.append(i > 0 ? (indent >= 0 ? "," : ", ") : "");
                    newline(indent, level + 1, b);
                    quote(String.valueOf(es.get(i).getKey()), b);
                    b.append(": ");
                    dumps(es.get(i).getValue(), indent, sortKeys, level + 1, b);
                }
                newline(indent, level, b);
                b.append('}');
            }
            case Collection<?> c -> {
                if (c.isEmpty()) { b.append("[]"); return; }
                b.append('[');
                int i = 0;
                for (Object o : c) {
                    b.append(i++ > 0 ? (indent >= 0 ? "," : ", ") : "");
                    newline(indent, level + 1, b);
                    dumps(o, indent, sortKeys, level + 1, b);
                }
                newline(indent, level, b);
                b.append(']');
            }
            default -> quote(String.valueOf(v), b);
        }
    }

    private static void newline(int indent, int level, StringBuilder b) {
        if (indent < 0) return;
        b.append('\n').append(" ".repeat(indent * level));
    }

    private static void quote(String s, StringBuilder b) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                case '\b' -> b.append("\\b");
                case '\f' -> b.append("\\f");
                default -> {
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
                }
            }
        }
        b.append('"');
    }

    /** Python's repr of a float: the shortest digits, exponent form below 1e-4 and from 1e16 ("1e-05", "1e+16"). */
    static String pyFloat(double d) {
        if (Double.isNaN(d)) return "NaN";
        if (Double.isInfinite(d)) return d > 0 ? "Infinity" : "-Infinity";
        if (d == 0) return (1 / d < 0) ? "-0.0" : "0.0";
        BigDecimal x = new BigDecimal(Double.toString(d)).stripTrailingZeros();
        int exp = x.precision() - x.scale() - 1;
        if (exp >= -4 && exp < 16) {
            String plain = x.toPlainString();
            return plain.contains(".") ? plain : plain + ".0";
        }
        String digits = x.unscaledValue().abs().toString();
        String mant = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
        return (d < 0 ? "-" : "") + mant + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
    }

    // ----------------------------------------------------------------------------------------------
    // Python's str and dict methods

    private static final class PythonMethods extends ELResolver {
        @Override public Object getValue(ELContext c, Object base, Object property) { return null; }

        @Override public Class<?> getType(ELContext c, Object base, Object property) { return null; }

        @Override public void setValue(ELContext c, Object base, Object property, Object value) {}

        @Override public boolean isReadOnly(ELContext c, Object base, Object property) { return true; }

        @Override public java.util.Iterator<java.beans.FeatureDescriptor> getFeatureDescriptors(ELContext c, Object base) { return null; }

        @Override public Class<?> getCommonPropertyType(ELContext c, Object base) { return null; }

        @Override
        public Object invoke(ELContext c, Object base, Object method, Class<?>[] types, Object[] p) {
            Object r = NONE;
            if (base instanceof String s) r = str(s, String.valueOf(method), p == null ? new Object[0] : p);
            else if (base instanceof Map<?, ?> m) r = dict(m, String.valueOf(method), p == null ? new Object[0] : p);
            if (r == NONE) return null;
            c.setPropertyResolved(true);
            return r;
        }
    }

    private static final Object NONE = new Object();

    private static Object str(String s, String method, Object[] p) {
        String a = p.length > 0 && p[0] != null ? String.valueOf(p[0]) : null;
        return switch (method) {
            case "startswith" -> p[0] instanceof List<?> l ? l.stream().anyMatch(x -> s.startsWith(String.valueOf(x))) : s.startsWith(a);
            case "endswith" -> p[0] instanceof List<?> l ? l.stream().anyMatch(x -> s.endsWith(String.valueOf(x))) : s.endsWith(a);
            case "strip" -> rstrip(lstrip(s, a), a);
            case "lstrip" -> lstrip(s, a);
            case "rstrip" -> rstrip(s, a);
            case "split" -> split(s, a, p.length > 1 ? ((Number) p[1]).intValue() : -1);
            case "upper" -> s.toUpperCase(Locale.ROOT);
            case "lower" -> s.toLowerCase(Locale.ROOT);
            case "title" -> title(s);
            case "capitalize" -> s.isEmpty() ? s : s.substring(0, 1).toUpperCase(Locale.ROOT) + s.substring(1).toLowerCase(Locale.ROOT);
            case "replace" -> s.replace(a, String.valueOf(p[1]));
            case "join" -> String.join(s, ((Collection<?>) p[0]).stream().map(String::valueOf).toList());
            case "find" -> (long) s.indexOf(a);
            case "count" -> (long) (a.isEmpty() ? s.length() + 1 : s.split(Pattern.quote(a), -1).length - 1);
            default -> NONE;
        };
    }

    private static Object dict(Map<?, ?> m, String method, Object[] p) {
        return switch (method) {
            case "get" -> m.containsKey(p[0]) ? m.get(p[0]) : (p.length > 1 ? p[1] : null);
            case "keys" -> new ArrayList<>(m.keySet());
            case "values" -> new ArrayList<>(m.values());
            case "items" -> {
                List<List<Object>> items = new ArrayList<>();
                for (var e : m.entrySet()) items.add(java.util.Arrays.asList(e.getKey(), e.getValue()));
                yield items;
            }
            default -> NONE;
        };
    }

    private static boolean strippable(char ch, String chars) { return chars == null ? Character.isWhitespace(ch) : chars.indexOf(ch) >= 0; }

    private static String lstrip(String s, String chars) {
        int i = 0;
        while (i < s.length() && strippable(s.charAt(i), chars)) i++;
        return s.substring(i);
    }

    private static String rstrip(String s, String chars) {
        int i = s.length();
        while (i > 0 && strippable(s.charAt(i - 1), chars)) i--;
        return s.substring(0, i);
    }

    // Python's str.split: by a separator keeping empty parts, or by whitespace runs dropping them
    private static List<String> split(String s, String sep, int max) {
        List<String> out = new ArrayList<>();
        if (sep == null) {
            for (String w : s.strip().split("\\s+")) if (!w.isEmpty()) out.add(w);
            return out;
        }
        if (sep.isEmpty()) throw new IllegalArgumentException("empty separator");
        int at = 0;
        while (max < 0 || out.size() < max) {
            int i = s.indexOf(sep, at);
            if (i < 0) break;
            out.add(s.substring(at, i));
            at = i + sep.length();
        }
        out.add(s.substring(at));
        return out;
    }

    private static String title(String s) {
        StringBuilder b = new StringBuilder(s.length());
        boolean prevCased = false;
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            b.append(prevCased ? Character.toLowerCase(ch) : Character.toUpperCase(ch));
            prevCased = Character.isLetter(ch);
        }
        return b.toString();
    }
}
