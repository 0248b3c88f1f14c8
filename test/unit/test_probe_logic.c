/* test_probe_logic.c — the pure parts of the probe: which warnings a
 * result carries (host diagnosis included), version ordering, install
 * hints per distribution, and reading a launch profile back from JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "bwrap.h"
#include "host_facts.h"
#include "probe.h"

#include <string.h>

static struct sbx_probe_result base(void)
{
	struct sbx_probe_result r;
	memset(&r, 0, sizeof(r));
	strcpy(r.bwrap_path, "/usr/bin/bwrap");
	strcpy(r.requested, "bwrap");
	strcpy(r.bwrap_version, "0.8.0");
	r.bwrap_found = r.sandbox_built = r.usable = r.seccomp = r.disable_userns = true;
	r.host.unprivileged_userns_clone = r.host.max_user_namespaces = r.host.apparmor_restrict_userns = -1;
	return r;
}

static bool has_code(json_t *warnings, const char *code)
{
	size_t i;
	json_t *w;
	json_array_foreach(warnings, i, w)
		if (strcmp(json_string_value(json_object_get(w, "code")), code) == 0)
			return true;
	return false;
}

static void healthy_host_has_no_warnings(void **state)
{
	(void)state;
	struct sbx_probe_result r = base();
	json_t *w = sbx_probe_warnings(&r);
	assert_int_equal(json_array_size(w), 0);
	json_decref(w);
}

static void unusable_host_names_each_known_cause(void **state)
{
	(void)state;
	struct sbx_probe_result r = base();
	r.usable = r.sandbox_built = r.seccomp = false;
	r.reason = SBX_PROBE_SANDBOX_UNUSABLE;
	r.host.unprivileged_userns_clone = 0;
	r.host.apparmor_restrict_userns = 1;
	r.host.max_user_namespaces = 1000;
	json_t *w = sbx_probe_warnings(&r);
	assert_true(has_code(w, "sandbox-unusable"));
	assert_true(has_code(w, "userns-clone-disabled"));
	assert_true(has_code(w, "apparmor-userns-restricted"));
	assert_false(has_code(w, "max-user-namespaces-zero"));
	json_decref(w);
}

static void degraded_profiles_warn_with_remedies(void **state)
{
	(void)state;
	struct sbx_probe_result r = base();
	r.proc_bind = r.proc_fallback = true;
	r.disable_userns = false;
	r.reason = SBX_PROBE_OPTION_REJECTED;
	json_t *w = sbx_probe_warnings(&r);
	assert_int_equal(json_array_size(w), 2);
	assert_true(has_code(w, "proc-fallback"));
	assert_true(has_code(w, "userns-option-rejected"));
	json_decref(w);
}

static void setuid_bwrap_warns_even_when_usable(void **state)
{
	(void)state;
	struct sbx_probe_result r = base();
	r.host.bwrap_setuid = true;
	json_t *w = sbx_probe_warnings(&r);
	assert_true(has_code(w, "bwrap-setuid"));
	json_decref(w);
}

static void versions_compare_numerically(void **state)
{
	(void)state;
	assert_true(sbx_version_compare("0.6.1", "0.8") < 0);
	assert_true(sbx_version_compare("0.10.0", "0.8") > 0);
	assert_int_equal(sbx_version_compare("0.8", "0.8.0"), 0);
	assert_true(sbx_version_compare("1", "0.99") > 0);
}

static void install_hint_follows_the_distribution(void **state)
{
	(void)state;
	struct sbx_host_facts f;
	memset(&f, 0, sizeof(f));
	strcpy(f.os_id, "fedora");
	assert_string_equal(sbx_bwrap_install_hint(&f), "dnf install bubblewrap");
	strcpy(f.os_id, "linuxmint");
	strcpy(f.os_id_like, "ubuntu debian");
	assert_string_equal(sbx_bwrap_install_hint(&f), "apt-get install bubblewrap");
	strcpy(f.os_id, "plan9");
	f.os_id_like[0] = '\0';
	assert_non_null(strstr(sbx_bwrap_install_hint(&f), "pacman -S bubblewrap"));
}

static void profile_round_trips_through_json(void **state)
{
	(void)state;
	struct sbx_probe_result r = base();
	r.proc_bind = true;
	json_t *j = sbx_probe_to_json(&r);
	struct sbx_sandbox_profile p;
	assert_int_equal(sbx_probe_profile(j, &p), 0);
	assert_true(p.usable);
	assert_true(p.proc_bind);
	assert_true(p.disable_userns);
	assert_string_equal(p.bwrap_path, "/usr/bin/bwrap");
	json_object_set_new(j, "procMode", json_string("host"));
	assert_int_equal(sbx_probe_profile(j, &p), -1);
	json_decref(j);
}

static void invalid_utf8_in_a_refusal_line_still_serialises(void **state)
{
	(void)state;
	struct sbx_probe_result r = base();
	r.usable = false;
	r.reason = SBX_PROBE_SANDBOX_UNUSABLE;
	strcpy(r.detail, "bwrap: \xff\xfe");
	json_t *j = sbx_probe_to_json(&r);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "detail")), "bwrap: \xef\xbf\xbd\xef\xbf\xbd");
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(healthy_host_has_no_warnings),
		cmocka_unit_test(unusable_host_names_each_known_cause),
		cmocka_unit_test(degraded_profiles_warn_with_remedies),
		cmocka_unit_test(setuid_bwrap_warns_even_when_usable),
		cmocka_unit_test(versions_compare_numerically),
		cmocka_unit_test(install_hint_follows_the_distribution),
		cmocka_unit_test(profile_round_trips_through_json),
		cmocka_unit_test(invalid_utf8_in_a_refusal_line_still_serialises),
	};
	return cmocka_run_group_tests_name("probe-logic", tests, NULL, NULL);
}
