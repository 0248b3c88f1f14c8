#!/bin/sh
# make lint: cppcheck and clang-tidy (configured by .clang-tidy) over src/;
# any finding fails. cppcheck is told jansson's macros and the _Noreturn
# functions; its sentinel-NULL portability note is off (NULL is a pointer
# in C, and sbx_strvec_pushl is declared with the sentinel attribute).
set -eu
cd "$(dirname "$0")/.."
echo "== cppcheck"
cppcheck --quiet --enable=warning,portability --inline-suppr --std=c11 --error-exitcode=1 \
    -D_GNU_SOURCE "-D_Noreturn=__attribute__((noreturn))" --include=/usr/include/jansson.h \
    --suppress=varFuncNullUB -I src/lib src
echo "== clang-tidy"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Two at a time: the analyzer is the slow part.
ls src/lib/*.c src/sbx-*/*.c | xargs -P 2 -n 8 sh -c 'clang-tidy --quiet "$@" -- -std=c11 -D_GNU_SOURCE \
    -DSBX_VERSION=\"lint\" -DSBX_BUILD_ID=\"lint\" -Isrc/lib' clang-tidy > "$out" 2>/dev/null || true
if grep -E "(warning|error):" "$out"; then
    echo "lint: clang-tidy findings above"
    exit 1
fi
echo "lint: clean"
