#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# boot: shared
#
# Issue 4, hits and bypass, read from stats_total/:
#   - writeback: 2048 random 4k reads of data just written are 2048 hits
#     and no miss;
#   - writethrough: the first read of uncached data is a miss, the read
#     after its promotion a hit; data written in writethrough reads as hits;
#   - a 64 MiB sequential 1M write stream is bypassed (bypassed grows by
#     64M less the first sequential_cutoff, the dirty data by at most that),
#     the same for a read stream (bypass misses; its tail is not promoted),
#     for two concurrent streams, and not at all with sequential_cutoff 0;
#   - clear_stats zeroes every counter;
#   - issue 8: stats_five_minute follows a burst at once (and after a
#     fold), stats_hour/stats_day too, the set's stats_total counts what
#     its device counts, its clear_stats clears it, writes over cached
#     data are cache_write_hits and new data cache_write_misses, every
#     read miss is one of promotions and none a cache_miss_collision;
#     the set's priority_stats add up to 100 %, written
#     counts the cached writes and metadata_written part of it, and read
#     hits add no data to written;
#   - the tracepoints blkcache:bkc_request (256 read hits for 256 reads of
#     cached data, 128 cached writes for 128 writes), bkc_journal_commit,
#     bkc_writeback_batch (while draining) and bkc_gc_step (trigger_gc)
#     fire, bkc_set_fail does not;
#   - issue 9, read-around: after 256 random reads of a 16 MiB region
#     written by one 64k stream (12 MiB of it bypassed), at least 90 % of
#     its 4096 blocks hit;
#   - issue 9, the RAID-stripe rule: a 32 MiB stream's writes into 8
#     stripes that hold dirty data are cached, the rest past the cutoff
#     bypassed, and the data reads back from cache0 and, after writeback,
#     from md0.
# shellcheck disable=SC2119  # make_raid5 takes no arguments here
. "$BKC_REPO/tests/vm/lib.sh"
. "$BKC_REPO/tests/vm/verify-lib.sh"

cd /tmp
MB=1048576

fio_q() {
	fio --output=/tmp/fio.out --eta=never --filename=/dev/cache0 --direct=1 \
		--name=job "$@" || { cat /tmp/fio.out; fail "fio $* failed"; }
}

clear_stats() {
	echo 1 >"$BATTR/clear_stats" || fail "clear_stats refused"
}

stats() {
	local s out=""
	for s in cache_hits cache_misses cache_bypass_hits cache_bypass_misses \
		bypassed cache_hit_ratio; do
		out+="$s=$(stat_get $s) "
	done
	echo "$out"
}

# expect_stat NAME VALUE WHAT
expect_stat() {
	[ "$(stat_get "$1")" = "$2" ] ||
		fail "$3: $1 is $(stat_get "$1"), expected $2 ($(stats))"
}

bypassed_bytes() {
	hsize_bytes "$(stat_get bypassed)"
}

# in_range V LO HI
in_range() {
	[ "$1" -ge "$2" ] && [ "$1" -le "$3" ]
}

avail() {
	cat "/sys/fs/blkcache/$BKC_SET/cache_available_percent"
}

bkc_load
make_raid5
new_cache --writeback
[ "$(cat "$BATTR/sequential_cutoff")" = 4.0M ] ||
	fail "sequential_cutoff is $(cat "$BATTR/sequential_cutoff"), not 4.0M"

# -- writeback: reads after writes are hits ------------------------------
fio_q --rw=randwrite --bs=4k --size=8m --offset=0 --ioengine=libaio --iodepth=8
clear_stats
for s in cache_hits cache_misses cache_bypass_hits cache_bypass_misses \
	cache_hit_ratio bypassed; do
	expect_stat $s 0 "after clear_stats"
done
fio_q --rw=randread --bs=4k --size=8m --offset=0 --ioengine=libaio --iodepth=8
expect_stat cache_hits 2048 "writeback: 2048 reads of written data"
expect_stat cache_misses 0 "writeback: 2048 reads of written data"
expect_stat cache_hit_ratio 100 "writeback: 2048 reads of written data"
log "writeback: $(stats)"
# -- the windows, the set's counters, write hits and misses -----------------
w5=$(cat "$BATTR/stats_five_minute/cache_hits")
in_range "$w5" 2000 2048 ||
	fail "stats_five_minute: cache_hits $w5 right after 2048 hits"
for w in stats_five_minute stats_hour stats_day; do
	[ "$(cat "$BATTR/$w/cache_misses")" = 0 ] ||
		fail "$w: cache_misses $(cat "$BATTR/$w/cache_misses") with no miss"
done
sset=/sys/fs/blkcache/$BKC_SET
[ "$(cat "$sset/stats_total/cache_hits")" -ge 2048 ] ||
	fail "the set's stats_total: cache_hits $(cat "$sset/stats_total/cache_hits")"
echo 1 >"$sset/clear_stats" || fail "the set's clear_stats refused"
clear_stats
[ "$(cat "$sset/stats_five_minute/cache_hits")" = 0 ] ||
	fail "the set's clear_stats left stats_five_minute/cache_hits"
fio_q --rw=randwrite --bs=4k --size=8m --offset=0 --ioengine=libaio --iodepth=8
fio_q --rw=randwrite --bs=4k --size=4m --offset=256m --ioengine=libaio --iodepth=8
expect_stat cache_write_hits 2048 "writeback: 2048 writes over cached data"
expect_stat cache_write_misses 1024 "writeback: 1024 writes of new data"
for f in cache_write_hits cache_write_misses; do
	[ "$(cat "$sset/stats_total/$f")" = "$(stat_get $f)" ] ||
		fail "the set's $f $(cat "$sset/stats_total/$f"), the device's $(stat_get $f)"
done
sleep 6	# a fold of the windows
w5=$(cat "$BATTR/stats_five_minute/cache_write_hits")
in_range "$w5" 1990 2048 ||
	fail "stats_five_minute: cache_write_hits $w5 6 s after 2048"
log "windows: five_minute write hits $w5, hour $(cat "$BATTR/stats_hour/cache_write_hits")"
# bucket shares and write amplification
ps=$(cat "$sset/priority_stats")
tot=0
for k in Unused Clean Dirty Metadata; do
	v=$(sed -n "s/^$k:[[:space:]]*\([0-9]*\)%$/\1/p" <<<"$ps")
	[ -n "$v" ] || fail "priority_stats has no $k line: $ps"
	tot=$((tot + v))
done
in_range "$tot" 96 100 || fail "priority_stats shares add up to $tot%: $ps"
wr=$(hsize_bytes "$(cat "$sset/written")")
mw=$(hsize_bytes "$(cat "$sset/metadata_written")")
[ "$wr" -ge $((20 * MB)) ] || fail "written is $(cat "$sset/written") after 20 MiB of cached writes"
if [ "$mw" -le 0 ] || [ "$mw" -ge "$wr" ]; then
	fail "metadata_written $(cat "$sset/metadata_written") of written $(cat "$sset/written")"
fi
log "priority_stats: $(tr '\n\t' '  ' <<<"$ps"); written $(cat "$sset/written"), metadata $(cat "$sset/metadata_written")"
# read hits write no data to the cache device (written once counted
# every hit's bytes)
clear_stats
fio_q --rw=randread --bs=4k --size=8m --offset=0 --ioengine=libaio --iodepth=8
expect_stat cache_hits 2048 "writeback: 2048 reads of cached data"
wr2=$(hsize_bytes "$(cat "$sset/written")")
mw2=$(hsize_bytes "$(cat "$sset/metadata_written")")
[ $((wr2 - mw2 - wr + mw)) -lt $((2 * MB)) ] ||
	fail "data written went from $((wr - mw)) to $((wr2 - mw2)) bytes over 8 MiB of read hits"

# -- writethrough: a miss, promoted, then a hit ---------------------------
set_mode writethrough
clear_stats
fio_q --rw=randread --bs=4k --size=1m --offset=512m --ioengine=psync
expect_stat cache_misses 256 "writethrough: first read of 256 uncached blocks"
expect_stat cache_hits 0 "writethrough: first read of 256 uncached blocks"
# Promotion is asynchronous: give it a moment, then read again.
passes=1
while :; do
	sleep 1
	clear_stats
	fio_q --rw=randread --bs=4k --size=1m --offset=512m --ioengine=psync
	passes=$((passes + 1))
	[ "$(stat_get cache_hits)" != 256 ] || break
	[ "$passes" -lt 5 ] ||
		fail "writethrough: read $passes times, still not all hits ($(stats))"
done
expect_stat cache_misses 0 "writethrough: read after promotion"
log "writethrough: read $passes: all 256 hits ($(stats))"
fio_q --rw=randwrite --bs=4k --size=4m --offset=600m --ioengine=libaio --iodepth=8
clear_stats
fio_q --rw=randread --bs=4k --size=4m --offset=600m --ioengine=libaio --iodepth=8
expect_stat cache_hits 1024 "writethrough: reads of data written in writethrough"
expect_stat cache_misses 0 "writethrough: reads of data written in writethrough"
# every miss promoted, none lost to a racing write
clear_stats
fio_q --rw=randread --bs=4k --size=1m --offset=700m --ioengine=psync
expect_stat cache_misses 256 "writethrough: 256 reads of uncached data"
for ((i = 0; i < 50; i++)); do
	[ "$(stat_get promotions)" = 256 ] && break
	sleep 0.1
done
expect_stat promotions 256 "writethrough: 256 misses promoted"
expect_stat cache_miss_collisions 0 "writethrough: promotions with no write"

# -- bypass of sequential streams -------------------------------------------
set_mode writeback
clear_stats
d0=$(dirty_sectors)
a0=$(avail)
fio_q --rw=write --bs=1m --size=64m --offset=1g --ioengine=psync
by=$(bypassed_bytes)
d1=$(dirty_sectors)
a1=$(avail)
log "64 MiB write stream: bypassed $(stat_get bypassed), dirty +$(((d1 - d0) / 2048)) MiB," \
	"cache_available_percent $a0 -> $a1"
in_range "$by" $((60 * MB - MB / 10)) $((64 * MB)) ||
	fail "write stream: bypassed $(stat_get bypassed), expected 60M..64M"
[ $(((d1 - d0) * 512)) -le $((5 * MB)) ] ||
	fail "write stream: the dirty data grew by $(((d1 - d0) / 2)) KiB, more than the cutoff"
[ "$a1" -ge $((a0 - 1)) ] ||
	fail "write stream: cache_available_percent fell from $a0 to $a1"

clear_stats
a0=$(avail)
fio_q --rw=read --bs=1m --size=64m --offset=1280m --ioengine=psync
by=$(bypassed_bytes)
in_range "$by" $((60 * MB - MB / 10)) $((64 * MB)) ||
	fail "read stream: bypassed $(stat_get bypassed), expected 60M..64M"
[ "$(stat_get cache_bypass_misses)" -ge 59 ] ||
	fail "read stream: only $(stat_get cache_bypass_misses) bypass misses"
[ "$(stat_get cache_hits)" = 0 ] || fail "read stream: hits on uncached data ($(stats))"
log "64 MiB read stream: $(stats)"
sleep 1
clear_stats
# The bypassed tail was not promoted: reading it again misses.
fio_q --rw=randread --bs=4k --size=32m --offset=1312m --io_size=1m --ioengine=psync
expect_stat cache_hits 0 "random reads in the bypassed read stream"
[ "$(avail)" -ge $((a0 - 1)) ] ||
	fail "read stream: cache_available_percent fell from $a0 to $(avail)"

# Two concurrent streams are told apart per task.
clear_stats
fio --output=/tmp/fio.out --eta=never --filename=/dev/cache0 --direct=1 --ioengine=psync \
	--rw=write --bs=1m --size=32m --name=s1 --offset=1408m --name=s2 \
	--offset=1472m || { cat /tmp/fio.out; fail "two streams failed"; }
by=$(bypassed_bytes)
[ "$by" -ge $((56 * MB - MB / 10)) ] ||
	fail "two concurrent 32 MiB streams: bypassed only $(stat_get bypassed)"
log "two concurrent 32 MiB streams: bypassed $(stat_get bypassed)"

# sequential_cutoff 0: nothing is bypassed.
echo 0 >"$BATTR/sequential_cutoff"
# writeback paused, so that it cannot shrink the dirty data meanwhile
echo 0 >"$BATTR/writeback_running"
clear_stats
d0=$(dirty_sectors)
fio_q --rw=write --bs=1m --size=16m --offset=1536m --ioengine=psync
expect_stat bypassed 0 "16 MiB stream with sequential_cutoff 0"
d1=$(dirty_sectors)
echo 1 >"$BATTR/writeback_running"
[ $((d1 - d0)) -ge $((16 * 2048)) ] ||
	fail "sequential_cutoff 0: the dirty data grew by $(((d1 - d0) / 2048)) MiB, not 16"
echo 4M >"$BATTR/sequential_cutoff"

# -- clear_stats --------------------------------------------------------------
fio_q --rw=randread --bs=4k --size=4m --offset=0 --ioengine=psync --io_size=256k
[ "$(stat_get cache_hits)" -gt 0 ] || fail "no hits to clear"
clear_stats
for s in cache_hits cache_misses cache_bypass_hits cache_bypass_misses \
	cache_hit_ratio bypassed; do
	expect_stat $s 0 "after clear_stats"
done
log "clear_stats: $(stats)"

# -- tracepoints: the events of a small, known workload ----------------------
trace_on all 8192
for e in bkc_request bkc_journal_commit bkc_writeback_batch bkc_gc_step bkc_set_fail; do
	[ -d "$TR/events/blkcache/$e" ] || fail "no tracepoint blkcache:$e"
done
# 256 reads of cached data, 128 new writes, then writeback and a GC pass
fio_q --rw=randread --bs=4k --size=1m --offset=0 --ioengine=psync
fio_q --rw=randwrite --bs=4k --size=512k --offset=300m --ioengine=psync --end_fsync=1
echo 0 >"$BATTR/writeback_percent"
for ((i = 0; i < 300; i++)); do
	[ "$(dirty_sectors)" = 0 ] && break
	sleep 0.1
done
echo 1 >"/sys/fs/blkcache/$BKC_SET/trigger_gc"
sleep 2
trace_off all >/tmp/trace.txt
n_hit=$(grep -c 'bkc_request: .* read .* hit' /tmp/trace.txt || true)
n_wr=$(grep -c 'bkc_request: .* write .* cached' /tmp/trace.txt || true)
n_commit=$(grep -c 'bkc_journal_commit: ' /tmp/trace.txt || true)
n_wb=$(grep -c 'bkc_writeback_batch: ' /tmp/trace.txt || true)
n_gc=$(grep -c 'bkc_gc_step: ' /tmp/trace.txt || true)
n_fail=$(grep -c 'bkc_set_fail: ' /tmp/trace.txt || true)
log "trace: $n_hit read hits, $n_wr cached writes, $n_commit commits, $n_wb writeback batches, $n_gc GC steps, $n_fail set failures"
[ "$n_hit" = 256 ] || fail "trace: $n_hit read hit events for 256 reads of cached data"
[ "$n_wr" = 128 ] || fail "trace: $n_wr cached write events for 128 writes"
[ "$n_commit" -ge 1 ] || fail "trace: no journal commit after an fsync"
[ "$n_wb" -ge 1 ] || fail "trace: no writeback batch while draining"
[ "$n_gc" -ge 1 ] || fail "trace: no GC step after trigger_gc"
[ "$n_fail" = 0 ] || fail "trace: a set failure on a healthy cache"

# -- issue 9: read-around of a bypassed write stream -------------------------
# 16 MiB written by one 64k stream: the first 4 MiB (sequential_cutoff)
# are cached, the other 12 MiB bypassed.  256 random reads over it promote
# the 1 MiB around each miss in the bypassed part, so a second pass over
# every block hits nearly everywhere; promoting only the blocks missed
# would leave it near a third (4 MiB cached + 1 MiB promoted of 16).
fio_q --rw=write --bs=64k --size=16m --offset=1700m --ioengine=psync
clear_stats
fio_q --rw=randread --bs=4k --size=16m --offset=1700m --io_size=1m --ioengine=psync
# promotions end in the background: wait until their counts stop moving
prev=-1
for ((i = 0; i < 50; i++)); do
	p="$(stat_get promotions) $(stat_get readarounds)"
	[ "$p" != "$prev" ] || break
	prev=$p
	sleep 0.2
done
ra=$(stat_get readarounds)
log "read-around: 256 random reads of the stream: $(stats)" \
	"promotions=$(stat_get promotions) readarounds=$ra"
# every miss is still promoted itself; 12 read-arounds of 1 MiB cover
# the 12 MiB bypassed, fewer when reads race ahead of them
expect_stat promotions "$(stat_get cache_misses)" "read-around: misses promoted"
[ "$ra" -ge 6 ] || fail "read-around: only $ra read-arounds for 12 MiB bypassed"
clear_stats
fio_q --rw=randread --bs=4k --size=16m --offset=1700m --ioengine=libaio --iodepth=8
h=$(stat_get cache_hits)
log "read-around: then every block once: $(stats)"
[ "$h" -ge 3686 ] ||
	fail "read-around: $h hits of 4096 blocks of a bypassed stream after 256 random reads"
expect_stat cache_miss_collisions 0 "read-around with no write"

# -- issue 9: the RAID-stripe rule -------------------------------------------
# In writeback mode a stream's write is cached, not bypassed, where its
# stripe already holds dirty data.  One dirty 4k block in each of 8
# stripes past the first 4 MiB, then a 32 MiB 64k stream over them:
# bypassed is 32 MiB less sequential_cutoff and less those 8 stripes, and
# the dirty data grows by as much.  The data reads back as written, from
# /dev/cache0 and, once written back, from md0 itself.
S=$(cat /sys/block/cache0/queue/optimal_io_size)
{ [ "$S" -ge 65536 ] && [ $((MB % S)) = 0 ]; } ||
	fail "stripe rule: optimal_io_size of cache0 is '$S'"
base=$((1760 * MB))
echo 0 >"$BATTR/writeback_running"
for ((i = 0; i < 8; i++)); do
	dd if=/dev/urandom of=/dev/cache0 bs=4k count=1 oflag=direct \
		conv=notrunc status=none \
		seek=$(((base + (40 + 16 * i) * S) / 4096 + i)) ||
		fail "stripe rule: writing a dirty block failed"
done
dd if=/dev/urandom of=/tmp/stream.bin bs=1M count=32 status=none
clear_stats
d0=$(dirty_sectors)
dd if=/tmp/stream.bin of=/dev/cache0 bs=64k oflag=direct conv=notrunc \
	status=none seek=$((base / 65536)) || fail "stripe rule: the stream failed"
by=$(bypassed_bytes)
d1=$(dirty_sectors)
grow=$(((d1 - d0) * 512))
log "stripe rule: 32 MiB stream over 8 dirty ${S}-byte stripes:" \
	"bypassed $(stat_get bypassed), dirty +$((grow / 1024)) KiB"
want=$((28 * MB - 8 * S))
in_range "$by" $((want - 65536)) $((want + 65536)) ||
	fail "stripe rule: bypassed $by bytes, expected $want (not 28 MiB: the dirty stripes cached)"
want=$((4 * MB + 8 * S - 8 * 4096))
in_range "$grow" $((want - 65536)) $((want + 65536)) ||
	fail "stripe rule: the dirty data grew by $grow bytes, expected $want"
sum=$(sha256sum </tmp/stream.bin | cut -d' ' -f1)
[ "$(region_sum /dev/cache0 "$base" $((32 * MB)))" = "$sum" ] ||
	fail "stripe rule: /dev/cache0 does not read back the stream"
wait_clean 120
[ "$(region_sum /dev/md0 $(($(data_offset) + base)) $((32 * MB)))" = "$sum" ] ||
	fail "stripe rule: md0 does not hold the stream after writeback"
echo 10 >"$BATTR/writeback_percent"
rm -f /tmp/stream.bin
stop_all
bkc_unload
