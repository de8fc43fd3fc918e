package ane4j.mil;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads MIL text in either dialect ({@code program(1.3)} / {@code <ios18>} with short scalars, {@code program(1.0)} /
 * {@code <ios16>} with verbose {@code tensor<T, []>(…)} scalars) into the same graph model the builder makes. Every op
 * goes through {@link Op#infer}, and declared output types must equal the inferred ones. Errors are
 * {@link MilParseException}s with {@code line:column}; the parser is linear in the input and never recurses deeply.
 */
public final class MilParser {
    /** What a parse found besides the graph: the program version and each function's declared opset. */
    public record Parsed(Program program, String programVersion, Map<String, Opset> opsets, List<String> warnings) {
        /** {@code 1.0} → ios16 (verbose scalars), anything else → ios18. */
        public Dialect dialect() { return programVersion.equals("1.0") ? Dialect.IOS16 : Dialect.IOS18; }
    }

    static final int MAX_NUMBER_LENGTH = 400;
    static final int MAX_LIST_DEPTH = 8;
    static final int MAX_ATTR_DEPTH = 16;

    private final List<Token> tokens;
    private int pos;
    private final Map<String, Token> blobSites = new LinkedHashMap<>();

    private MilParser(String text) {
        this.tokens = new Lexer(text).run();
    }

    public static Program parse(String text) { return parseDetailed(text, null).program(); }

    /** Parses and loads the weight files the BLOBFILE constants name from {@code modelDir} ({@code @model_path/}). */
    public static Program parse(String text, Path modelDir) {
        Parsed p = parseDetailed(text, modelDir);
        for (String w : p.warnings()) LOG.log(System.Logger.Level.WARNING, w);
        return p.program();
    }

    private static final System.Logger LOG = System.getLogger("ane4j.mil");

    /** Parses; when {@code modelDir} is not null also reads and checks the weight files. */
    public static Parsed parseDetailed(String text, Path modelDir) {
        if (text == null) throw new MilParseException(0, 0, "[mil] no text");
        MilParser p = new MilParser(text);
        try {
            Parsed parsed = p.program();
            if (modelDir == null) return parsed;
            List<String> warnings = new ArrayList<>();
            return new Parsed(p.loadWeights(parsed.program(), modelDir, warnings::add), parsed.programVersion(), parsed.opsets(), List.copyOf(warnings));
        } catch (MilParseException e) {
            throw e;
        } catch (MilException e) {
            // a model invariant the grammar checks did not catch first: report it where the parser stood
            throw err(p.peek(), e.getMessage());
        }
    }

    /** Heap per byte of MIL text while parsing (tokens, literals): a 20 MB text of inline constants parsed in 800 MB, not in 600 MB. */
    static final int HEAP_PER_TEXT_BYTE = 40;

    /**
     * Reads a {@code .mil} file as UTF-8, refusing before any allocation a file that cannot be a Java string (2 GiB) or
     * whose parse would not fit the heap, and naming the byte offset of the first byte that is not UTF-8.
     */
    public static String readText(Path file) {
        long size;
        try {
            size = java.nio.file.Files.size(file);
        } catch (java.io.IOException e) {
            throw new MilException("cannot read " + file + ": " + reason(e), e);
        }
        if (size > Integer.MAX_VALUE - 8)
            throw new MilException("[mil] " + file + " is " + size + " bytes; MIL text over 2 GiB cannot be parsed: move large constants into BLOBFILE weight files");
        long heap = Runtime.getRuntime().maxMemory();
        if (size * HEAP_PER_TEXT_BYTE > heap)
            throw new MilException("[mil] " + file + " is " + size + " bytes, parsing it needs about " + (size * HEAP_PER_TEXT_BYTE >> 20)
                    + " MB of heap but the JVM has " + (heap >> 20) + " MB: raise -Xmx (ANE4J_JAVA_OPTS) or move large constants into BLOBFILE weight files");
        byte[] bytes;
        String special = RegularFiles.notRegular(file);
        if (special != null) throw new MilException("[mil] " + special);
        try {
            bytes = java.nio.file.Files.readAllBytes(file);
        } catch (java.io.IOException e) {
            throw new MilException("cannot read " + file + ": " + reason(e), e);
        }
        java.nio.ByteBuffer in = java.nio.ByteBuffer.wrap(bytes);
        java.nio.CharBuffer out = java.nio.CharBuffer.allocate(bytes.length);
        java.nio.charset.CoderResult r = java.nio.charset.StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT).onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
                .decode(in, out, true);
        if (r.isError())
            throw new MilException(String.format("[mil] %s: byte %d (0x%02X) is not UTF-8; MIL text is UTF-8, re-save the file as UTF-8",
                    file, in.position(), bytes[in.position()] & 0xFF));
        String text = out.flip().toString();
        // a UTF-8 byte order mark (Windows editors write one) is skipped, as the JSON and text readers skip it
        return text.startsWith("\uFEFF") ? text.substring(1) : text;
    }

    private static String reason(java.io.IOException e) {
        if (e instanceof java.nio.file.NoSuchFileException) return "no such file";
        if (e instanceof java.nio.file.AccessDeniedException) return "permission denied";
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    /** Every BLOBFILE path a program's constants reference, in order of first use. */
    public static Set<String> blobPaths(Program program) {
        Set<String> s = new LinkedHashSet<>();
        for (Literal l : blobLiterals(program)) s.add(l.blobRef().path());
        return s;
    }

    static List<Literal> blobLiterals(Program program) {
        List<Literal> out = new ArrayList<>();
        for (Function f : program.functions().values())
            for (Operation o : f.operations()) {
                for (Literal l : o.attributes().values()) if (l.isBlob()) out.add(l);
                for (Arg a : o.inputs().values()) if (a instanceof Arg.Inline i && i.literal().isBlob()) out.add(i.literal());
            }
        return out;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // tokens

    enum Kind { IDENT, NUMBER, STRING, PUNCT, EOF }

    /** One token; {@code text} is the unescaped value for strings, the spelling otherwise. */
    record Token(Kind kind, String text, int line, int col) {
        boolean is(String punct) { return kind == Kind.PUNCT && text.equals(punct); }
        boolean isIdent(String s) { return kind == Kind.IDENT && text.equals(s); }

        String describe() {
            return switch (kind) {
                case EOF -> "end of input";
                case STRING -> "string " + MilWriter.quote(shorten(text));
                default -> "'" + shorten(text) + "'";
            };
        }

        private static String shorten(String s) { return s.length() > 32 ? s.substring(0, 29) + "..." : s; }
    }

    private static final class Lexer {
        private final String s;
        private int i, line = 1, lineStart;
        private final List<Token> out = new ArrayList<>();

        Lexer(String s) { this.s = s; }

        private int col() { return i - lineStart + 1; }

        private MilParseException err(int l, int c, String m) { return new MilParseException(l, c, m); }

        List<Token> run() {
            while (true) {
                skipSpaceAndComments();
                if (i >= s.length()) { out.add(new Token(Kind.EOF, "", line, col())); return out; }
                int l = line, c = col(), start = i;
                char ch = s.charAt(i);
                if (isIdentStart(ch)) {
                    while (i < s.length() && isIdentPart(s.charAt(i))) i++;
                    out.add(new Token(Kind.IDENT, s.substring(start, i), l, c));
                } else if (ch == '"') {
                    out.add(new Token(Kind.STRING, string(l, c), l, c));
                } else if (isDigit(ch) || ((ch == '-' || ch == '+' || ch == '.') && startsNumber(i + 1, ch != '.'))) {
                    out.add(new Token(Kind.NUMBER, number(l, c), l, c));
                } else if (ch == '-' && i + 1 < s.length() && s.charAt(i + 1) == '>') {
                    i += 2;
                    out.add(new Token(Kind.PUNCT, "->", l, c));
                } else if ("()[]{}<>,=;".indexOf(ch) >= 0) {
                    i++;
                    out.add(new Token(Kind.PUNCT, String.valueOf(ch), l, c));
                } else {
                    int cp = s.codePointAt(i);
                    throw err(l, c, String.format("[mil] unexpected character '%s' (U+%04X)", Character.isISOControl(cp) ? "?" : new String(Character.toChars(cp)), cp));
                }
            }
        }

        /** A sign is followed by a digit, '.', or the words inf/nan. */
        private boolean startsNumber(int j, boolean allowWords) {
            if (j >= s.length()) return false;
            char c = s.charAt(j);
            if (isDigit(c)) return true;
            if (c == '.') return j + 1 < s.length() && isDigit(s.charAt(j + 1));
            if (!allowWords) return false;
            return (s.startsWith("inf", j) || s.startsWith("nan", j)) && (j + 3 >= s.length() || !isIdentPart(s.charAt(j + 3)));
        }

        private String number(int l, int c) {
            int start = i;
            if (s.charAt(i) == '-' || s.charAt(i) == '+') i++;
            if (s.startsWith("inf", i) || s.startsWith("nan", i)) i += 3;
            else if (s.startsWith("0x", i) || s.startsWith("0X", i)) {
                i += 2;
                while (i < s.length() && (isHex(s.charAt(i)) || s.charAt(i) == '.')) i++;
                if (i < s.length() && (s.charAt(i) == 'p' || s.charAt(i) == 'P')) { i++; exponent(); }
            } else {
                while (i < s.length() && isDigit(s.charAt(i))) i++;
                if (i < s.length() && s.charAt(i) == '.') { i++; while (i < s.length() && isDigit(s.charAt(i))) i++; }
                if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) { i++; exponent(); }
            }
            if (i - start > MAX_NUMBER_LENGTH) throw err(l, c, "[mil] number with " + (i - start) + " characters is too long (at most " + MAX_NUMBER_LENGTH + ")");
            return s.substring(start, i);
        }

        private void exponent() {
            if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) i++;
            while (i < s.length() && isDigit(s.charAt(i))) i++;
        }

        private String string(int l, int c) {
            StringBuilder sb = new StringBuilder();
            i++;
            while (true) {
                if (i >= s.length()) throw err(l, c, "[mil] unterminated string (missing closing '\"')");
                char ch = s.charAt(i++);
                if (ch == '"') return sb.toString();
                if (ch == '\n') { line++; lineStart = i; }
                if (ch != '\\') { sb.append(ch); continue; }
                if (i >= s.length()) throw err(l, c, "[mil] unterminated string (missing closing '\"')");
                char e = s.charAt(i++);
                switch (e) {
                    case '"' -> sb.append('"');
                    case '\\' -> sb.append('\\');
                    case '\'' -> sb.append('\'');
                    case 'n' -> sb.append('\n');
                    case 't' -> sb.append('\t');
                    case 'r' -> sb.append('\r');
                    case '0' -> sb.append('\0');
                    default -> throw err(line, col() - 2, "[mil] unknown escape '\\" + e + "' in string (use \\\", \\\\, \\n, \\t or \\r)");
                }
            }
        }

        private void skipSpaceAndComments() {
            while (i < s.length()) {
                char ch = s.charAt(i);
                if (ch == '\n') { i++; line++; lineStart = i; }
                else if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f') i++;
                else if (s.startsWith("//", i)) { while (i < s.length() && s.charAt(i) != '\n') i++; }
                else if (s.startsWith("/*", i)) {
                    int l = line, c = col();
                    int end = s.indexOf("*/", i + 2);
                    if (end < 0) throw err(l, c, "[mil] unterminated comment (missing '*/')");
                    for (; i < end + 2; i++) if (s.charAt(i) == '\n') { line++; lineStart = i + 1; }
                } else return;
            }
        }

        private static boolean isDigit(char c) { return c >= '0' && c <= '9'; }
        private static boolean isHex(char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
        private static boolean isIdentStart(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
        private static boolean isIdentPart(char c) { return isIdentStart(c) || isDigit(c); }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // token helpers

    private Token peek() { return tokens.get(pos); }

    private Token peek(int k) { return tokens.get(Math.min(pos + k, tokens.size() - 1)); }

    private Token next() {
        Token t = tokens.get(pos);
        if (t.kind != Kind.EOF) pos++;
        return t;
    }

    private static MilParseException err(Token at, String message) { return new MilParseException(at.line, at.col, message); }

    private MilParseException expected(String what, Token found) {
        return err(found, "expected " + what + ", found " + found.describe());
    }

    private Token expect(String punct, String context) {
        Token t = peek();
        if (!t.is(punct)) throw expected("'" + punct + "'" + (context.isEmpty() ? "" : " " + context), t);
        return next();
    }

    private Token expectIdent(String what) {
        Token t = peek();
        if (t.kind != Kind.IDENT) throw expected(what, t);
        return next();
    }

    // ---------------------------------------------------------------------------------------------------------------
    // program, attributes, functions

    private Parsed program() {
        Token kw = peek();
        if (!kw.isIdent("program")) throw expected("'program(1.3)' or 'program(1.0)' at the start", kw);
        next();
        expect("(", "after 'program'");
        Token v = next();
        if (v.kind != Kind.NUMBER) throw expected("a program version like 1.3 or 1.0", v);
        if (!v.text.matches("\\d{1,3}\\.\\d{1,3}")) throw err(v, "[mil] program version '" + v.text + "' is not of the form 1.3 or 1.0");
        // the two program versions of the MIL text dialects (docs/anchors.md §2.1: program(1.3)/ios18 as maderix writes it,
        // program(1.0)/ios16 from maderix/ANE PR #6); coremltools writes no other in text form
        if (!v.text.equals("1.3") && !v.text.equals("1.0"))
            throw err(v, "[mil] program version " + v.text + " is unknown; write program(1.3) (ios18 functions, M3 and later) or program(1.0) (ios16, M1/M2)");
        expect(")", "after the program version");
        if (peek().is("[")) attributeBlock();
        expect("{", "to open the program body");
        Map<String, Function> functions = new LinkedHashMap<>();
        Map<String, Opset> opsets = new LinkedHashMap<>();
        while (!peek().is("}")) {
            Token t = peek();
            if (!t.isIdent("func")) throw expected("'func' or the '}' that closes the program", t);
            Token nameTok = peek(1);
            Function f = function(opsets, v.text);
            if (functions.containsKey(f.name())) throw err(nameTok, "[mil] function '" + f.name() + "' is defined twice");
            functions.put(f.name(), f);
        }
        Token close = next();
        if (functions.isEmpty()) throw err(close, "[mil] the program has no functions (expected 'func main<ios18>(…) { … } -> (…);')");
        if (peek().kind != Kind.EOF) throw expected("end of input after the program's closing '}'", peek());
        return new Parsed(new Program(functions, Weights.empty()), v.text, opsets, List.of());
    }

    /** {@code [buildInfo = dict<string, string>({{"k", "v"}, …})]}: parsed for syntax, contents not kept. */
    private void attributeBlock() {
        expect("[", "");
        if (peek().is("]")) { next(); return; }
        while (true) {
            Token name = expectIdent("an attribute name like buildInfo");
            expect("=", "after '" + name.text + "'");
            attributeValue(0);
            Token t = next();
            if (t.is("]")) return;
            if (!t.is(",")) throw expected("',' or ']' after attribute '" + name.text + "'", t);
        }
    }

    private void attributeValue(int depth) {
        Token t = peek();
        if (depth > MAX_ATTR_DEPTH) throw err(t, "[mil] attribute value nested more than " + MAX_ATTR_DEPTH + " levels deep");
        if (t.kind == Kind.STRING || t.kind == Kind.NUMBER) { next(); return; }
        if (t.isIdent("dict")) {
            next();
            expect("<", "after 'dict'");
            type();
            expect(",", "between the key and value types of the dict");
            type();
            expect(">", "to close the dict type");
            expect("(", "before the dict entries");
            expect("{", "to open the dict entries");
            if (!peek().is("}")) {
                while (true) {
                    expect("{", "to open a dict entry {key, value}");
                    attributeValue(depth + 1);
                    expect(",", "between a dict key and its value");
                    attributeValue(depth + 1);
                    expect("}", "to close a dict entry");
                    Token sep = next();
                    if (sep.is("}")) break;
                    if (!sep.is(",")) throw expected("',' or '}' after a dict entry", sep);
                }
            } else next();
            expect(")", "to close the dict");
            return;
        }
        if (t.kind == Kind.IDENT && startsLiteral(0)) { literal(); return; }
        throw expected("an attribute value (a dict, a string or a typed literal)", t);
    }

    private Function function(Map<String, Opset> opsets, String programVersion) {
        next(); // func
        Token nameTok = expectIdent("a function name after 'func'");
        expect("<", "and an opset after the function name, e.g. " + nameTok.text + "<ios18>");
        Token opsetTok = expectIdent("an opset like ios18 or ios16");
        Opset opset = Opset.fromMilName(opsetTok.text);
        if (opset == null) throw err(opsetTok, "[mil] unknown opset '" + opsetTok.text + "' (ios15, ios16, ios17 or ios18)");
        if (programVersion.equals("1.0") && opset == Opset.IOS18)
            throw err(opsetTok, "[mil] function " + nameTok.text + " is declared <ios18> but program(1.0) is the ios16 dialect; write program(1.3) or declare <ios16>");
        expect(">", "after the opset");
        opsets.put(nameTok.text, opset);
        Scope scope = new Scope(nameTok.text);
        List<Value> inputs = new ArrayList<>();
        expect("(", "to open the parameter list of function " + nameTok.text);
        if (!peek().is(")")) {
            while (true) {
                TensorType t = type();
                Token n = expectIdent("a parameter name after its type");
                Value v = new Value(n.text, t);
                scope.define(n, v);
                inputs.add(v);
                Token sep = next();
                if (sep.is(")")) break;
                if (!sep.is(",")) throw expected("',' or ')' after parameter '" + n.text + "'", sep);
            }
        } else next();
        expect("{", "to open the body of function " + nameTok.text);
        List<Operation> ops = new ArrayList<>();
        while (!peek().is("}")) {
            if (peek().kind == Kind.EOF) throw expected("a statement or the '}' that closes function " + nameTok.text, peek());
            ops.add(statement(scope, nameTok.text, opset));
        }
        next();
        expect("->", "and the function's outputs after its body, e.g. } -> (y);");
        expect("(", "to open the output list");
        List<Value> outputs = new ArrayList<>();
        if (!peek().is(")")) {
            while (true) {
                Token n = expectIdent("an output value name");
                Value v = scope.resolve(n);
                if (outputs.contains(v)) throw err(n, "[mil] output '" + n.text + "' is listed twice");
                outputs.add(v);
                Token sep = next();
                if (sep.is(")")) break;
                if (!sep.is(",")) throw expected("',' or ')' after output '" + n.text + "'", sep);
            }
        } else next();
        if (outputs.isEmpty()) throw err(peek(), "[mil] function " + nameTok.text + " has no outputs");
        if (peek().is(";")) next();
        return new Function(nameTok.text, inputs, ops, outputs);
    }

    /** Names defined so far in one function. */
    private static final class Scope {
        final String function;
        final Map<String, Value> values = new LinkedHashMap<>();
        final Map<String, Token> sites = new LinkedHashMap<>();

        Scope(String function) { this.function = function; }

        void define(Token at, Value v) {
            Token prev = sites.get(v.name());
            if (prev != null) throw err(at, "[mil] value '" + v.name() + "' is already defined at " + prev.line + ":" + prev.col + " (MIL values are SSA: define each name once)");
            values.put(v.name(), v);
            sites.put(v.name(), at);
        }

        Value resolve(Token name) {
            Value v = values.get(name.text);
            if (v != null) return v;
            List<String> names = new ArrayList<>(values.keySet());
            String known = names.isEmpty() ? "none" : names.size() <= 12 ? String.join(", ", names)
                    : String.join(", ", names.subList(0, 4)) + ", …, " + String.join(", ", names.subList(names.size() - 8, names.size()));
            throw err(name, "unknown value '" + name.text + "' (defined so far in " + function + ": " + known + ")");
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // statements

    private Operation statement(Scope scope, String function, Opset opset) {
        Token start = peek();
        List<Token> outNames = new ArrayList<>();
        List<TensorType> outTypes = new ArrayList<>();
        List<Token> typeStarts = new ArrayList<>();
        while (true) {
            if (!startsType()) throw expected("a statement (e.g. tensor<fp16, [1, 4]> y = relu(x = x)[name = string(\"y\")];) or '}'", peek());
            typeStarts.add(peek());
            outTypes.add(type());
            Token n = expectIdent("an output name after its type");
            for (Token o : outNames) if (o.text.equals(n.text)) throw err(n, "[mil] output '" + n.text + "' is declared twice in one statement");
            outNames.add(n);
            if (!peek().is(",")) break;
            next();
        }
        expect("=", "after the output declaration");
        Token opTok = expectIdent("an op name after '='");
        Op op = Op.fromMilName(opTok.text);
        if (op == null) throw err(opTok, "[mil] unknown op '" + opTok.text + "' (known: " + String.join(", ", java.util.Arrays.stream(Op.values()).map(Op::milName).toList()) + ")");
        if (op.opset().compareTo(opset) > 0)
            throw err(opTok, "[" + op.milName() + "] needs opset " + op.opset().milName() + " but function " + function + " is declared <" + opset.milName() + ">");
        expect("(", "after op '" + op.milName() + "'");
        Map<String, Arg> args = new LinkedHashMap<>();
        if (!peek().is(")")) {
            while (true) {
                Token an = expectIdent("an argument name");
                Op.Param p = op.param(an.text);
                if (p == null || p.kind() == Op.Kind.ATTRIBUTE)
                    throw err(an, "[" + op.milName() + "] unknown parameter '" + an.text + "' (parameters: " + params(op, false) + ")");
                if (args.containsKey(an.text)) throw err(an, "[" + op.milName() + "] argument '" + an.text + "' is given twice");
                expect("=", "after argument '" + an.text + "'");
                args.put(an.text, argValue(scope));
                Token sep = next();
                if (sep.is(")")) break;
                if (!sep.is(",")) throw expected("',' or ')' after argument '" + an.text + "'", sep);
            }
        } else next();
        Map<String, Literal> attrs = new LinkedHashMap<>();
        String label = null;
        if (peek().is("[")) {
            next();
            if (!peek().is("]")) {
                while (true) {
                    Token an = expectIdent("an attribute name");
                    boolean isName = an.text.equals("name");
                    Op.Param p = op.param(an.text);
                    if (!isName && (p == null || p.kind() != Op.Kind.ATTRIBUTE))
                        throw err(an, "[" + op.milName() + "] unknown attribute '" + an.text + "' (attributes: " + params(op, true) + ")");
                    if ((isName && label != null) || attrs.containsKey(an.text)) throw err(an, "[" + op.milName() + "] attribute '" + an.text + "' is given twice");
                    expect("=", "after attribute '" + an.text + "'");
                    Token lt = peek();
                    if (!startsLiteral(0)) throw expected("a typed literal such as string(\"x\") or fp16(0.5) for attribute '" + an.text + "'", lt);
                    Literal l = literal();
                    if (isName) {
                        if (l.dtype() != DType.STRING || !l.type().isScalar() || l.isBlob()) throw err(lt, "[" + op.milName() + "] name must be a string, e.g. name = string(\"" + outNames.get(0).text + "\")");
                        label = l.stringValue();
                    } else attrs.put(an.text, l);
                    Token sep = next();
                    if (sep.is("]")) break;
                    if (!sep.is(",")) throw expected("',' or ']' after attribute '" + an.text + "'", sep);
                }
            } else next();
        }
        expect(";", "at the end of the statement");

        List<TensorType> inferred;
        try {
            inferred = op.infer(args, attrs);
        } catch (MilParseException e) {
            throw e;
        } catch (MilException e) {
            throw err(start, e.getMessage());
        }
        if (inferred.size() != outTypes.size())
            throw err(start, "[" + op.milName() + "] declares " + outTypes.size() + " output" + (outTypes.size() == 1 ? "" : "s") + " but the op has " + inferred.size());
        for (int k = 0; k < inferred.size(); k++)
            if (!inferred.get(k).equals(outTypes.get(k))) {
                // the span is the declared type, the part to fix: from its first token to just before the output name
                Token t = typeStarts.get(k), n = outNames.get(k);
                int end = n.line == t.line ? n.col - 2 : t.col;
                throw new MilParseException(t.line, t.col, end, "[" + op.milName() + "] " + n.text + ": declared " + MilWriter.type(outTypes.get(k), Dialect.IOS18)
                        + " but inferred " + MilWriter.type(inferred.get(k), Dialect.IOS18));
            }
        List<Value> outs = new ArrayList<>();
        Literal constant = op == Op.CONST ? attrs.get("val") : null;
        for (int k = 0; k < outNames.size(); k++) {
            Value v = new Value(outNames.get(k).text, outTypes.get(k), constant);
            scope.define(outNames.get(k), v);
            outs.add(v);
        }
        return new Operation(op, args, attrs, outs, label != null ? label : outs.get(0).name());
    }

    private static String params(Op op, boolean attributes) {
        List<String> l = op.params().values().stream().filter(p -> (p.kind() == Op.Kind.ATTRIBUTE) == attributes).map(Op.Param::name).toList();
        List<String> all = new ArrayList<>(l);
        if (attributes) all.add(0, "name");
        return all.isEmpty() ? "none" : String.join(", ", all);
    }

    private Arg argValue(Scope scope) {
        Token t = peek();
        if (t.is("(")) {
            next();
            List<Value> vs = new ArrayList<>();
            if (!peek().is(")")) {
                while (true) {
                    Token n = expectIdent("a value name in the tuple");
                    vs.add(scope.resolve(n));
                    Token sep = next();
                    if (sep.is(")")) break;
                    if (!sep.is(",")) throw expected("',' or ')' in the tuple after '" + n.text + "'", sep);
                }
            } else next();
            return new Arg.Tuple(vs);
        }
        if (t.kind == Kind.IDENT) {
            if (startsLiteral(0) && !(scope.values.containsKey(t.text) && (t.isIdent("true") || t.isIdent("false")))) return new Arg.Inline(literal());
            next();
            return Arg.of(scope.resolve(t));
        }
        throw expected("a value name, a typed literal like fp16(0.5), or a tuple (a, b)", t);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // types and literals

    private boolean startsType() {
        Token t = peek();
        return t.kind == Kind.IDENT && (t.text.equals("tensor") || DType.fromMilName(t.text) != null);
    }

    /** {@code fp16(…)}, {@code tensor<…>(…)}, bare {@code true}/{@code false}. */
    private boolean startsLiteral(int k) {
        Token t = peek(k);
        if (t.kind != Kind.IDENT) return false;
        if (t.text.equals("true") || t.text.equals("false")) return true;
        if (t.text.equals("tensor")) return peek(k + 1).is("<");
        return DType.fromMilName(t.text) != null && peek(k + 1).is("(");
    }

    private TensorType type() {
        Token t = peek();
        if (t.kind != Kind.IDENT) throw expected("a type such as tensor<fp16, [1, 4]> or fp16", t);
        next();
        if (!t.text.equals("tensor")) {
            DType d = DType.fromMilName(t.text);
            if (d == null) throw err(t, "[mil] unknown type '" + t.text + "' (fp16, fp32, int8, uint8, int16, int32, bool, string, uint64 or tensor<…>)");
            return TensorType.scalar(d);
        }
        expect("<", "after 'tensor'");
        Token dt = expectIdent("an element type like fp16");
        DType d = DType.fromMilName(dt.text);
        if (d == null) throw err(dt, "[mil] unknown element type '" + dt.text + "' (fp16, fp32, int8, uint8, int16, int32, bool, string, uint64)");
        expect(",", "after the element type");
        expect("[", "to open the shape");
        List<Integer> dims = new ArrayList<>();
        long count = 1;
        if (!peek().is("]")) {
            while (true) {
                Token n = next();
                if (n.kind != Kind.NUMBER) throw expected("a dimension (a non-negative integer)", n);
                if (dims.size() == TensorType.MAX_RANK) throw err(n, "[type] rank more than " + TensorType.MAX_RANK + " is not supported");
                long dim = integer(n, 0, Integer.MAX_VALUE, "dimension");
                dims.add((int) dim);
                count = dim == 0 ? 0 : count > Integer.MAX_VALUE / dim ? Long.MAX_VALUE : count * dim;
                Token sep = next();
                if (sep.is("]")) break;
                if (!sep.is(",")) throw expected("',' or ']' in the shape", sep);
            }
        } else next();
        if (count > Integer.MAX_VALUE) throw err(dt, "[type] shape " + dims + " has more than 2^31-1 elements");
        expect(">", "to close the tensor type");
        return new TensorType(d, dims.stream().mapToInt(Integer::intValue).toArray());
    }

    private Literal literal() {
        Token t = peek();
        if (t.isIdent("true") || t.isIdent("false")) { next(); return Literal.bool(t.text.equals("true")); }
        TensorType type = type();
        expect("(", "to open the value of " + MilWriter.type(type, Dialect.IOS18));
        Literal l;
        Token v = peek();
        if (v.isIdent("BLOBFILE")) l = blobfile(type);
        else {
            List<Token> elems = new ArrayList<>();
            if (v.is("[")) list(elems, type);
            else if (type.isScalar()) elems.add(next());
            else throw expected("'[' to open the values of " + MilWriter.type(type, Dialect.IOS18) + " (or BLOBFILE(…))", v);
            if (elems.size() != type.count())
                throw err(v, "[const] " + MilWriter.type(type, Dialect.IOS18) + " needs " + type.count() + " value" + (type.count() == 1 ? "" : "s") + ", found " + elems.size());
            l = build(type, elems);
        }
        expect(")", "to close the literal");
        return l;
    }

    /** Collects the elements of a (possibly nested) bracketed list, iteratively; nesting depth is bounded. */
    private void list(List<Token> out, TensorType type) {
        int depth = 0;
        Token open = next(); // '['
        depth++;
        boolean needValue = true;
        while (depth > 0) {
            Token t = peek();
            if (t.is("]") ) {
                next();
                depth--;
                needValue = false;
            } else if (t.is(",") && !needValue) {
                next();
                needValue = true;
                if (peek().is("]")) throw expected("a value after ','", peek());
            } else if (t.is("[") && needValue) {
                if (depth >= MAX_LIST_DEPTH) throw err(t, "[const] literal nested more than " + MAX_LIST_DEPTH + " levels deep");
                next();
                depth++;
            } else if (needValue && (t.kind == Kind.NUMBER || t.kind == Kind.STRING || t.kind == Kind.IDENT)) {
                next();
                if (out.size() >= type.count())
                    throw err(t, "[const] too many values: " + MilWriter.type(type, Dialect.IOS18) + " holds " + type.count());
                out.add(t);
                needValue = false;
            } else throw expected(needValue ? "a value or ']'" : "',' or ']' in the list opened at " + open.line + ":" + open.col, t);
        }
    }

    private Literal build(TensorType type, List<Token> elems) {
        int n = elems.size();
        Object data = switch (type.dtype()) {
            case FP16 -> { short[] a = new short[n]; for (int k = 0; k < n; k++) a[k] = fp16(elems.get(k)); yield a; }
            case FP32 -> { float[] a = new float[n]; for (int k = 0; k < n; k++) a[k] = fp32(elems.get(k)); yield a; }
            case INT8 -> { byte[] a = new byte[n]; for (int k = 0; k < n; k++) a[k] = (byte) integer(elems.get(k), -128, 127, "int8"); yield a; }
            case UINT8 -> { byte[] a = new byte[n]; for (int k = 0; k < n; k++) a[k] = (byte) integer(elems.get(k), 0, 255, "uint8"); yield a; }
            case INT16 -> { short[] a = new short[n]; for (int k = 0; k < n; k++) a[k] = (short) integer(elems.get(k), Short.MIN_VALUE, Short.MAX_VALUE, "int16"); yield a; }
            case INT32 -> { int[] a = new int[n]; for (int k = 0; k < n; k++) a[k] = (int) integer(elems.get(k), Integer.MIN_VALUE, Integer.MAX_VALUE, "int32"); yield a; }
            case UINT64 -> { long[] a = new long[n]; for (int k = 0; k < n; k++) a[k] = uint64(elems.get(k)); yield a; }
            case BOOL -> {
                boolean[] a = new boolean[n];
                for (int k = 0; k < n; k++) {
                    Token t = elems.get(k);
                    if (!t.isIdent("true") && !t.isIdent("false")) throw expected("true or false", t);
                    a[k] = t.text.equals("true");
                }
                yield a;
            }
            case STRING -> {
                String[] a = new String[n];
                for (int k = 0; k < n; k++) {
                    if (elems.get(k).kind != Kind.STRING) throw expected("a string in double quotes", elems.get(k));
                    a[k] = elems.get(k).text;
                }
                yield a;
            }
        };
        return Literal.of(type, data);
    }

    private Literal blobfile(TensorType type) {
        Token kw = next();
        if (type.dtype().blobCode() == 0) throw err(kw, "[const] BLOBFILE cannot hold " + type.dtype() + " (fp16, fp32, int8, uint8, int16 or int32)");
        expect("(", "after BLOBFILE");
        String path = null;
        Long offset = null;
        while (true) {
            Token k = expectIdent("path or offset inside BLOBFILE(…)");
            expect("=", "after '" + k.text + "'");
            Token lt = peek();
            if (!startsLiteral(0)) throw expected("a typed literal such as string(\"@model_path/weights/w.bin\") or uint64(64)", lt);
            Literal l = literal();
            if (k.text.equals("path") && path == null) {
                if (l.isBlob() || l.dtype() != DType.STRING || !l.type().isScalar()) throw err(lt, "[const] BLOBFILE path must be a string, e.g. path = string(\"@model_path/weights/w.bin\")");
                path = l.stringValue();
                if (path.isEmpty() || path.chars().anyMatch(Character::isISOControl))
                    throw err(lt, "[const] BLOBFILE path " + MilWriter.quote(path.replaceAll("\\p{Cntrl}", "?")) + " is empty or holds a control character; name a file like string(\"@model_path/weights/w.bin\")");
            } else if (k.text.equals("offset") && offset == null) {
                if (l.isBlob() || l.dtype() != DType.UINT64 || !l.type().isScalar()) throw err(lt, "[const] BLOBFILE offset must be a uint64, e.g. offset = uint64(64)");
                offset = l.longAt(0);
                if (offset < 0) throw err(lt, "[const] BLOBFILE offset " + Long.toUnsignedString(offset) + " is too large");
            } else throw err(k, "[const] BLOBFILE takes path and offset once each, found '" + k.text + "'");
            Token sep = next();
            if (sep.is(")")) break;
            if (!sep.is(",")) throw expected("',' or ')' inside BLOBFILE(…)", sep);
        }
        if (path == null || offset == null) throw err(kw, "[const] BLOBFILE needs both path and offset");
        blobSites.putIfAbsent(path, kw);
        return Literal.blob(type, path, offset);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // numbers

    private static long integer(Token t, long min, long max, String what) {
        if (t.kind != Kind.NUMBER) throw err(t, "expected an integer " + what + ", found " + t.describe());
        String s = t.text;
        BigInteger v;
        try {
            String body = s.startsWith("+") || s.startsWith("-") ? s.substring(1) : s;
            boolean neg = s.startsWith("-");
            if (body.startsWith("0x") || body.startsWith("0X")) v = new BigInteger(body.substring(2), 16);
            else v = new BigInteger(body);
            if (neg) v = v.negate();
        } catch (NumberFormatException e) {
            throw err(t, "expected an integer " + what + ", found " + t.describe());
        }
        if (v.compareTo(BigInteger.valueOf(min)) < 0 || v.compareTo(BigInteger.valueOf(max)) > 0)
            throw err(t, "[const] " + what + " " + s + " is out of range (" + min + ".." + max + ")");
        return v.longValue();
    }

    private static long uint64(Token t) {
        if (t.kind != Kind.NUMBER || t.text.startsWith("-")) throw err(t, "expected a non-negative integer uint64, found " + t.describe());
        try {
            BigInteger v = new BigInteger(t.text.startsWith("+") ? t.text.substring(1) : t.text);
            if (v.bitLength() > 64) throw err(t, "[const] uint64 " + t.text + " is out of range");
            return v.longValue();
        } catch (NumberFormatException e) {
            throw err(t, "expected a non-negative integer uint64, found " + t.describe());
        }
    }

    /** The special words, or null for a finite number. */
    private static Float special(Token t) {
        if (t.kind != Kind.NUMBER && t.kind != Kind.IDENT) return null;
        String s = t.text;
        return switch (s) {
            case "inf", "+inf" -> Float.POSITIVE_INFINITY;
            case "-inf" -> Float.NEGATIVE_INFINITY;
            case "nan", "+nan", "-nan" -> Float.NaN;
            default -> null;
        };
    }

    private static double parseDouble(Token t, String what) {
        if (t.kind != Kind.NUMBER && !(t.kind == Kind.IDENT && special(t) != null)) throw err(t, "expected an " + what + " number, found " + t.describe());
        try {
            String s = t.text;
            if (s.contains("0x") || s.contains("0X")) {
                if (!s.contains("p") && !s.contains("P")) s = s + "p0";
            }
            return Double.parseDouble(s);
        } catch (NumberFormatException e) {
            throw err(t, "expected an " + what + " number, found " + t.describe());
        }
    }

    private static float fp32(Token t) {
        Float sp = special(t);
        if (sp != null) return sp;
        String s = t.text;
        if (s.contains("x") || s.contains("X")) return (float) parseDouble(t, "fp32");
        try {
            return Float.parseFloat(s);
        } catch (NumberFormatException e) {
            throw err(t, "expected an fp32 number, found " + t.describe());
        }
    }

    /** Nearest fp16 (ties to even) to the exact decimal value of the token; hex floats are converted through double. */
    private static short fp16(Token t) {
        Float sp = special(t);
        if (sp != null) return Fp16.fromFloat(sp);
        double d = parseDouble(t, "fp16");
        boolean negative = t.text.startsWith("-");
        if (d == 0) return Fp16.fromFloat(negative ? -0f : 0f);
        short h = Fp16.fromFloat((float) d);
        if (t.text.contains("x") || t.text.contains("X") || Float.isInfinite(Fp16.toFloat(h))) return h;
        // (float) d may round once more before the fp16 rounding: compare h with its neighbours against the exact decimal
        BigDecimal exact;
        try {
            exact = new BigDecimal(t.text.startsWith("+") ? t.text.substring(1) : t.text);
        } catch (NumberFormatException | ArithmeticException e) {
            return h;
        }
        short best = h;
        BigDecimal bestDist = new BigDecimal(Fp16.toFloat(h)).subtract(exact).abs();
        for (int delta = -1; delta <= 1; delta += 2) {
            short c = (short) (h + delta);
            float cf = Fp16.toFloat(c);
            if (Float.isNaN(cf) || Float.isInfinite(cf)) continue;
            BigDecimal dist = new BigDecimal(cf).subtract(exact).abs();
            int cmp = dist.compareTo(bestDist);
            if (cmp < 0 || (cmp == 0 && (c & 1) == 0)) { best = c; bestDist = dist; }
        }
        return best;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // weights

    private Program loadWeights(Program program, Path modelDir, java.util.function.Consumer<String> warn) {
        List<Literal> literals = blobLiterals(program);
        if (literals.isEmpty()) return program;
        Set<String> paths = blobPaths(program);
        Weights w;
        try {
            w = Weights.read(modelDir, literals, warn);
        } catch (MilException e) {
            String failing = paths.stream().filter(p -> e.getMessage().contains(p.startsWith(Weights.MODEL_PATH) ? p.substring(Weights.MODEL_PATH.length()) : p))
                    .findFirst().orElse(paths.iterator().next());
            Token at = blobSites.get(failing);
            throw new MilParseException(at == null ? 0 : at.line, at == null ? 0 : at.col, e.getMessage());
        }
        return program.withWeights(w);
    }
}
