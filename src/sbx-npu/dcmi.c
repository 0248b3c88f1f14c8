/* dcmi.c — the DCMI walk: init, cards, chips per card, each chip's logic
 * id (the N of /dev/davinciN), then optional readings. Structures are
 * declared here with the driver header's layout, padded against growth. */
#include "dcmi.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAX_CARDS 64
#define MAX_CHIPS_PER_CARD 16
#define NAME_LEN 32
#define UTIL_AI_CORE 2

struct dcmi_chip_info_v2 {
	unsigned char chip_type[NAME_LEN], chip_name[NAME_LEN], chip_ver[NAME_LEN];
	unsigned int aicore_cnt;
	unsigned char npu_name[NAME_LEN];
};
struct dcmi_hbm_info {
	unsigned long long memory_size;  /* MB */
	unsigned int freq;
	unsigned long long memory_usage; /* MB */
	int temp;
	unsigned int bandwith_util_rate;
};
struct dcmi_pcie_info_all {
	unsigned int venderid, subvenderid, deviceid, subdeviceid;
	int domain;
	unsigned int bdf_busid, bdf_deviceid, bdf_funcid;
	unsigned char reserve[32];
};

struct dcmi {
	void *lib;
	int (*init)(void);
	int (*card_list)(int *count, int *cards, int len);
	int (*chips_in_card)(int card, int *count);
	int (*logic_id)(int *logic, int card, int chip);
	int (*health)(int card, int chip, unsigned int *health);
	int (*chip_info)(int card, int chip, struct dcmi_chip_info_v2 *info);
	int (*utilization)(int card, int chip, int type, unsigned int *rate);
	int (*temperature)(int card, int chip, int *celsius);
	int (*power)(int card, int chip, int *deciwatts);
	int (*hbm)(int card, int chip, struct dcmi_hbm_info *info);
	int (*pcie)(int card, int chip, struct dcmi_pcie_info_all *info);
};

static void *sym(void *lib, const char *name)
{
	return dlsym(lib, name);
}

static int load(const char *library, struct dcmi *d, char *why, size_t size)
{
	memset(d, 0, sizeof(*d));
	if (!library[0] || !(d->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(why, size, "DCMI: %s", library[0] ? dlerror() : "no library configured");
		return -1;
	}
	*(void **)&d->init = sym(d->lib, "dcmi_init");
	*(void **)&d->card_list = sym(d->lib, "dcmi_get_card_num_list");
	*(void **)&d->chips_in_card = sym(d->lib, "dcmi_get_device_num_in_card");
	*(void **)&d->logic_id = sym(d->lib, "dcmi_get_device_logic_id");
	*(void **)&d->health = sym(d->lib, "dcmi_get_device_health");
	*(void **)&d->chip_info = sym(d->lib, "dcmi_get_device_chip_info_v2");
	*(void **)&d->utilization = sym(d->lib, "dcmi_get_device_utilization_rate");
	*(void **)&d->temperature = sym(d->lib, "dcmi_get_device_temperature");
	*(void **)&d->power = sym(d->lib, "dcmi_get_device_power_info");
	*(void **)&d->hbm = sym(d->lib, "dcmi_get_device_hbm_info");
	*(void **)&d->pcie = sym(d->lib, "dcmi_get_device_pcie_info");
	if (!d->init || !d->card_list || !d->chips_in_card || !d->logic_id) {
		snprintf(why, size, "DCMI: %s lacks the card and logic id functions", library);
		dlclose(d->lib);
		return -1;
	}
	int rc = d->init();
	if (rc != 0) {
		snprintf(why, size, "DCMI: dcmi_init failed (%d)", rc);
		dlclose(d->lib);
		return -1;
	}
	return 0;
}

/* The name, NUL-terminated even when the library filled all 32 bytes. */
static json_t *chip_name(const struct dcmi *d, int card, int chip)
{
	struct { struct dcmi_chip_info_v2 info; unsigned char pad[256]; } buf;
	memset(&buf, 0, sizeof(buf));
	if (!d->chip_info || d->chip_info(card, chip, &buf.info) != 0)
		return json_null();
	char name[NAME_LEN + 1];
	memcpy(name, buf.info.chip_name, NAME_LEN);
	name[NAME_LEN] = '\0';
	json_t *s = json_string(name);
	return s ? s : json_null();
}

static json_t *readings(const struct dcmi *d, int card, int chip, int logic)
{
	unsigned int health = 0, rate = 0;
	int celsius = 0, deciwatts = 0;
	struct { struct dcmi_hbm_info info; unsigned char pad[256]; } hbm;
	struct { struct dcmi_pcie_info_all info; unsigned char pad[256]; } pcie;
	memset(&hbm, 0, sizeof(hbm));
	memset(&pcie, 0, sizeof(pcie));

	json_t *dev = json_pack("{s:i,s:i,s:i,s:o}", "hostIndex", logic, "cardId", card, "chipId", chip,
				"chipName", chip_name(d, card, chip));
	json_object_set_new(dev, "health", d->health && d->health(card, chip, &health) == 0
					   ? json_string(health == 0 ? "OK" : "Alarm") : json_null());
	char bus[32];
	if (d->pcie && d->pcie(card, chip, &pcie.info) == 0) {
		snprintf(bus, sizeof(bus), "%04x:%02x:%02x.%x", (unsigned)pcie.info.domain & 0xffff,
			 pcie.info.bdf_busid & 0xff, pcie.info.bdf_deviceid & 0x1f, pcie.info.bdf_funcid & 7);
		json_object_set_new(dev, "busId", json_string(bus));
	} else {
		json_object_set_new(dev, "busId", json_null());
	}
	json_object_set_new(dev, "aiCorePercent", d->utilization && d->utilization(card, chip, UTIL_AI_CORE, &rate) == 0
						 ? json_integer(rate) : json_null());
	bool have_hbm = d->hbm && d->hbm(card, chip, &hbm.info) == 0;
	json_object_set_new(dev, "hbmUsedMB", have_hbm ? json_integer((json_int_t)hbm.info.memory_usage) : json_null());
	json_object_set_new(dev, "hbmTotalMB", have_hbm ? json_integer((json_int_t)hbm.info.memory_size) : json_null());
	json_object_set_new(dev, "powerW", d->power && d->power(card, chip, &deciwatts) == 0
					   ? json_real(deciwatts / 10.0) : json_null());
	json_object_set_new(dev, "temperatureC", d->temperature && d->temperature(card, chip, &celsius) == 0
						 ? json_integer(celsius) : json_null());
	return dev;
}

json_t *sbx_npu_dcmi_devices(const char *library, char *why, size_t why_size)
{
	struct dcmi d;
	int cards[MAX_CARDS], n_cards = 0;

	if (load(library, &d, why, why_size) != 0)
		return NULL;
	memset(cards, 0, sizeof(cards));
	if (d.card_list(&n_cards, cards, MAX_CARDS) != 0 || n_cards <= 0) {
		snprintf(why, why_size, "DCMI: no cards listed");
		dlclose(d.lib);
		return NULL;
	}
	if (n_cards > MAX_CARDS)
		n_cards = MAX_CARDS;
	json_t *devices = json_array();
	for (int c = 0; c < n_cards; c++) {
		int chips = 0;
		if (d.chips_in_card(cards[c], &chips) != 0 || chips <= 0)
			continue;
		if (chips > MAX_CHIPS_PER_CARD)
			chips = MAX_CHIPS_PER_CARD;
		for (int chip = 0; chip < chips; chip++) {
			int logic = -1;
			/* No logic id: an MCU or CPU, not a chip a sandbox can use. */
			if (d.logic_id(&logic, cards[c], chip) != 0 || logic < 0)
				continue;
			json_array_append_new(devices, readings(&d, cards[c], chip, logic));
		}
	}
	dlclose(d.lib);
	if (json_array_size(devices) == 0) {
		snprintf(why, why_size, "DCMI: no chip with a logic id");
		json_decref(devices);
		return NULL;
	}
	return devices;
}
