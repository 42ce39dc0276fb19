// SPDX-License-Identifier: GPL-2.0
/*
 * make-cache --status [--json]: every registered cache set and backing
 * device, from sysfs.  Everything is read first, then printed, so that
 * the output is one snapshot (as consistent as sysfs reads in a row
 * are).  The JSON form is for exporters; its keys are documented in
 * Documentation/blkcache/make-cache.rst.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "make-cache.h"

#define ST_SETS		"/sys/fs/blkcache"
#define ST_MAX		256
#define ST_VAL		256

struct st_dev {
	char	dir[PATH_MAX];		/* /sys/.../<backing>/cache */
	char	name[ST_VAL];		/* backing device */
	char	cachedev[ST_VAL];	/* cacheN, or empty */
	char	uuid[ST_VAL], set_uuid[ST_VAL], label[ST_VAL];
	char	mode[ST_VAL], state[ST_VAL], dirty[ST_VAL], rate[ST_VAL];
	char	ratio[ST_VAL], hits[ST_VAL], misses[ST_VAL];
	char	ratio5[ST_VAL], bypassed[ST_VAL], lost[ST_VAL];
};

struct st_set {
	char	uuid[ST_VAL], dev[ST_VAL], bucket[ST_VAL], nbuckets[ST_VAL];
	char	avail[ST_VAL], dirty[ST_VAL], errors[ST_VAL], limit[ST_VAL];
	char	written[ST_VAL], meta[ST_VAL], ratio[ST_VAL];
};

static struct st_dev devs[ST_MAX];
static struct st_set sets[ST_MAX];
static int ndevs, nsets;

/* @dir/@name into @buf; "" if unreadable. */
static void rd(const char *dir, const char *name, char *buf)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (mc_read_sysfs(path, buf, ST_VAL))
		buf[0] = '\0';
}

/* "[writeback] writethrough" -> "writeback". */
static void bracketed(char *buf)
{
	char *a = strchr(buf, '['), *b = a ? strchr(a, ']') : NULL;

	if (a && b) {
		memmove(buf, a + 1, b - a - 1);
		buf[b - a - 1] = '\0';
	}
}

static void read_sets(void)
{
	DIR *d = opendir(ST_SETS);
	struct dirent *e;
	char dir[PATH_MAX], cdev[PATH_MAX + 8];
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d)) && nsets < ST_MAX) {
		struct st_set *s = &sets[nsets];

		if (strlen(e->d_name) != 36)
			continue;
		snprintf(dir, sizeof(dir), ST_SETS "/%s", e->d_name);
		snprintf(cdev, sizeof(cdev), "%s/cache0", dir);
		if (stat(cdev, &st) || !S_ISDIR(st.st_mode))
			continue;
		snprintf(s->uuid, sizeof(s->uuid), "%s", e->d_name);
		rd(cdev, "dev_name", s->dev);
		rd(cdev, "bucket_size", s->bucket);
		rd(cdev, "nbuckets", s->nbuckets);
		rd(dir, "cache_available_percent", s->avail);
		rd(dir, "dirty_data", s->dirty);
		rd(dir, "io_errors", s->errors);
		rd(dir, "io_error_limit", s->limit);
		rd(dir, "written", s->written);
		rd(dir, "metadata_written", s->meta);
		rd(dir, "stats_total/cache_hit_ratio", s->ratio);
		nsets++;
	}
	closedir(d);
}

static int cmp_set(const void *a, const void *b)
{
	return strcmp(((const struct st_set *)a)->uuid,
		      ((const struct st_set *)b)->uuid);
}

static int cmp_dev(const void *a, const void *b)
{
	return strcmp(((const struct st_dev *)a)->name,
		      ((const struct st_dev *)b)->name);
}

/* The cacheN whose "cache" link leads to @dir, or "". */
static void find_cachedev(const char *dir, char *out)
{
	char real[PATH_MAX];
	glob_t g;
	size_t i;

	out[0] = '\0';
	if (glob("/sys/block/cache*/cache", 0, NULL, &g))
		return;
	for (i = 0; i < g.gl_pathc; i++) {
		const char *p = g.gl_pathv[i] + strlen("/sys/block/");

		if (realpath(g.gl_pathv[i], real) && !strcmp(real, dir)) {
			snprintf(out, ST_VAL, "%.*s", (int)strcspn(p, "/"), p);
			break;
		}
	}
	globfree(&g);
}

static void read_devs(void)
{
	char real[PATH_MAX], state[PATH_MAX + 8];
	struct stat st;
	glob_t g;
	size_t i;
	int j;

	/* backing devices own a cache/ directory; cacheN only links to it */
	if (glob("/sys/class/block/*/cache", 0, NULL, &g))
		return;
	for (i = 0; i < g.gl_pathc && ndevs < ST_MAX; i++) {
		struct st_dev *d = &devs[ndevs];
		bool dup = false;

		if (lstat(g.gl_pathv[i], &st) || !S_ISDIR(st.st_mode) ||
		    !realpath(g.gl_pathv[i], real))
			continue;
		for (j = 0; j < ndevs; j++)
			dup |= !strcmp(devs[j].dir, real);
		snprintf(state, sizeof(state), "%s/state", real);
		if (dup || access(state, F_OK))
			continue;
		snprintf(d->dir, sizeof(d->dir), "%s", real);
		rd(real, "backing_dev_name", d->name);
		rd(real, "backing_dev_uuid", d->uuid);
		rd(real, "set_uuid", d->set_uuid);
		rd(real, "label", d->label);
		rd(real, "cache_mode", d->mode);
		bracketed(d->mode);
		rd(real, "state", d->state);
		rd(real, "dirty_data", d->dirty);
		rd(real, "writeback_rate", d->rate);
		rd(real, "stats_total/cache_hit_ratio", d->ratio);
		rd(real, "stats_total/cache_hits", d->hits);
		rd(real, "stats_total/cache_misses", d->misses);
		rd(real, "stats_five_minute/cache_hit_ratio", d->ratio5);
		rd(real, "stats_total/bypassed", d->bypassed);
		rd(real, "lost_dirty", d->lost);
		find_cachedev(real, d->cachedev);
		ndevs++;
	}
	globfree(&g);
}

/* ---- output ---- */

static void json_str(const char *key, const char *v, bool comma)
{
	const unsigned char *p;

	printf("\"%s\": \"", key);
	for (p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	printf("\"%s", comma ? ", " : "");
}

/* A number, or null when the value is missing or not a number. */
static void json_num(const char *key, long long v, bool comma)
{
	if (v < 0)
		printf("\"%s\": null%s", key, comma ? ", " : "");
	else
		printf("\"%s\": %lld%s", key, v, comma ? ", " : "");
}

static long long num(const char *s)
{
	char *end;
	long long v;

	if (!*s)
		return -1;
	v = strtoll(s, &end, 10);
	return *end ? -1 : v;
}

static void print_json(void)
{
	int i, j;

	printf("{\"loaded\": %s,\n \"sets\": [", access(ST_SETS, F_OK) ? "false" : "true");
	for (i = 0; i < nsets; i++) {
		struct st_set *s = &sets[i];
		bool first = true;

		printf("%s\n  {", i ? "," : "");
		json_str("uuid", s->uuid, true);
		json_str("cache_device", s->dev, true);
		json_num("bucket_size", num(s->bucket), true);
		json_num("nbuckets", num(s->nbuckets), true);
		json_num("cache_available_percent", num(s->avail), true);
		json_num("dirty_bytes", mc_hsize_bytes(s->dirty), true);
		json_num("io_errors", num(s->errors), true);
		json_num("io_error_limit", num(s->limit), true);
		json_num("written_bytes", mc_hsize_bytes(s->written), true);
		json_num("metadata_written_bytes", mc_hsize_bytes(s->meta), true);
		json_num("cache_hit_ratio", num(s->ratio), true);
		printf("\"backing_devices\": [");
		for (j = 0; j < ndevs; j++) {
			if (strcmp(devs[j].set_uuid, s->uuid))
				continue;
			printf("%s\"%s\"", first ? "" : ", ", devs[j].name);
			first = false;
		}
		printf("]}");
	}
	printf("],\n \"devices\": [");
	for (i = 0; i < ndevs; i++) {
		struct st_dev *d = &devs[i];

		printf("%s\n  {", i ? "," : "");
		json_str("backing_device", d->name, true);
		json_str("cache_device", d->cachedev, true);
		json_str("uuid", d->uuid, true);
		json_str("set_uuid", d->set_uuid, true);
		json_str("label", d->label, true);
		json_str("cache_mode", d->mode, true);
		json_str("state", d->state, true);
		json_num("dirty_bytes", mc_hsize_bytes(d->dirty), true);
		json_num("writeback_rate_bytes", mc_hsize_bytes(d->rate), true);
		json_num("cache_hits", num(d->hits), true);
		json_num("cache_misses", num(d->misses), true);
		json_num("cache_hit_ratio", num(d->ratio), true);
		json_num("cache_hit_ratio_five_minute", num(d->ratio5), true);
		json_num("bypassed_bytes", mc_hsize_bytes(d->bypassed), true);
		printf("\"lost_dirty\": %s}", d->lost[0] ? "true" : "false");
	}
	printf("]}\n");
}

static void print_text(void)
{
	int i, j;

	if (access(ST_SETS, F_OK)) {
		printf("blkcache is not loaded\n");
		return;
	}
	if (!nsets && !ndevs)
		printf("no cache set or backing device is registered\n");
	for (i = 0; i < nsets; i++) {
		struct st_set *s = &sets[i];

		printf("cache set %s on %s: %s x %s-byte buckets, %s%% available, dirty %s, hit ratio %s%%, io_errors %s/%s, written %s (metadata %s)\n",
		       s->uuid, s->dev, s->nbuckets, s->bucket, s->avail,
		       s->dirty, s->ratio, s->errors, s->limit, s->written,
		       s->meta);
		for (j = 0; j < ndevs; j++)
			if (!strcmp(devs[j].set_uuid, s->uuid))
				printf("  backing %s\n", devs[j].name);
	}
	for (i = 0; i < ndevs; i++) {
		struct st_dev *d = &devs[i];

		printf("%s: %s, backing %s (uuid %s%s%s), %s, state %s, dirty %s, writeback %s, hit ratio %s%% (5 min %s%%), bypassed %s%s\n",
		       d->cachedev[0] ? d->cachedev : "(not running)", d->label[0] ? d->label : "no label",
		       d->name, d->uuid, d->set_uuid[0] ? ", set " : "", d->set_uuid,
		       d->mode, d->state, d->dirty, d->rate, d->ratio, d->ratio5,
		       d->bypassed, d->lost[0] ? ", DIRTY DATA LOST (see lost_dirty)" : "");
	}
}

int mc_status(bool json)
{
	read_sets();
	read_devs();
	qsort(sets, nsets, sizeof(sets[0]), cmp_set);
	qsort(devs, ndevs, sizeof(devs[0]), cmp_dev);
	if (json)
		print_json();
	else
		print_text();
	return MC_EXIT_OK;
}
