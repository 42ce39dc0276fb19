#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
#
# Issue 4, crash (b): power cuts that drop unflushed writes (design.md
# section 4).  The cache device is a memory-backed null_blk with a
# volatile write cache (configfs cache_size); md0 stays the backing
# device.  First a self-test: null_blk's power-off must drop a write no
# flush covered and keep flushed and FUA writes, else the test fails
# saying so.  Then, in writeback mode, 12 times (or as many as the first
# argument says) in one boot: the verifying writer (tests/vm/crash-io: FUA writes and
# fdatasyncs, acknowledged writes logged) runs, the null_blk is powered
# off at a random moment (all its I/O fails, its unflushed writes are
# gone), /dev/cache0 and the set are stopped (errors expected, no oops),
# the null_blk is powered on and both are registered again; then the
# checks of crash-lib.sh (C1-C3).  Every 2nd point and the last drain the
# dirty data and compare raw md0.
# Then overwrites in place (issue 9): an 8 MiB region after the first is
# made dirty in 64 KiB extents (writeback_percent=100: it stays dirty).
# A single-threaded writer of 4k writes and fdatasyncs, all of which go
# over their dirty extent in place (stats_total/cache_overwrites), runs
# for 2 s: with nothing to commit, each fdatasync must have sent a flush
# to the cache device itself (its flush count grows by at least the
# writer's fdatasyncs).  Then 3 times the same writer is cut by a
# power cut and every acknowledged write must read back, and nothing
# else (C1, C2).  null_blk writes an overwrite of a page it has flushed
# before straight to its storage, so these cuts cannot catch a missing
# cache flush (a build without it passes them); the flush count does.
# Last, one power cut after a FUA write over a block that a writearound
# write forgot in the open journal entry: the FUA write must survive.
# shellcheck disable=SC2119  # make_raid5 and stop_raid take no arguments here
. "$BKC_REPO/tests/vm/lib.sh"
. "$BKC_REPO/tests/vm/verify-lib.sh"
. "$BKC_REPO/tests/vm/crash-lib.sh"

cd /tmp
# The number of power cuts: the first argument (scripts/vm -- t25-... 30),
# else $BKC_CRASH_POINTS (set on the host: scripts/vm passes it on),
# else 12.
POINTS=${1:-${BKC_CRASH_POINTS:-12}}
[[ $POINTS =~ ^[1-9][0-9]*$ ]] || fail "bad number of crash points '$POINTS'"

NB_NAME=bkcssd
NB=/sys/kernel/config/nullb/$NB_NAME
CACHE_DEV=/dev/$NB_NAME
NB_SIZE_MB=512
NB_CACHE_MB=64

nullb_power() {
	echo "$1" >"$NB/power" || fail "cannot set $NB/power to $1"
	if [ "$1" = 1 ]; then
		wait_for "$CACHE_DEV"
		[ "$(cat "/sys/block/$NB_NAME/queue/write_cache")" = "write back" ] ||
			fail "$CACHE_DEV has no volatile write cache after power-on"
	else
		wait_gone "/sys/block/$NB_NAME"
	fi
}

nullb_create() {
	need_module null_blk
	[ -d /sys/kernel/config/nullb ] ||
		mount -t configfs configfs /sys/kernel/config ||
		fail "cannot mount configfs"
	[ -d /sys/kernel/config/nullb ] || fail "no /sys/kernel/config/nullb"
	mkdir "$NB" || fail "cannot create $NB"
	on_exit "echo 0 >$NB/power 2>/dev/null; rmdir $NB 2>/dev/null"
	echo 1 >"$NB/memory_backed"
	echo "$NB_SIZE_MB" >"$NB/size"
	echo "$NB_CACHE_MB" >"$NB/cache_size"
	echo 4096 >"$NB/blocksize"
	nullb_power 1
	[ "$(cat "/sys/block/$NB_NAME/queue/fua")" = 1 ] || fail "$CACHE_DEV has no FUA"
}

# Does a power cut of the null_blk drop exactly the unflushed writes?
nullb_selftest() {
	local i
	head -c 16384 /dev/urandom >/tmp/pat
	dd if=/tmp/pat of="$CACHE_DEV" bs=4k count=1 oflag=direct status=none
	dd if=/tmp/pat of="$CACHE_DEV" bs=4k count=1 skip=1 seek=1 \
		oflag=direct,dsync status=none
	blockdev --flushbufs "$CACHE_DEV"
	dd if=/tmp/pat of="$CACHE_DEV" bs=4k count=1 skip=2 seek=2 oflag=direct status=none
	nullb_power 0
	nullb_power 1
	for i in 0 1 2; do
		cmp -s <(dd if="$CACHE_DEV" bs=4k skip=$i count=1 iflag=direct status=none) \
			<(dd if=/tmp/pat bs=4k skip=$i count=1 status=none) && echo kept || echo lost
	done >/tmp/selftest
	[ "$(tr '\n' ' ' </tmp/selftest)" = "kept kept lost " ] ||
		fail "null_blk power-off does not behave as a power cut in this kernel" \
			"(flushed, FUA, unflushed block: $(tr '\n' ' ' </tmp/selftest); expected kept kept lost)"
	log "null_blk power-off drops unflushed writes and keeps flushed and FUA ones"
}

# The power cut: everything in flight fails; stop what is left.
# power_cut K [WRITER-PID]
power_cut() {
	local k=$1 wpid=${2:-} i rc=0
	nullb_power 0
	if [ -n "$wpid" ]; then
		for ((i = 0; i < 600; i++)); do
			kill -0 "$wpid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$wpid" 2>/dev/null; then
			echo w >/proc/sysrq-trigger
			fail "crash point $k: the writer still hangs 60s after the power cut (blocked tasks in dmesg)"
		fi
		wait "$wpid" || rc=$?
		cat /tmp/writer.out
		[ "$rc" = 3 ] || [ "$rc" = 0 ] || fail "crash point $k: the writer failed with status $rc"
	fi
	if [ -e /dev/cache0 ]; then
		echo 1 >"$BATTR/stop" || log "stop of /dev/cache0 refused after the power cut"
		wait_gone /dev/cache0 60
	elif [ -e /sys/block/md0/cache/stop ]; then
		# the failed set stopped /dev/cache0 (it had dirty data)
		echo 1 >/sys/block/md0/cache/stop || log "stop of md0 refused after the power cut"
		wait_gone /sys/block/md0/cache 60
	fi
	if [ -e "/sys/fs/blkcache/$BKC_SET" ]; then
		echo 1 >"/sys/fs/blkcache/$BKC_SET/stop" ||
			log "stop of the set refused after the power cut"
		wait_gone "/sys/fs/blkcache/$BKC_SET" 60
	fi
	check_dmesg || fail "crash point $k: kernel complained after the power cut"
	nullb_power 1
}

# run_writer MIN_MS SPAN_MS WRITE-ARGS...: start crash-io write in the
# background, wait for its first acknowledgement, then sleep MIN_MS plus
# up to SPAN_MS; sets WPID and DELAY (ms).
WPID=
DELAY=
run_writer() {
	local min=$1 span=$2 i
	shift 2
	rm -f /tmp/started
	"$CRASH_IO" write "$@" --seconds 60 --started /tmp/started \
		>/tmp/writer.out 2>&1 &
	WPID=$!
	for ((i = 0; i < 300; i++)); do
		[ ! -e /tmp/started ] || break
		kill -0 "$WPID" 2>/dev/null || { cat /tmp/writer.out; fail "the writer died"; }
		sleep 0.1
	done
	[ -e /tmp/started ] || fail "the writer acknowledged nothing in 30s"
	DELAY=$((min + RANDOM % span))
	sleep "$((DELAY / 1000)).$(printf '%03d' $((DELAY % 1000)))"
}

# one_point K: the writer of epoch K, cut at a random moment, recovered
# and checked.
one_point() {
	local k=$1 args
	read -r -a args <<<"$(crash_writer_args "$k")"
	run_writer 200 2800 "${args[@]}"
	power_cut "$k" "$WPID"
	log "crash point $k: power cut ${DELAY} ms into the writer"
	crash_register
	crash_check "$k"
	if [ "$k" = "$POINTS" ]; then
		crash_drain "$k" last
	elif [ $((k % 2)) = 0 ]; then
		crash_drain "$k"
	fi
}

bkc_load
make_raid5
nullb_create
nullb_selftest
new_cache --writeback
crash_init
log "seed $CRASH_SEED, $POINTS power cuts, region $CRASH_BLOCKS blocks of 4 KiB," \
	"cache: null_blk ${NB_SIZE_MB} MiB with a ${NB_CACHE_MB} MiB volatile cache"
for ((k = 1; k <= POINTS; k++)); do
	one_point "$k"
done

# -- overwrites in place ------------------------------------------------------
IP_FIRST=$CRASH_BLOCKS
IP_BLOCKS=2048
IP_ACKS=$BKC_RESULTS/acks-ip

# inplace_point EPOCH: the in-place writer of EPOCH, cut at a random moment,
# recovered and checked.
inplace_point() {
	local e=$1 o0 o1 out n
	# (not persisted: idle writeback would clean the region after a cut)
	echo 0 >"$BATTR/writeback_running"
	o0=$(stat_get cache_overwrites)
	run_writer 500 2000 /dev/cache0 --first-block "$IP_FIRST" --blocks "$IP_BLOCKS" \
		--seed "$CRASH_SEED" --epoch "$e" --log "$IP_ACKS" --threads 1 \
		--max-len 1 --fua-pct 0
	o1=$(stat_get cache_overwrites)
	power_cut "$e" "$WPID"
	log "in-place point $e: power cut ${DELAY} ms into the writer," \
		"$((o1 - o0)) writes in place before it"
	n=$(sed -n 's/.*: \([0-9]*\) writes .*/\1/p' /tmp/writer.out)
	[[ $n =~ ^[1-9][0-9]*$ ]] || fail "in-place point $e: no writes counted in $(cat /tmp/writer.out)"
	[ $((o1 - o0)) -ge $((n / 2)) ] ||
		fail "in-place point $e: only $((o1 - o0)) of $n writes went in place"
	crash_register
	out=$("$CRASH_IO" check /dev/cache0 --first-block "$IP_FIRST" \
		--blocks "$IP_BLOCKS" --seed "$CRASH_SEED" --log "$IP_ACKS" \
		--epoch "$e" --count-epoch "$e") || {
		echo "$out"
		fail "in-place point $e: data check failed on /dev/cache0 (C1/C2)"
	}
	log "in-place point $e: $(sed -n 's/^verified_blocks=//p' <<<"$out")" \
		"acknowledged blocks verified"
}

mkdir -p "$IP_ACKS"
echo /dev/md0 >/sys/fs/blkcache/register || fail "registering md0 failed"
wait_for /dev/cache0 30
echo 100 >"$BATTR/writeback_percent"
echo 0 >"$BATTR/sequential_cutoff"
dd if=/dev/zero of=/dev/cache0 bs=64k seek=$((IP_FIRST / 16)) \
	count=$((IP_BLOCKS / 16)) oflag=direct conv=fsync status=none ||
	fail "cannot write the in-place region"
[ "$(dirty_sectors)" -ge $((IP_BLOCKS * 8)) ] ||
	fail "the in-place region is not dirty: $(dirty_sectors) dirty sectors"
f0=$(disk_stat 16 "$CACHE_DEV")
o0=$(stat_get cache_overwrites)
out=$("$CRASH_IO" write /dev/cache0 --first-block "$IP_FIRST" --blocks "$IP_BLOCKS" \
	--seed "$CRASH_SEED" --epoch $((POINTS + 1)) --log "$IP_ACKS" --threads 1 \
	--max-len 1 --fua-pct 0 --seconds 2) || { echo "$out"; fail "the in-place writer failed"; }
f1=$(disk_stat 16 "$CACHE_DEV")
o1=$(stat_get cache_overwrites)
syncs=$(sed -n 's/.* \([0-9]*\) flushes,.*/\1/p' <<<"$out")
writes=$(sed -n 's/.*: \([0-9]*\) writes .*/\1/p' <<<"$out")
log "in-place writer: $writes writes, $((o1 - o0)) in place; $syncs fdatasyncs," \
	"$((f1 - f0)) flushes of $CACHE_DEV"
[[ "$syncs $writes" =~ ^[1-9][0-9]*\ [1-9][0-9]*$ ]] ||
	fail "no writes or fdatasyncs counted in: $out"
[ $((o1 - o0)) -ge $((writes * 9 / 10)) ] ||
	fail "only $((o1 - o0)) of $writes writes over dirty extents went in place"
[ $((f1 - f0)) -ge "$syncs" ] ||
	fail "$syncs fdatasyncs after writes in place sent only $((f1 - f0)) flushes to $CACHE_DEV (C1)"
for ((e = POINTS + 2; e <= POINTS + 4; e++)); do
	inplace_point "$e"
done

# -- a FUA write over a range an unjournalled record forgot (C1) --------------
# Block FB is cached clean (A), durably.  In writearound mode a write (B)
# forgets it: its record sits in the open journal entry (journal_delay_ms
# 10 s).  A FUA write (C) then finds nothing cached and goes straight to
# md0.  Its completion must wait for that record: cut before the commit,
# the replay would bring A back over C.  The FUA write is an asynchronous
# O_DIRECT|O_DSYNC write (fio, libaio): the kernel sends no flush after it
# (a synchronous one gets a flush after it, which hides the bug).
FB=$((IP_FIRST + IP_BLOCKS))
blk_write() {
	head -c 4096 /dev/zero | tr '\0' "$1" |
		dd of=/dev/cache0 bs=4k seek="$FB" oflag="direct$2" status=none ||
		fail "FUA case: cannot write block $FB ($1)"
}
# blk_read CHAR: how many bytes of block FB are not CHAR
blk_read() {
	dd if=/dev/cache0 bs=4k skip="$FB" count=1 iflag=direct status=none |
		tr -d "$1" | wc -c
}
echo 0 >"$BATTR/writeback_running"
set_mode writethrough
blk_write A ,dsync
h0=$(stat_get cache_hits)
n=$(blk_read A)
[ "$n" = 0 ] || fail "FUA case: block $FB does not read back A ($n bytes differ)"
[ "$(stat_get cache_hits)" = $((h0 + 1)) ] ||
	fail "FUA case: block $FB is not cached after a write-through write"
echo 10000 >"/sys/fs/blkcache/$BKC_SET/journal_delay_ms"
set_mode writearound
blk_write B ""
f0=$(disk_stat 16 /dev/cache0)
fio --name=fua --filename=/dev/cache0 --ioengine=libaio --direct=1 \
	--sync=dsync --rw=write --bs=4k --size=4k --offset=$((FB * 4096)) \
	--buffer_pattern=0x43 --output=/tmp/fio-fua.out ||
	{ cat /tmp/fio-fua.out; fail "FUA case: the FUA write failed"; }
f1=$(disk_stat 16 /dev/cache0)
[ "$f1" = "$f0" ] || fail "FUA case: the FUA write sent $((f1 - f0)) flushes"
power_cut fua
crash_register
n=$(blk_read C)
[ "$n" = 0 ] || fail "FUA case: after the power cut block $FB lost the" \
	"acknowledged FUA write: $n of 4096 bytes differ (C1)"
log "FUA case: a FUA write over a range forgotten in the open journal entry" \
	"survives a power cut"
stop_all
crash_summary
bkc_unload
