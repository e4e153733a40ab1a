#!/usr/bin/env bash
# Format ompc's C and C++ sources with clang-format-19, as .clang-format
# (and awave/'s and tests/offload/'s own files) say.  --check changes
# nothing: it names every file that is not formatted and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
cf=${CLANG_FORMAT:-clang-format-19}
command -v "$cf" >/dev/null || { echo "format.sh: $cf not found (scripts/install-deps.sh installs it)" >&2; exit 2; }
if [ -d .git ] || git rev-parse --git-dir >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
else
  mapfile -t files < <(find . -path './build*' -prune -o \
                         \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' \) -print)
fi
if [ "$check" -eq 0 ]; then
  "$cf" -i "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$cf" --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (run scripts/format.sh)"
    bad=1
  fi
done
exit "$bad"
