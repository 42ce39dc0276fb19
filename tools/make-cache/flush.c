// SPDX-License-Identifier: GPL-2.0
/*
 * make-cache --flush <dev> and --detach <dev>: write a backing device's
 * dirty data back at full speed, showing progress on a terminal, and
 * return once none is left (--detach: then detach it).  The writeback
 * tunables changed for it are restored afterwards, also on SIGINT or
 * SIGTERM.  <dev> is /dev/cacheN or the backing device.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "make-cache.h"

#define FL_VAL	256

static const char * const fl_knobs[] = {
	"writeback_percent", "writeback_running", "writeback_rate_max",
	"writeback_delay",
};
#define FL_NKNOBS	(sizeof(fl_knobs) / sizeof(*fl_knobs))

static char fl_dir[PATH_MAX];
static char fl_saved[FL_NKNOBS][FL_VAL];
static bool fl_changed;

static int fl_read(const char *name, char *buf)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", fl_dir, name);
	return mc_read_sysfs(path, buf, FL_VAL);
}

static int fl_write(const char *name, const char *val)
{
	char path[PATH_MAX + 64];
	int r;

	snprintf(path, sizeof(path), "%s/%s", fl_dir, name);
	r = mc_write_sysfs(path, val);
	errno = -r;
	return r;
}

static void fl_human(double v, char *buf, size_t len)
{
	static const char units[] = " KMGTPE";
	int i = 0;

	while (v >= 1024 && i < 6) {
		v /= 1024;
		i++;
	}
	if (i)
		snprintf(buf, len, "%.1f%ciB", v, units[i]);
	else
		snprintf(buf, len, "%.0f B", v);
}

static void fl_restore(void)
{
	size_t i;

	if (!fl_changed)
		return;
	/* rate_max and percent first: running last, as it was */
	for (i = FL_NKNOBS; i-- > 0;)
		if (fl_saved[i][0] && fl_write(fl_knobs[i], fl_saved[i]))
			fprintf(stderr, "make-cache: cannot restore %s to %s: %s\n",
				fl_knobs[i], fl_saved[i], strerror(errno));
	fl_changed = false;
}

/* The cache/ directory of @dev: /dev/cacheN or a backing device. */
static int fl_find(const char *dev)
{
	char link[PATH_MAX], real[PATH_MAX];
	struct stat st;

	if (stat(dev, &st) || !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "make-cache: %s: not a block device\n", dev);
		return -1;
	}
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u/cache",
		 major(st.st_rdev), minor(st.st_rdev));
	if (!realpath(link, real)) {
		fprintf(stderr, "make-cache: %s: not a registered blkcache device (no %s)\n",
			dev, link);
		return -1;
	}
	snprintf(fl_dir, sizeof(fl_dir), "%s", real);
	return 0;
}

int mc_flush(const char *dev, bool detach)
{
	const struct timespec tick = { 0, 500 * 1000 * 1000 };
	sigset_t sigs, old;
	bool tty = isatty(STDOUT_FILENO), shown = false;
	char val[FL_VAL], state[FL_VAL], s1[32], s2[32];
	double dirty, prev = -1, rate = 0;
	time_t t0 = time(NULL), last = t0;
	size_t i;
	int rc = MC_EXIT_OK, sig;

	if (fl_find(dev))
		return MC_EXIT_REFUSED;
	if (fl_read("state", state) || fl_read("dirty_data", val)) {
		fprintf(stderr, "make-cache: %s: cannot read %s\n", dev, fl_dir);
		return MC_EXIT_REFUSED;
	}
	if (!fl_read("lost_dirty", val) && val[0]) {
		fprintf(stderr, "make-cache: %s: its cache set failed with its dirty data (see %s/lost_dirty); nothing to write back\n",
			dev, fl_dir);
		return MC_EXIT_FAILED;
	}
	/* SIGINT and SIGTERM are waited for (with the tick), not handled */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, &old);
	for (i = 0; i < FL_NKNOBS; i++)
		if (fl_read(fl_knobs[i], fl_saved[i]))
			fl_saved[i][0] = '\0';
	fl_changed = true;
	if (fl_write("writeback_rate_max", "0") ||
	    fl_write("writeback_delay", "0") ||
	    fl_write("writeback_percent", "0") ||
	    fl_write("writeback_running", "1")) {
		fprintf(stderr, "make-cache: %s: cannot set the writeback tunables: %s\n",
			dev, strerror(errno));
		fl_restore();
		sigprocmask(SIG_SETMASK, &old, NULL);
		return MC_EXIT_FAILED;
	}
	if (detach && fl_write("detach", "1")) {
		fprintf(stderr, "make-cache: %s: detach refused: %s\n", dev,
			strerror(errno));
		fl_restore();
		sigprocmask(SIG_SETMASK, &old, NULL);
		return MC_EXIT_FAILED;
	}

	for (;;) {
		time_t now = time(NULL);

		if (fl_read("dirty_data", val) || fl_read("state", state)) {
			fprintf(stderr, "%smake-cache: %s: the device went away\n",
				shown ? "\n" : "", dev);
			rc = MC_EXIT_FAILED;
			break;
		}
		dirty = (double)mc_hsize_bytes(val);
		if (dirty < 0)
			dirty = 0;
		if (!fl_read("lost_dirty", val) && val[0]) {
			fprintf(stderr, "%smake-cache: %s: the cache set failed; dirty data was lost (see lost_dirty)\n",
				shown ? "\n" : "", dev);
			rc = MC_EXIT_FAILED;
			break;
		}
		if (detach ? !strcmp(state, "no cache") : dirty == 0)
			break;
		if (prev >= 0 && now > last) {
			double r = (prev - dirty) / (double)(now - last);

			rate = rate ? (rate + r) / 2 : r;
		}
		if (now > last || prev < 0) {
			prev = dirty;
			last = now;
		}
		if (tty) {
			fl_human(dirty, s1, sizeof(s1));
			fl_human(rate > 0 ? rate : 0, s2, sizeof(s2));
			printf("\r%s: %s dirty left, %s/s, ETA ", dev, s1, s2);
			if (rate > 0)
				printf("%.0f s   ", dirty / rate);
			else
				printf("?   ");
			fflush(stdout);
			shown = true;
		}
		sig = sigtimedwait(&sigs, NULL, &tick);
		if (sig > 0) {
			rc = 128 + sig;
			break;
		}
	}
	if (shown)
		printf("\n");
	fl_restore();
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc == MC_EXIT_OK)
		printf("%s: %s in %ld s\n", dev,
		       detach ? "written back and detached" : "written back",
		       (long)(time(NULL) - t0));
	return rc;
}
