#!/usr/bin/env bats
# Documentation, installation and layout: every program has a man page
# that renders; every option a man page defines is one --help lists, and
# every option --help lists is in the man page; `make install` into a
# DESTDIR gives programs that run from there; src/lib holds only what two
# programs share, and no two files of src import each other in a circle.

load helpers

teardown() {
    [ -z "${DEST:-}" ] || rm -rf "$DEST"
}

# help_of PROGRAM: its --help, and its commands' --help where they have one.
help_of() {
    local p=$1
    "$SBX_BIN/$p" --help 2>&1 || true
    case $p in
    sbx-egress) for c in check gateway bridge; do "$SBX_BIN/$p" "$c" --help 2>&1 || true; done ;;
    esac
}

# defined_options MAN: the options the page defines (a term line, then an
# indented definition), not those its prose mentions (bwrap's, for one).
defined_options() {
    awk 'prev ~ /^\*--[a-z]/ && /^\t/ { print prev } { prev = $0 }' "$1" | grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}

programs() { for p in "$SBX_BIN"/sbx-*; do basename "$p"; done; }

@test "every program has a man page that renders, with the exit codes" {
    for p in $(programs); do
        page=$(ls "$BATS_TEST_DIRNAME/../../man/$p".*.scd 2>/dev/null | head -1)
        [ -n "$page" ] || fail "$p has no man page"
        out=$(scdoc < "$page" | man -l - 2>/dev/null)
        [[ "$out" == *NAME* && "$out" == *"$p"* ]] || fail "$p's man page does not render"
    done
}

@test "every option a man page defines is in the program's --help" {
    for p in $(programs); do
        page=$(ls "$BATS_TEST_DIRNAME/../../man/$p".*.scd | head -1)
        help=$(help_of "$p")
        for o in $(defined_options "$page"); do
            grep -q -- "$o" <<<"$help" || fail "$p: $o is in $(basename "$page") but not in --help"
        done
    done
}

@test "every option --help lists is in the man page" {
    for p in $(programs); do
        page=$(ls "$BATS_TEST_DIRNAME/../../man/$p".*.scd | head -1)
        for o in $(help_of "$p" | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
            case $o in --help | --version) continue ;; esac
            grep -q -- "\*$o" "$page" || fail "$p: --help lists $o, $(basename "$page") does not"
        done
    done
}

@test "make install into a DESTDIR: programs, man pages and workloads, and they run from there" {
    [ -n "${SBX_SOURCE_TREE:-}" ] || SBX_SOURCE_TREE="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
    [ -w "$SBX_SOURCE_TREE" ] || skip "the source tree is read-only here"
    dest=$(mktemp -d /tmp/sbx-install.XXXXXX)
    DEST=$dest # removed in teardown, whether the test passed or not
    chmod 755 "$dest"
    # The same compiler and flags as the build under test: nothing rebuilds.
    flags=$(cat "$SBX_SOURCE_TREE/build/flags")
    san=""
    [[ "$flags" == *-fsanitize* ]] && san=SAN=1
    run make -C "$SBX_SOURCE_TREE" --no-print-directory install DESTDIR="$dest" PREFIX=/usr/local \
        CC="${flags%% *}" $san
    refute_output --partial " -c -o "
    assert_success
    for p in $(programs); do
        [ -x "$dest/usr/local/bin/$p" ] || fail "$p not installed"
    done
    [ -f "$dest/usr/local/share/man/man1/sbx-npu.1" ] && [ -f "$dest/usr/local/share/man/man8/sbx-httpd.8" ]
    [ -f "$dest/usr/local/share/sbx/workloads/npu-workloads.default.json" ]
    run "$dest/usr/local/bin/sbx-launch" --version
    assert_success
    # The installed broker finds its default allowlist below its own prefix.
    SBX_DATA_DIR="$dest/data" run "$dest/usr/local/bin/sbx-broker" --enable workloads
    assert_success
    assert_equal "$(jq -r '[.workloads[].id] | join(" ")' <<<"$output")" "npu.smoke_test antibody.protenix.v1"
    # And a sandbox starts from the installed sbx-launch.
    SBX_DATA_DIR="$dest/data" run "$dest/usr/local/bin/sbx-launch" - <<<'{"argv":["/bin/echo","installed"]}'
    assert_success
    assert_output installed
    [ -f "$dest/usr/local/share/sbx/python/sbx_report.py" ]
    # The README's worker-channel examples, as written, in runs of the
    # installed sbx-run: sbx-report on PATH (the shell lines), sbx_report
    # on PYTHONPATH (the Python line).
    mkdir -m 777 "$dest/ws"
    examples=$(sed -n '/^### The worker channel and signed events/,/^The supervisor validates/p' \
        "$BATS_TEST_DIRNAME/../../README.md" | sed -n 's/^    //p')
    shell_code=$(grep -v '^python3' <<<"$examples")
    python_code=$(grep '^python3' <<<"$examples")
    [[ "$shell_code" == *"sbx-report result"* && "$python_code" == *"import sbx_report"* ]] || fail "README examples not found: $examples"
    for code in "$shell_code" "$python_code"; do
        req=$(jq -cn --arg ws "$dest/ws" --arg code "$code" '{executionId: "readme-\(now)", language: "shell", code: $code, workspace: $ws}')
        SBX_DATA_DIR="$dest/data" run --separate-stderr "$dest/usr/local/bin/sbx-run" --state-dir "$dest/state" - <<<"$req"
        assert_success
        [ "$(jq -c 'select(.event == "worker.metric") | [.name, .value, .step]' <<<"$output")" = '["loss",0.25,1]' ]
        [ "$(jq -c 'select(.event == "finished") | .result.worker.result.summary' <<<"$output")" = '{"accuracy":0.9}' ]
    done
}

@test "every file in src/lib is reached by at least two programs (a program's own logic is in its folder)" {
    [ -d "$BATS_TEST_DIRNAME/../../build/lib" ] || skip "no build tree here"
    run python3 "$BATS_TEST_DIRNAME/../../mk/lib-reach.py" --check
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"src/lib: "* ]]
}

@test "the data directory's layout table and sbx-formats(5) name the same areas, owners and contents" {
    local src="$BATS_TEST_DIRNAME/../../src/lib/datadir.c" man="$BATS_TEST_DIRNAME/../../man/sbx-formats.5.scd"
    local rows
    rows=$(grep -E '^\s*\[SBX_DATA_[A-Z_]+\] = \{' "$src")
    [ "$(echo "$rows" | wc -l)" -ge 10 ]
    while IFS= read -r row; do
        name=$(echo "$row" | sed -E 's/.*= \{ "([^"]+)", "([^"]+)", "([^"]+)".*/\1/')
        owner=$(echo "$row" | sed -E 's/.*= \{ "([^"]+)", "([^"]+)", "([^"]+)".*/\2/')
        holds=$(echo "$row" | sed -E 's/.*= \{ "([^"]+)", "([^"]+)", "([^"]+)".*/\3/')
        grep -A3 -F "|  _${name}_" "$man" | grep -qF ":  $owner" || { echo "$name: owner $owner not in the man page"; return 1; }
        grep -A3 -F "|  _${name}_" "$man" | grep -qF ":  $holds" || { echo "$name: '$holds' not in the man page"; return 1; }
    done <<< "$rows"
}

@test "no circle of imports between the files of src (a file's symbols come from files below it)" {
    [ -d "$BATS_TEST_DIRNAME/../../build/lib" ] || skip "no build tree here"
    run python3 "$BATS_TEST_DIRNAME/../../mk/circles.py" --check
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"0 circle(s)"* ]]
}
