// SPDX-License-Identifier: GPL-2.0
/*
 * Reading and writing sysfs attributes for make-cache.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "make-cache.h"

int mc_read_sysfs(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

int mc_write_sysfs(const char *path, const char *val)
{
	size_t len = strlen(val);
	ssize_t n;
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = write(fd, val, len);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	if (close(fd))
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/*
 * A size as the module shows it (12.0M, 1.5k, 512, 2.0M/sec) in bytes;
 * -1 if @s holds none.
 */
long long mc_hsize_bytes(const char *s)
{
	static const char units[] = "kmgtpe";
	const char *u;
	double v;
	char *end;

	if (!*s)
		return -1;
	v = strtod(s, &end);
	if (end == s)
		return -1;
	if (*end == '/' || !*end)
		return (long long)v;
	u = strchr(units, tolower((unsigned char)*end));
	if (!u)
		return -1;
	for (; u >= units; u--)
		v *= 1024;
	return (long long)(v + 0.5);
}
