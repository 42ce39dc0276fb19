/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal test harness for the userspace core tests.  CHECK() records a
 * failure and carries on; the test's main() returns tcheck_done().
 */
#ifndef _TCHECK_H
#define _TCHECK_H

#include <stdio.h>
#include <stdlib.h>

static unsigned long tcheck_failures;
static unsigned long tcheck_checks;

#define CHECK(cond) do {						\
	tcheck_checks++;						\
	if (!(cond)) {							\
		tcheck_failures++;					\
		fprintf(stderr, "%s:%d: CHECK failed: %s\n",		\
			__FILE__, __LINE__, #cond);			\
	}								\
} while (0)

#define CHECK_EQ(a, b) do {						\
	long long __a = (long long)(a), __b = (long long)(b);		\
	tcheck_checks++;						\
	if (__a != __b) {						\
		tcheck_failures++;					\
		fprintf(stderr, "%s:%d: CHECK failed: %s == %s "	\
			"(%lld != %lld)\n", __FILE__, __LINE__,		\
			#a, #b, __a, __b);				\
	}								\
} while (0)

/* Abort the whole test: used where carrying on would only cascade. */
#define REQUIRE(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: REQUIRE failed: %s\n",		\
			__FILE__, __LINE__, #cond);			\
		exit(1);						\
	}								\
} while (0)

static inline int tcheck_done(const char *name)
{
	if (tcheck_failures) {
		fprintf(stderr, "%s: FAIL (%lu of %lu checks failed)\n",
			name, tcheck_failures, tcheck_checks);
		return 1;
	}
	printf("%s: PASS (%lu checks)\n", name, tcheck_checks);
	return 0;
}

#endif /* _TCHECK_H */
