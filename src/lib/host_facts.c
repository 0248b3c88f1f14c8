/* host_facts.c — reading sysctls, os-release and bwrap's mode bits. */
#include "host_facts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static long read_sysctl(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static void os_release_value(const char *line, const char *key, char *out, size_t size)
{
	size_t n = strlen(key);
	if (strncmp(line, key, n) != 0 || line[n] != '=')
		return;
	const char *v = line + n + 1;
	size_t len = strcspn(v, "\n");
	if (*v == '"' || *v == '\'') {
		v++;
		len = strcspn(v, "\"'\n");
	}
	snprintf(out, size, "%.*s", (int)len, v);
}

void sbx_host_facts_read(const char *bwrap_path, struct sbx_host_facts *f)
{
	struct stat st;
	char line[512];

	memset(f, 0, sizeof(*f));
	f->unprivileged_userns_clone = read_sysctl("/proc/sys/kernel/unprivileged_userns_clone");
	f->max_user_namespaces = read_sysctl("/proc/sys/user/max_user_namespaces");
	f->apparmor_restrict_userns = read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
	f->bwrap_setuid = bwrap_path && stat(bwrap_path, &st) == 0 && (st.st_mode & S_ISUID);

	FILE *os = fopen("/etc/os-release", "re");
	if (!os)
		os = fopen("/usr/lib/os-release", "re");
	if (!os)
		return;
	while (fgets(line, sizeof(line), os)) {
		os_release_value(line, "ID", f->os_id, sizeof(f->os_id));
		os_release_value(line, "ID_LIKE", f->os_id_like, sizeof(f->os_id_like));
	}
	fclose(os);
}

static const struct {
	const char *id;
	const char *command;
} install_commands[] = {
	{ "debian", "apt-get install bubblewrap" },
	{ "ubuntu", "apt-get install bubblewrap" },
	{ "fedora", "dnf install bubblewrap" },
	{ "rhel", "dnf install bubblewrap" },
	{ "centos", "dnf install bubblewrap" },
	{ "arch", "pacman -S bubblewrap" },
	{ "alpine", "apk add bubblewrap" },
	{ "suse", "zypper install bubblewrap" },
	{ "opensuse", "zypper install bubblewrap" },
};

static bool word_in(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
		if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
			return true;
	return false;
}

const char *sbx_bwrap_install_hint(const struct sbx_host_facts *f)
{
	size_t n = sizeof(install_commands) / sizeof(install_commands[0]);

	for (size_t i = 0; i < n; i++)
		if (strcmp(f->os_id, install_commands[i].id) == 0)
			return install_commands[i].command;
	for (size_t i = 0; i < n; i++)
		if (word_in(f->os_id_like, install_commands[i].id))
			return install_commands[i].command;
	return "apt-get install bubblewrap (Debian, Ubuntu); dnf install bubblewrap (Fedora, RHEL); "
	       "pacman -S bubblewrap (Arch); apk add bubblewrap (Alpine); zypper install bubblewrap (SUSE)";
}
