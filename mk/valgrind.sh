#!/bin/sh
# make valgrind: every cmocka unit test under valgrind's memcheck (a plain
# build: the sanitizers and valgrind do not mix); any error or leak fails.
set -eu
cd "$(dirname "$0")/.."
if grep -q fsanitize build/flags 2>/dev/null; then
    echo "valgrind: the build is a SAN=1 build; run make valgrind without SAN" >&2
    exit 2
fi
failed=0
for t in bin/test/test_*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    case $t in
    *.d | *.so) continue ;;
    # valgrind cannot run a seccomp filter (it emulates the syscalls the
    # filter would see); the SAN pass covers these.
    */test_seccomp | */test_seccomp_listen) echo "valgrind: ${t##*/} skipped (no seccomp under valgrind)"; continue ;;
    esac
    if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --show-leak-kinds=definite,indirect "$t" > /dev/null 2> "$t.valgrind"; then
        echo "valgrind: $(basename "$t") clean"
    else
        cat "$t.valgrind"
        echo "valgrind: $(basename "$t") FAILED"
        failed=1
    fi
    rm -f "$t.valgrind"
done
[ "$failed" -eq 0 ]
