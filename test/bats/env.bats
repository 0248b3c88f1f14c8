#!/usr/bin/env bats
# sbx-env against the fake micromamba (test/fixtures/fake-micromamba) and a
# local channel: setup, environments, revisions, validation, the pinned
# download from a loopback release server, and interrupted updates.

load launch_helpers

setup() {
    launch_setup
    export SBX_DATA_DIR="$WORK/data" SCIENCE_AGENT_PROVISIONER_PATH="$FIXTURES/fake-micromamba" \
        FAKE_MICROMAMBA_CHANNELS="$FIXTURES/channels"
    # The tools run in install sandboxes: the fake's local "channels" are
    # bound read-only there and its knobs passed in, as a mirror's would be.
    export SBX_ENV_INSTALL_READ_ONLY="$FIXTURES/channels:$WORK" \
        SBX_ENV_INSTALL_PASS_ENV=FAKE_MICROMAMBA_CHANNELS,FAKE_R_REPO,FAKE_MICROMAMBA_LOG,FAKE_MICROMAMBA_DELAY_S,FAKE_MICROMAMBA_HANG_ON,FAKE_MICROMAMBA_HANGING_FIFO
    [ "$(id -u)" -ne 0 ] || { export SBX_ENV_RUN_AS=sbxtest; chmod 711 "$WORK"; }
    unset SCIENCE_AGENT_PACKAGE_CACHE_DIR SCIENTIFIC_ENVS SCIENCE_AGENT_SCIENTIFIC_CHANNELS
}

teardown() {
    [ -z "${SERVER_PID:-}" ] || kill "$SERVER_PID" 2>/dev/null || true
    launch_teardown
}

ready() {
    run --separate-stderr sbx-env setup --wait
    assert_success
}

task_env() {
    run --separate-stderr sbx-env create "${1:-Analysis}" --language python
    assert_success
    ENV_ID=$(jq -r .id <<< "$output")
}

@test "setup: from nothing to ready, with progress lines and the setup view" {
    run --separate-stderr sbx-env status
    [ "$(jq -c '[.state, .phase]' <<< "$output")" = '["not-configured","pending"]' ]
    run --separate-stderr sbx-env setup --wait
    assert_success
    [ "$(jq -c '[.state, .phase, .provisioner, .managedProvisioner, .networkPolicy]' <<< "$output")" = '["ready","complete","fake-micromamba",false,"allowed-channels"]' ]
    [ "$(jq -r '.allowedChannels | join(",")' <<< "$output")" = conda-forge ]
    [ "$(jq -r '.components.conda.state' <<< "$output")" = ready ]
    [[ "$stderr" == *'"progress":"creating-python-base"'* && "$stderr" == *'"progress":"complete"'* ]]
    run sbx-env list
    [ "$(jq -r '.[0] | [.id, .kind, .status] | join(" ")' <<< "$output")" = "starter-python starter ready" ]
    # A second setup finds it ready and changes nothing.
    run --separate-stderr sbx-env setup --wait
    assert_success
    [ "$(ls "$WORK/data/scientific-envs/revisions")" = starter-python ]
}

@test "create, install (conda), uninstall and delete; each revision's snapshot bytes hash to snapshot.hash" {
    ready
    task_env "My   Analysis"
    [ "$(jq -r .name <<< "$output")" = "My Analysis" ]
    run --separate-stderr sbx-env install "$ENV_ID" -- requests
    assert_success
    [[ "$(jq -r '.packages | join(" ")' <<< "$output")" == *"requests=2.32.3=pyhd8ed1ab_0"* ]]
    [ "$(jq -c .requestedChanges <<< "$output")" = '["conda:requests"]' ]
    [ "$(jq -r .languageVersion <<< "$output")" = 3.12.4 ]
    run --separate-stderr sbx-env uninstall "$ENV_ID" requests
    assert_success
    [ "$(jq -c .requestedChanges <<< "$output")" = '["conda:remove:requests"]' ]
    for rev in $(sbx-env revisions | jq -r '.[].id'); do
        [ "$(sbx-env snapshot "$rev" | sha256sum | cut -d' ' -f1)" = "$(sbx-env revisions | jq -r ".[] | select(.id == \"$rev\") | .snapshot.hash")" ]
    done
    [ "$(sbx-env snapshot "$(sbx-env revisions | jq -r '.[-1].id')" | jq -r .format)" = sciencediscovery-environment-revision-v2 ]
    run --separate-stderr sbx-env delete "$ENV_ID"
    assert_success
    [ "$output" = "{\"deleted\":\"$ENV_ID\"}" ]
    [ ! -e "$WORK/data/scientific-envs/revisions/$ENV_ID" ]
    # Revisions stay, for audit.
    [ "$(sbx-env revisions | jq "[.[] | select(.environmentId == \"$ENV_ID\")] | length")" -ge 3 ]
}

@test "pip from an offline wheel cache (micromamba --offline with CONDA_PKGS_DIRS, pip --no-index --find-links)" {
    cache="$WORK/cache"
    mkdir -p "$cache/conda-forge"
    cp "$FIXTURES/channels/conda-forge/repodata.json" "$cache/conda-forge/"
    python3 - "$cache/hello_wheel-1.0-py3-none-any.whl" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("hello_wheel/__init__.py", "GREETING = 'hello from a wheel'\n")
    z.writestr("hello_wheel-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: hello-wheel\nVersion: 1.0\n")
PY
    export SCIENCE_AGENT_PACKAGE_CACHE_DIR="$cache" FAKE_MICROMAMBA_CHANNELS=/nonexistent
    run --separate-stderr sbx-env setup --wait
    assert_success
    [ "$(jq -r .networkPolicy <<< "$output")" = offline-cache ]
    task_env
    run --separate-stderr sbx-env install "$ENV_ID" -- pip
    assert_success
    run --separate-stderr sbx-env install "$ENV_ID" --manager pip -- hello-wheel
    assert_success
    [ "$(jq -c .channels <<< "$output")" = '["offline-cache:pip"]' ]
    [[ "$(jq -r '.packages | join(" ")' <<< "$output")" == *"python:hello-wheel==1.0"* ]]
    # An sdist's setup.py is package code: it runs in the install sandbox.
    mkdir -p "$WORK/sdist/evil_sdist-1.0"
    cat > "$WORK/sdist/evil_sdist-1.0/setup.py" <<PY
import os, sys
open(os.path.join(sys.prefix, "setup-uid"), "w").write(str(os.getuid()))
try:
    open("$WORK/host-marker-setup", "w")
except OSError:
    pass
PY
    tar -C "$WORK/sdist" -czf "$cache/evil_sdist-1.0.tar.gz" evil_sdist-1.0
    run --separate-stderr sbx-env install "$ENV_ID" --manager pip -- evil-sdist
    assert_success
    prefix=$(sbx-env resolve --revision "$(jq -r .id <<< "$output")" --language python | jq -r .prefix)
    assert_equal "$(cat "$prefix/setup-uid")" "$(install_uid)"
    [ ! -e "$WORK/host-marker-setup" ]
    run --separate-stderr sbx-env install "$ENV_ID" --manager cran -- survival
    assert_failure 2
    [[ "$stderr" == *"cran installs are unavailable in offline-cache mode; use conda packages from the seeded cache"* ]]
}

# The uid installs run as: the install user as root, the caller otherwise.
install_uid() { if [ "$(id -u)" -eq 0 ]; then id -u sbxtest; else id -u; fi; }

@test "package code (post-link, a wheel's .pth, R's configure) runs only in the install sandbox, never as root, without the runner's secrets" {
    ready
    task_env
    export SCIENCE_AGENT_RUNNER_TOKEN=runner-secret-token-123 LAB_API_TOKEN=lab-secret-456
    mkdir -p "$WORK/channels"
    cp -r "$FIXTURES/channels/conda-forge" "$WORK/channels/"
    jq '.packages += [{"name": "evil-post", "version": "1.0", "build": "0",
        "postLink": "id -u > \"$PREFIX/postlink-uid\"; ln \"$PREFIX/postlink-uid\" \"$PREFIX/postlink-link\"; cp /bin/true \"$PREFIX/suid\"; chmod 4755 \"$PREFIX/suid\"; env > \"$PREFIX/postlink-env\"; touch \"'"$WORK"'/host-marker-post\" 2>/dev/null; touch /workspace-escape 2>/dev/null; true"}]' \
        "$FIXTURES/channels/conda-forge/repodata.json" > "$WORK/channels/conda-forge/repodata.json"
    export FAKE_MICROMAMBA_CHANNELS="$WORK/channels"
    run --separate-stderr sbx-env install -- "$ENV_ID" evil-post
    assert_success
    prefix=$(sbx-env resolve --revision "$(jq -r .id <<< "$output")" --language python | jq -r .prefix)
    assert_equal "$(cat "$prefix/postlink-uid")" "$(install_uid)"
    [ "$(install_uid)" -ne 0 ]
    ! grep -q -e runner-secret-token-123 -e lab-secret-456 "$prefix/postlink-env"
    [ ! -e "$WORK/host-marker-post" ] && [ ! -e /workspace-escape ]
    # After the install the prefix is root's again, hard links and all, and
    # nothing in it is set-uid.
    if [ "$(id -u)" -eq 0 ]; then
        assert_equal "$(find "$prefix" ! -uid 0 | head -n 3)" ""
        assert_equal "$(find "$prefix" -perm -4000 | head -n 3)" ""
    fi
    # A wheel from the workspace whose .pth runs at the next interpreter
    # start (the inventory): in the sandbox, writable only the prefix.
    mkdir -p "$WS/dist"
    python3 - "$WS/dist/evil-1.0-py3-none-any.whl" "$WORK/host-marker-pth" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("evil.pth", "import os, sys; open(os.path.join(sys.prefix, 'pth-uid'), 'w').write(str(os.getuid()))\n"
               "import os; open(%r, 'w')\n" % sys.argv[2])
    z.writestr("evil-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n")
PY
    run --separate-stderr sbx-env install "$ENV_ID" -- pip
    assert_success
    run --separate-stderr sbx-env install --manager pip --workspace "$WS" -- "$ENV_ID" dist/evil-1.0-py3-none-any.whl
    assert_success
    prefix=$(sbx-env resolve --revision "$(jq -r .id <<< "$output")" --language python | jq -r .prefix)
    assert_equal "$(cat "$prefix/pth-uid")" "$(install_uid)"
    [ ! -e "$WORK/host-marker-pth" ]
    # R's configure script, from a local stand-in for CRAN.
    mkdir -p "$WORK/cran/evilr"
    printf 'mkdir -p "$R_PACKAGE_DIR" && id -u > "$R_PACKAGE_DIR/configure-uid"\ntouch "%s" 2>/dev/null; true\n' "$WORK/host-marker-r" > "$WORK/cran/evilr/configure"
    export FAKE_R_REPO="$WORK/cran"
    run --separate-stderr sbx-env install -- "$ENV_ID" r-base
    assert_success
    run --separate-stderr sbx-env install --manager cran -- "$ENV_ID" evilr
    assert_success
    prefix=$(sbx-env resolve --revision "$(jq -r .id <<< "$output")" --language python | jq -r .prefix)
    assert_equal "$(cat "$prefix/lib/R/library/evilr/configure-uid")" "$(install_uid)"
    [ ! -e "$WORK/host-marker-r" ]
}

@test "validation: names, package specs (leading dash, control bytes), managers, channels, indexUrl" {
    ready
    task_env
    bad() {
        run --separate-stderr sbx-env "$@"
        assert_failure 2
        [[ "$stderr" == *"$want"* ]] || fail "expected '$want', got: $stderr"
    }
    want="Environment name must be 1-80 safe display characters"
    bad create --language python -- -bad
    bad create --language python -- "$(printf 'x%.0s' $(seq 81))"
    bad create --language python -- "a/b"
    want="Environment name already exists: analysis"
    bad create "analysis" --language python
    want="Invalid package specification"
    bad install "$ENV_ID" -- --channel=evil
    bad install "$ENV_ID" -- "$(printf 'req\tuests')"
    bad install "$ENV_ID" -- 'numpy;rm'
    bad install "$ENV_ID" -- "$(printf 'a%.0s' $(seq 161))"
    want="Unsupported environment package manager: npm"
    bad install "$ENV_ID" --manager npm -- x
    want="channels can only be used with manager=conda"
    bad install "$ENV_ID" --manager pip --channel conda-forge -- x
    want="indexUrl can only be used with manager=pip"
    bad install "$ENV_ID" --index-url https://pypi.org/simple -- x
    want="Package channels are not allowed: evil"
    bad install "$ENV_ID" --channel evil -- requests
    want="Remote pip URLs are not allowed"
    bad install "$ENV_ID" --manager pip -- https://evil.test/x.whl
    for url in "http://pypi.org/simple|pip indexUrl must use HTTPS" "https://u:p@pypi.org/simple|cannot contain credentials" \
               "https://pypi.org/simple?x=1|cannot contain a query or fragment" "https://pypi.org/simple#f|cannot contain a query or fragment" \
               "https://pypi.org/ simple|cannot contain whitespace or control characters"; do
        want=${url#*|}
        bad install "$ENV_ID" --manager pip --index-url "${url%%|*}" -- x
    done
    want="Starter environments are read-only; create a task environment first"
    bad install starter-python -- requests
    want="Starter environments cannot be deleted"
    bad delete starter-python
    want="Environment metadata contains an unsafe identifier"
    bad install "../etc" -- requests
    # Nothing was recorded by any of them.
    [ "$(sbx-env revisions | jq length)" = 2 ]
}

@test "the pinned download: good, redirected, tampered, missing, oversized and slow, nothing left behind" {
    unset SCIENCE_AGENT_PROVISIONER_PATH
    good="$FIXTURES/fake-micromamba"
    mkfifo "$WORK/port"
    python3 "$FIXTURES/release-server.py" "$WORK/port" "$good" &
    SERVER_PID=$!
    read -r port < "$WORK/port"
    export SCIENCE_AGENT_MICROMAMBA_VERSION=test-1 SCIENCE_AGENT_MICROMAMBA_SHA256="$(sha256sum < "$good" | cut -d' ' -f1)"
    bin="$WORK/data/scientific-envs/bin"
    try() {
        SCIENCE_AGENT_MICROMAMBA_BASE_URL="http://127.0.0.1:$port/$1/" run --separate-stderr sbx-env setup --wait
    }
    for case in "tampered|does not match the pinned" "missing|HTTP 404" "huge|larger than 64 MiB"; do
        try "${case%%|*}"
        assert_failure
        [[ "$stderr" == *"${case#*|}"* ]] || fail "${case%%|*}: $stderr"
        [ -z "$(ls -A "$bin")" ]
        [ "$(sbx-env status | jq -r .state)" = failed ]
    done
    SBX_ENV_DOWNLOAD_TIMEOUT_S=1 try slow
    assert_failure
    [[ "$stderr" == *"timed out after 1s"* ]]
    [ -z "$(ls -A "$bin")" ]
    # A failure is never permanent: the next setup (through a redirect) succeeds.
    try redirect
    assert_success
    [ "$(jq -c '[.state, .provisionerVersion, .managedProvisioner]' <<< "$output")" = '["ready","test-1",true]' ]
    [ "$(stat -c %a "$bin/micromamba")" = 755 ]
    # A stored binary that fails its hash is replaced, not trusted.
    echo tampered >> "$bin/micromamba"
    [ "$(sbx-env status | jq -r .state)" != ready ]
    try good
    assert_success
    [ "$(sha256sum < "$bin/micromamba" | cut -d' ' -f1)" = "$SCIENCE_AGENT_MICROMAMBA_SHA256" ]
}

@test "installs on one environment serialize while executions resolve another; a kill -9 mid-install leaves it failed" {
    ready
    task_env
    # The tools log through a FIFO (writable on a read-only mount) to a reader here.
    mkfifo -m 0666 "$WORK/mamba.fifo"
    cat <>"$WORK/mamba.fifo" >>"$WORK/mamba.log" &
    logger=$!
    export FAKE_MICROMAMBA_LOG="$WORK/mamba.fifo" FAKE_MICROMAMBA_DELAY_S=0.5
    sbx-env install "$ENV_ID" -- requests > "$WORK/a.json" 2>&1 &
    a=$!
    sbx-env install "$ENV_ID" -- tqdm > "$WORK/b.json" 2>&1 &
    b=$!
    # Meanwhile the starter resolves at once.
    run sbx-env resolve --language python
    assert_success
    wait "$a" && wait "$b"
    eventually test "$(grep -c ' install ' "$WORK/mamba.log")" -ge 4
    kill "$logger"
    unset FAKE_MICROMAMBA_LOG
    # No two installs overlapped: every start is followed by its own end.
    run grep ' install ' "$WORK/mamba.log"
    [ "$(awk '{print $1}' <<< "$output" | tr '\n' ' ')" = "start end start end " ]
    unset FAKE_MICROMAMBA_DELAY_S
    # An install killed mid-way: the environment is failed, never silently ready.
    mkfifo -m 0666 "$WORK/hanging"
    FAKE_MICROMAMBA_HANG_ON=scipy FAKE_MICROMAMBA_HANGING_FIFO="$WORK/hanging" \
        setsid sbx-env install "$ENV_ID" -- scipy > /dev/null 2>&1 &
    killer=$!
    await_fifo "$WORK/hanging" tool   # the install is under way (its pid in the sandbox)
    tool=$(pgrep -f "fake-micromamba --no-rc install .*scipy" | head -n 1)
    [ -n "$tool" ]
    kill -9 -- "-$killer" || kill -9 "$killer"
    wait "$killer" || true
    # The sandbox dies with sbx-env (PR_SET_PDEATHSIG): nothing touches the prefix later.
    timeout 10 tail --pid="$tool" -f /dev/null
    ! kill -0 "$tool" 2>/dev/null
    run sbx-env list
    [ "$(jq -r ".[] | select(.id == \"$ENV_ID\") | .status" <<< "$output")" = failed ]
    [[ "$(jq -r ".[] | select(.id == \"$ENV_ID\") | .error" <<< "$output")" == "Environment update was interrupted"* ]]
    run --separate-stderr sbx-env resolve --revision "$(jq -r ".[] | select(.id == \"$ENV_ID\") | .currentRevisionId" <<< "$output")" --language python
    assert_failure 2
    [[ "$stderr" == *"is not ready"* ]]
    # A retried install repairs it.
    run --separate-stderr sbx-env install "$ENV_ID" -- scipy
    assert_success
    [ "$(sbx-env list | jq -r ".[] | select(.id == \"$ENV_ID\") | .status")" = ready ]
}

@test "an execution inside a named environment sees its packages and not the host's interpreter" {
    ready
    task_env
    sbx-env install "$ENV_ID" -- requests > /dev/null
    rev=$(sbx-env list | jq -r ".[] | select(.id == \"$ENV_ID\") | .currentRevisionId")
    prefix=$(sbx-env resolve --revision "$rev" --language python | jq -r .prefix)
    chmod -R a+rX "$WORK/data/scientific-envs"
    in_sandbox 'python -I -c "import sys, requests; print(sys.executable, requests.__version__)"; /usr/bin/python3 -c 1 || echo host-python-masked' \
        "$(jq -cn --arg p "$prefix" '{environment: {prefix: $p}}')"
    assert_success
    assert_line "/opt/science-env/bin/python 2.32.3"
    assert_line host-python-masked
    run --separate-stderr sbx-env resolve --revision "$(sbx-env revisions | jq -r "[.[] | select(.environmentId == \"$ENV_ID\")][0].id")" --language python
    assert_failure 2
    [[ "$stderr" == *"Historical environment revisions are audit-only"* ]]
}

@test "local wheels: workspace-relative, contained, hashed into wheels/<sha256>/, recorded with distribution and version" {
    ready
    task_env
    sbx-env install "$ENV_ID" -- pip > /dev/null
    mkdir -p "$WS/dist"
    python3 - "$WS/dist/hello_wheel-1.0-py3-none-any.whl" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("hello_wheel/__init__.py", "GREETING = 'hello from a wheel'\n")
    z.writestr("hello_wheel-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: hello-wheel\nVersion: 1.0\n")
PY
    hash=$(sha256sum < "$WS/dist/hello_wheel-1.0-py3-none-any.whl" | cut -d' ' -f1)
    run --separate-stderr sbx-env install --manager pip --workspace "$WS" -- "$ENV_ID" dist/hello_wheel-1.0-py3-none-any.whl
    assert_success
    [ "$(jq -c '.localWheels[0] | [.distribution, .version, .content.hash, .sourcePath, .manager]' <<< "$output")" = "[\"hello-wheel\",\"1.0\",\"$hash\",\"dist/hello_wheel-1.0-py3-none-any.whl\",\"pip\"]" ]
    [ -f "$WORK/data/scientific-envs/wheels/$hash/hello_wheel-1.0-py3-none-any.whl" ]
    [[ "$(jq -r '.packages | join(" ")' <<< "$output")" == *"python:hello-wheel==1.0"* ]]
    [ "$(sbx-env snapshot "$(jq -r .id <<< "$output")" | jq -r '.localWheels[0].content.hash')" = "$hash" ]
    # Escapes, symlinks out, non-files and a missing workspace are refused.
    ln -s /etc/passwd "$WS/dist/out.whl"
    mkdir "$WS/dist/dir.whl"
    for case in "../x.whl|escapes the Session workspace" "dist/out.whl|escapes the Session workspace" \
                "dist/dir.whl|must be a regular file" "/abs.whl|workspace-relative paths"; do
        run --separate-stderr sbx-env install --manager pip --workspace "$WS" -- "$ENV_ID" "${case%%|*}"
        assert_failure 2
        [[ "$stderr" == *"${case#*|}"* ]] || fail "${case%%|*}: $stderr"
    done
    run --separate-stderr sbx-env install --manager pip -- "$ENV_ID" dist/hello_wheel-1.0-py3-none-any.whl
    assert_failure 2
    [[ "$stderr" == *"Local wheel paths require a Session workspace"* ]]
}

@test "package sources: the request's, else the global preset, else upstream; huawei has no conda mirror" {
    ready
    task_env
    chan="https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud/conda-forge"
    mkdir -p "$WORK/channels/$(dirname "$chan")"
    cp -r "$FIXTURES/channels/conda-forge" "$WORK/channels/$chan"
    export FAKE_MICROMAMBA_CHANNELS="$WORK/channels"
    run --separate-stderr sbx-env install --source tsinghua -- "$ENV_ID" requests
    assert_success
    [ "$(jq -c .channels <<< "$output")" = "[\"$chan\"]" ]
    [[ "$(jq -r '.command | join(" ")' <<< "$output")" == *"--channel $chan -- requests"* ]]
    SCIENCE_AGENT_CONDA_SOURCE=tsinghua run --separate-stderr sbx-env install -- "$ENV_ID" tqdm
    assert_success
    [ "$(jq -c .channels <<< "$output")" = "[\"$chan\"]" ]
    # An explicit channel wins over the preset.
    cp -r "$FIXTURES/channels/conda-forge" "$WORK/channels/"
    SCIENCE_AGENT_CONDA_SOURCE=tsinghua run --separate-stderr sbx-env install --channel conda-forge -- "$ENV_ID" scipy
    assert_success
    [ "$(jq -c .channels <<< "$output")" = '["conda-forge"]' ]
    run --separate-stderr sbx-env install --source huawei -- "$ENV_ID" requests
    assert_failure 2
    [[ "$stderr" == *"Unknown package source for this manager: huawei"* ]]
}

@test "R: the first R environment builds the R starter; cran and bioconductor install into it; R runs inside the sandbox" {
    ready
    run --separate-stderr sbx-env create --language r -- "R work"
    assert_success
    id=$(jq -r .id <<< "$output")
    [ "$(sbx-env list | jq -r '[.[].id] | sort | join(" ")')" = "starter-python starter-r $id" ]
    [[ "$(sbx-env revisions | jq -r '.[] | select(.environmentId == "starter-r") | .packages | join(" ")')" == *"r:tidyverse==2.0.0"* ]]
    run --separate-stderr sbx-env install --manager cran -- "$id" survival
    assert_success
    [ "$(jq -c .channels <<< "$output")" = '["https://cloud.r-project.org"]' ]
    [[ "$(jq -r '.packages | join(" ")' <<< "$output")" == *"r:survival==1.0.0"* ]]
    [[ "$(jq -r '.command[4]' <<< "$output")" == 'install.packages(c("survival"), repos="https://cloud.r-project.org", Ncpus=1)' ]]
    run --separate-stderr sbx-env install --manager bioconductor -- "$id" DESeq2
    assert_success
    [ "$(jq -c .channels <<< "$output")" = '["https://bioconductor.org"]' ]
    [ "$(sbx-env snapshot "$(jq -r .id <<< "$output")" | jq -r '.installed.r | map(.name) | sort | join(",")')" = "DESeq2,data.table,survival,tidyverse" ]
    run --separate-stderr sbx-env resolve --language python --environment "$id"
    assert_failure 2
    [[ "$stderr" == *"is r, not python"* ]]
    prefix=$(sbx-env resolve --language r --environment "$id" | jq -r .prefix)
    chmod -R a+rX "$WORK/data/scientific-envs"
    jq -cn --arg p "$prefix" --arg ws "$WS" '{argv: ["/opt/science-env/bin/R", "--vanilla", "--slave"], workspace: $ws,
        environment: {prefix: $p}}' > "$WORK/r-spec.json"
    run --separate-stderr sbx-launch "$WORK/r-spec.json" <<< 'cat("hello from R\n")'
    assert_success
    assert_output "hello from R"
}
