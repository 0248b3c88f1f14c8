#!/bin/sh
# Builds each libFuzzer target with clang and runs it for FUZZ_SECONDS
# (default 30) on a copy of its seed corpus; a crash fails the run.
set -eu
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-30}
mkdir -p build/fuzz
lib_src=$(ls src/lib/*.c)
for target in fuzz/fuzz_*.c; do
    name=$(basename "$target" .c)
    corpus_name=${name#fuzz_}
    clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/lib \
        -o "build/fuzz/$name" "$target" $lib_src -ljansson -lseccomp -lcrypto -lsqlite3 -lpthread
    work="build/fuzz/$corpus_name-corpus"
    mkdir -p "$work"
    cp fuzz/corpus/"$corpus_name"/* "$work/" 2>/dev/null || true
    echo "== $name for ${secs}s"
    "build/fuzz/$name" -max_total_time="$secs" -max_len=65536 "$work" 2>&1 | tail -n 3
done
