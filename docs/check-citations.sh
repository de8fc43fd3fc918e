#!/usr/bin/env bash
# Every *.md named under src/ leads somewhere: ours must exist in the repository; another project's file must have its
# owner's name on the same line or the line before (docs/citation-fixes.md lists them). Run from the repository root;
# exit status 1 names each citation that fails.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
bad=0
while IFS=: read -r f l name; do
  case "$name" in
    docs/design/ane-constraints.md|docs/design/ane/ane-constraints.md|docs/design/ane-op-support-matrix.md) owner=ironmill ;;
    docs/ane_constraints.md) owner=Orion ;;
    training/m5result.md|benchmarks/ANE_BENCHMARK_REPORT.md) owner=maderix ;;
    docs/source/developer_guides/checkpoint.md) owner=peft ;;
    docs/gguf.md) owner=ggml ;;
    DYLIBS/*.md) owner=ipsw-diffs ;;
    *) owner= ;;
  esac
  if [ -z "$owner" ]; then
    [ -e "$name" ] || { echo "missing: $f:$l $name"; bad=1; }
  else
    sed -n "$((l > 1 ? l - 1 : 1)),${l}p" "$f" | grep -qi "$owner" || { echo "no owner ($owner) next to $f:$l $name"; bad=1; }
  fi
done < <(grep -rnoE '[A-Za-z0-9_./-]*\.md\b' src/)
[ "$bad" = 0 ] && echo "every *.md named in src/ is in the repository or named with its owner"
exit "$bad"
