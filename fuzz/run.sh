#!/bin/sh
# Builds each libFuzzer target with clang (ASan+UBSan) and runs it for
# FUZZ_SECONDS (default 30) on a copy of its seed corpus, with
# fuzz/<name>.dict when there is one. Any crash, leak or hang fails the run
# (the reproducer is kept under build/fuzz/).
set -eu
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-30}
mkdir -p build/fuzz
lib_src=$(ls src/lib/*.c)
failed=0
for target in fuzz/fuzz_*.c; do
    name=$(basename "$target" .c)
    corpus_name=${name#fuzz_}
    clang -std=c11 -D_GNU_SOURCE -DSBX_VERSION='"fuzz"' -g -O1 -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined -Isrc/lib -o "build/fuzz/$name" "$target" $lib_src \
        -ljansson -lseccomp -lssl -lcrypto -lcap-ng -lsqlite3 -lpthread
    work="build/fuzz/$corpus_name-corpus"
    mkdir -p "$work"
    cp fuzz/corpus/"$corpus_name"/* "$work/" 2>/dev/null || true
    dict=""
    [ -f "fuzz/$corpus_name.dict" ] && dict="-dict=../../fuzz/$corpus_name.dict"
    echo "== $name for ${secs}s"
    if (cd build/fuzz && "./$name" -max_total_time="$secs" -max_len=65536 -timeout=10 $dict \
            "$corpus_name-corpus" > "$name.log" 2>&1); then
        grep -E "^Done|cov:" "build/fuzz/$name.log" | tail -n 2
    else
        tail -n 30 "build/fuzz/$name.log"
        echo "fuzz: $name FAILED (reproducer in build/fuzz/)"
        failed=1
    fi
done
[ "$failed" -eq 0 ]
