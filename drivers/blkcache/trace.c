// SPDX-License-Identifier: GPL-2.0
/*
 * The blkcache tracepoints (trace.h) are defined here.
 */
#include <linux/blkdev.h>

#define CREATE_TRACE_POINTS
#include "trace.h"
