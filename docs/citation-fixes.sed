# Rewrites document citations in code comments so that every *.md named under src/ exists in the repository
# (docs/citation-fixes.md says which names are ours and which are other projects' files, and how this was checked).
# GNU sed, extended regular expressions; idempotent (a second run changes nothing). Apply from the repository root:
#   git ls-files -z src/ | grep -zE '\.(java|c|m|h)$' | xargs -0 sed -i -E -f docs/citation-fixes.sed

# 1. Absolute paths of the build machine's shared folder, for the documents now in docs/ (any other one is left for
#    docs/check-citations.sh to report: it is not in the repository).
s#\(DESIGN\.md §2, /work/shared/docs/DESIGN\.md\)#(docs/DESIGN.md §2)#g
s#/work/shared/docs/(ane-facts|anchors|ane-audit|ane-audit-2|macos27-ane|DESIGN)\.md#docs/\1.md#g

# 2. Our reference notes, named bare: prefix docs/ (not where already prefixed by a path or a URL).
s#(^|[^A-Za-z0-9_./-])(ane-facts|anchors|ane-audit|ane-audit-2|macos27-ane|macos-first-contact|DESIGN)\.md#\1docs/\2.md#g
# ... and named without ".md" ("ane-facts §1.3", "ane-facts A3", "ane-facts errata 5", "ane-audit F7")
s#(^|[^A-Za-z0-9_./-])ane-facts (§|A[0-9]|errata|[0-9]+\.[0-9])#\1docs/ane-facts.md \2#g
s#(^|[^A-Za-z0-9_./-])ane-audit (F[0-9])#\1docs/ane-audit.md \2#g
s#(^|[^A-Za-z0-9_./-])ane-facts$#\1docs/ane-facts.md#
s#(^|[^A-Za-z0-9_./-])audit (F[0-9]+)\)#\1docs/ane-audit.md \2)#g

# 3. Our documents that never were in the repository: point at the document that holds the rule.
s#the shape TEAM\.md fixes:#the shape docs/DESIGN.md §5 fixes:#g
s#\(style\.md Part 2 §4\.1\)#(docs/DESIGN.md §2)#g

# 4. Other projects' files, named so a reader knows whose file it is.
s#\(m5result\.md\)#(maderix/ANE training/m5result.md)#g
s#maderix m5result\.md#maderix training/m5result.md#g
s#(^|[^A-Za-z0-9_./-])gguf\.md#\1ggml-org/ggml docs/gguf.md#g

# 5. Code-index ids of decompiled AppleNeuralEngine dumps: a reader cannot resolve them; cite the audit instead
#    (docs/ane-audit.md F1: the identifier, F2: the daemon cache, F13: unload). The dumps' repository paths were not
#    recorded, so the fake runtime's legend says the numbers are labels.
s#\(index ids 14176493954, 10601026801, 10027707542\)#(docs/ane-audit.md F1)#g
s#_ANEInMemoryModelDescriptor \(index ids 14176493954, 10601026801\) and _ANEHashEncoding \(10027707542\):#_ANEInMemoryModelDescriptor and _ANEHashEncoding, decompiled (docs/ane-audit.md F1):#g
s#\{@code _ANEInMemoryModelDescriptor\}, index ids 14176493954 and 10601026801\)#{@code _ANEInMemoryModelDescriptor}, docs/ane-audit.md F1)#g
s#, index id 58792041997, asks#, docs/ane-audit.md F2, asks#g
s#; probe index id 54297209156:#; the public probe ane_cache_probe2.m:#g
s#, decompile index ids 9864758886,$#, decompiled {@code _ANEInMemoryModel}, docs/ane-audit.md F2;#
s#^(     \* )58792041997; called as#\1called as#
s#by the cache probe, index id 54297209156\)#by the public cache probe ane_cache_probe2.m)#g
s#\(probe 54297209156\)#(the public probe ane_cache_probe2.m, docs/ane-audit.md F2)#g
s#^( \* )\(Index ids are decompiled AppleNeuralEngine class dumps in the public code index, opened with read_file:$#\1(Numbers are labels of decompiled AppleNeuralEngine class dumps published in public repositories whose paths were\n\1 not recorded; docs/ane-audit.md F1, F2 and F13 read them:#
