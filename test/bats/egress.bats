#!/usr/bin/env bats
# sbx-egress check: the gateway's decision without connecting. Every name
# that passes the allowlist is given a --resolve answer, so no test ever
# asks a DNS server anything; "public" addresses here are never contacted.

load helpers

setup() {
    P="$BATS_TEST_TMPDIR/policy.json"
    echo '{"mode":"domain-allowlist","allowedDomains":["*.example.org","api.test","pinned.test:8443"]}' > "$P"
}

@test "an allowed name with public addresses is allowed, every vetted address listed" {
    run sbx-egress check --policy "$P" --resolve a.example.org:443:93.184.216.34 \
        --resolve a.example.org:443:10.0.0.1 --resolve a.example.org:443:2606:4700::1111 A.Example.ORG.
    assert_success
    [ "$(jq_out .allowed)" = true ]
    [ "$(jq_out .host)" = a.example.org ]
    [ "$(jq_out '.addresses | join(",")')" = 93.184.216.34,2606:4700::1111 ]
    [[ "$(jq_out .revision)" =~ ^[0-9a-f]{16}$ ]]
}

@test "loopback answers are refused unless allowPrivateNetwork, which never admits an IP literal" {
    run sbx-egress check --policy "$P" --resolve api.test:443:127.0.0.1 api.test
    assert_failure 3
    [[ "$(jq_out .reason)" == *"special-purpose addresses (loopback)"* ]]
    echo '{"mode":"domain-allowlist","allowedDomains":["api.test"],"allowPrivateNetwork":true}' > "$P"
    run sbx-egress check --policy "$P" --resolve api.test:443:127.0.0.1 api.test
    assert_success
    [ "$(jq_out '.addresses[0]')" = 127.0.0.1 ]
    for literal in 127.0.0.1 127.1 0x7f.1 0177.0.0.1 2130706433 '[::1]:443'; do
        run sbx-egress check --policy "$P" "$literal"
        assert_failure 3
        [[ "$(jq_out .reason)" == *"domain names only"* ]]
    done
}

@test "names not listed, the apex of a wildcard and a wrong port are refused before any lookup" {
    for target in other.test example.org pinned.test:443; do
        run sbx-egress check --policy "$P" "$target"
        assert_failure 3
        [[ "$(jq_out .reason)" == *"is not in the sandbox network allowed domains"* ]]
    done
    run sbx-egress check --policy "$P" --resolve pinned.test:8443:93.184.216.34 pinned.test:8443
    assert_success
}

@test "malformed targets are 400s (exit 2)" {
    for target in 'a.example.org:0' 'a.example.org:+1' 'user@a.example.org' 'a%2e.example.org' 'a..example.org'; do
        run sbx-egress check --policy "$P" "$target"
        assert_failure 2
        [ "$(jq_out .status)" = 400 ]
    done
}

@test "a single-label name is a name the allowlist refuses (403); two ports and an unbracketed IPv6 address do not parse (400)" {
    for target in localhost instance-data:80 metadata; do
        run sbx-egress check --policy "$P" "$target"
        assert_failure 3
        [ "$(jq_out .status)" = 403 ]
        [[ "$(jq_out .reason)" == *"is not in the sandbox network allowed domains"* ]]
    done
    for target in '::1:443' 'api.test:80:90' '::ffff:127.0.0.1'; do
        run sbx-egress check --policy "$P" "$target"
        assert_failure 2
        [ "$(jq_out .status)" = 400 ]
        [[ "$(jq_out .reason)" == *"two ports, or an IPv6 address without brackets"* ]]
    done
}

@test "SIIT (::ffff:0:a.b.c.d), the AS112/AMT ranges, 2001::/23, 3fff::/20 and addresses outside 2000::/3 are refused before any connect" {
    for addr in ::ffff:0:127.0.0.1 ::ffff:0:8.8.8.8 192.31.196.1 192.52.193.1 192.175.48.1 2001:1::1 3fff::1 5f00::1 4000::1; do
        run sbx-egress check --policy "$P" --resolve "api.test:443:$addr" api.test
        assert_failure 3
        [ "$(jq_out .status)" = 403 ]
        [[ "$(jq_out .reason)" == *"resolves only to special-purpose addresses"* ]]
    done
}

@test "--resolve NAME:PORT:A,B gives the name both addresses, in order; '|' separates later lookups' answers" {
    run sbx-egress check --policy "$P" --resolve a.example.org:443:93.184.216.34,2606:4700::1111 a.example.org
    assert_success
    [ "$(jq_out '.addresses | join(",")')" = 93.184.216.34,2606:4700::1111 ]
    run sbx-egress check --policy "$P" --resolve 'a.example.org:443:93.184.216.34|10.0.0.1' a.example.org
    assert_success
    [ "$(jq_out '.addresses | join(",")')" = 93.184.216.34 ]
}

@test "a policy whose stated revision disagrees with its content is refused" {
    echo '{"mode":"domain-allowlist","allowedDomains":["api.test"],"revision":"0000000000000000"}' > "$P"
    run --separate-stderr sbx-egress check --policy "$P" api.test
    assert_failure 3
    [[ "$stderr" == *"policy.revision: states 0000000000000000 but the content's revision is"* ]]
    echo '{"mode":"domain-allowlist","allowedDomains":["127.0.0.1"]}' > "$P"
    run --separate-stderr sbx-egress check --policy "$P" api.test
    assert_failure 2
    [[ "$stderr" == *"policy.allowedDomains[0]"*"domain names only"* ]]
}
