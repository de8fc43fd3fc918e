#!/usr/bin/env bash
# ane4j generate vs llama2.c's run.c, side by side: a stories110m-size model (random init: speed does not depend on the
# values), greedy from "Once upon a time" to the end of the context (252 tokens), twice, alternating; the two texts
# must be equal byte for byte. Usage: tools/generate_vs_runc.sh LLAMA2C_CHECKOUT [WORK_DIR]
# (a llama2.c checkout: git clone https://github.com/karpathy/llama2.c; it has run.c and tokenizer.bin at its root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${1:?usage: tools/generate_vs_runc.sh LLAMA2C_CHECKOUT [WORK_DIR]}
work=${2:-$root/runs/generate-vs-runc}
mkdir -p "$work"
cd "$work"
# run.c as llama2.c's Makefile builds it: `make run` (-O3, one thread) and `make runomp` (-Ofast -fopenmp -march=native)
# macOS: no nproc, and Apple clang has no -fopenmp of its own (Homebrew's libomp through -Xpreprocessor, when installed)
cores=$(nproc 2>/dev/null || sysctl -n hw.ncpu)
cc -O3 -o run_O3 "$src/run.c" -lm
if [ "$(uname -s)" = Darwin ]; then
  omp=$(brew --prefix libomp 2>/dev/null || true)
  if [ -n "$omp" ] && [ -d "$omp/lib" ]; then
    cc -Ofast -Xpreprocessor -fopenmp -I"$omp/include" -L"$omp/lib" -lomp -mcpu=native -o run_omp "$src/run.c" -lm
  else
    echo "no libomp (brew install libomp): the OpenMP run.c is the one-thread build" >&2
    cp run_O3 run_omp
  fi
else
  cc -Ofast -fopenmp -march=native -o run_omp "$src/run.c" -lm
fi
cp "$src/tokenizer.bin" tokenizer.bin
if [ ! -f stories110m.bin ]; then
  cat > MakeModel.java <<'JAVA'
public class MakeModel {
    public static void main(String[] a) {
        ane4j.model.Llama2Bin.write(java.nio.file.Path.of(a[0]), ane4j.model.Parameters.init(ane4j.model.ModelConfig.parse("stories110m"), 42));
    }
}
JAVA
  java=$(sed -n 's/^exec "\([^"]*\)".*/\1/p' "$root/bin/ane4j")   # the JDK 25 install.sh wrote into bin/ane4j
  "$java" -cp "$root/target/ane4j.jar" MakeModel.java stories110m.bin
fi
prompt="Once upon a time"
for round in 1 2; do
  echo "round $round, $(uptime | sed 's/.*load/load/')"
  "$root/bin/ane4j" generate --model stories110m.bin --tokenizer tokenizer.bin --prompt "$prompt" --temperature 0 --tokens 256 \
    2> ane4j.err > ane4j.txt
  echo "  ane4j generate:                         $(grep '^\[generate' ane4j.err)"
  ./run_O3 stories110m.bin -z tokenizer.bin -t 0 -n 256 -i "$prompt" 2> runc.err > runc_O3.txt
  echo "  run.c -O3, one thread:                  $(grep achieved runc.err)"
  OMP_NUM_THREADS=$cores ./run_omp stories110m.bin -z tokenizer.bin -t 0 -n 256 -i "$prompt" 2> runc.err > runc_omp.txt
  echo "  run.c -Ofast -fopenmp, $cores threads:     $(grep achieved runc.err)"
  cmp -s ane4j.txt runc_O3.txt && cmp -s ane4j.txt runc_omp.txt && echo "  texts: identical" || echo "  texts: DIFFER (diff ane4j.txt runc_O3.txt)"
done
echo "end, $(uptime | sed 's/.*load/load/')"
