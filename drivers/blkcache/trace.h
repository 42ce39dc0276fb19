/* SPDX-License-Identifier: GPL-2.0 */
/*
 * blkcache tracepoints (system "blkcache"): request routing, journal
 * commits, writeback batches, GC steps and set failures.  Usable with
 * perf, trace-cmd or tracefs (events/blkcache/).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM blkcache

#if !defined(_BKC_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _BKC_TRACE_H

#include <linux/tracepoint.h>

/* How a request was routed, and why (bkc_request's route and reason). */
#define BKC_ROUTE_HIT		0
#define BKC_ROUTE_MISS		1
#define BKC_ROUTE_BYPASS	2
#define BKC_ROUTE_CACHED	3	/* a write the cache took */

#define BKC_WHY_NONE		0
#define BKC_WHY_SEQUENTIAL	1	/* a stream past sequential_cutoff */
#define BKC_WHY_MODE		2	/* writearound or none */
#define BKC_WHY_FULL		3	/* dirty data over its share */
#define BKC_WHY_NOSPACE		4	/* no cache space in time */
#define BKC_WHY_OP		5	/* discard, write zeroes, empty */

TRACE_EVENT(bkc_request,
	TP_PROTO(dev_t dev, u64 sector, u32 sectors, bool write, int route,
		 int why),
	TP_ARGS(dev, sector, sectors, write, route, why),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(u64, sector)
		__field(u32, sectors)
		__field(bool, write)
		__field(int, route)
		__field(int, why)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->sector = sector;
		__entry->sectors = sectors;
		__entry->write = write;
		__entry->route = route;
		__entry->why = why;
	),
	TP_printk("%d,%d %s %llu+%u %s%s%s", MAJOR(__entry->dev),
		  MINOR(__entry->dev), __entry->write ? "write" : "read",
		  __entry->sector, __entry->sectors,
		  __print_symbolic(__entry->route,
				   { BKC_ROUTE_HIT, "hit" },
				   { BKC_ROUTE_MISS, "miss" },
				   { BKC_ROUTE_BYPASS, "bypass" },
				   { BKC_ROUTE_CACHED, "cached" }),
		  __entry->why ? " " : "",
		  __print_symbolic(__entry->why,
				   { BKC_WHY_NONE, "" },
				   { BKC_WHY_SEQUENTIAL, "sequential" },
				   { BKC_WHY_MODE, "mode" },
				   { BKC_WHY_FULL, "dirty-full" },
				   { BKC_WHY_NOSPACE, "no-space" },
				   { BKC_WHY_OP, "op" }))
);

TRACE_EVENT(bkc_journal_commit,
	TP_PROTO(dev_t dev, u64 seq, u64 last_seq, u32 bytes),
	TP_ARGS(dev, seq, last_seq, bytes),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(u64, seq)
		__field(u64, last_seq)
		__field(u32, bytes)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->seq = seq;
		__entry->last_seq = last_seq;
		__entry->bytes = bytes;
	),
	TP_printk("%d,%d seq %llu last_seq %llu bytes %u",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->seq,
		  __entry->last_seq, __entry->bytes)
);

TRACE_EVENT(bkc_writeback_batch,
	TP_PROTO(dev_t dev, u64 first, u64 last, u32 keys, u64 sectors),
	TP_ARGS(dev, first, last, keys, sectors),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(u64, first)
		__field(u64, last)
		__field(u32, keys)
		__field(u64, sectors)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->first = first;
		__entry->last = last;
		__entry->keys = keys;
		__entry->sectors = sectors;
	),
	TP_printk("%d,%d sectors %llu..%llu keys %u written %llu",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->first,
		  __entry->last, __entry->keys, __entry->sectors)
);

TRACE_EVENT(bkc_gc_step,
	TP_PROTO(dev_t dev, int result, u32 moves),
	TP_ARGS(dev, result, moves),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(int, result)
		__field(u32, moves)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->result = result;
		__entry->moves = moves;
	),
	TP_printk("%d,%d result %d moves %u", MAJOR(__entry->dev),
		  MINOR(__entry->dev), __entry->result, __entry->moves)
);

TRACE_EVENT(bkc_set_fail,
	TP_PROTO(dev_t dev, int err, const char *why),
	TP_ARGS(dev, err, why),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(int, err)
		__array(char, why, 64)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->err = err;
		strscpy(__entry->why, why, sizeof(__entry->why));
	),
	TP_printk("%d,%d err %d: %s", MAJOR(__entry->dev),
		  MINOR(__entry->dev), __entry->err, __entry->why)
);

#endif /* _BKC_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
