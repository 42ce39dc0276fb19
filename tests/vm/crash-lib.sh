# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# tests/vm/crash-lib.sh - the crash-point checks shared by t24 (SIGKILL of
# QEMU) and t25 (power cut of a null_blk cache device); sourced after
# lib.sh and verify-lib.sh.
#
# The writer is tests/vm/crash-io over the first CRASH_BLOCKS 4 KiB blocks
# of /dev/cache0, logging acknowledged writes to CRASH_ACKS; epoch K is the
# writer that ran into crash point K.

CRASH_BLOCKS=8192		# 32 MiB
CRASH_ACKS=$BKC_RESULTS/acks
CRASH_POINTS_FILE=$BKC_RESULTS/points.txt
CRASH_SEED=
CRASH_SET_DIRTY=		# the set's dirty data before md0 came back
CRASH_SB_STATE=			# md0's superblock state then

crash_init() {
	CRASH_SEED=$(((RANDOM << 30 | RANDOM << 15 | RANDOM) + 1))
	rm -rf "$CRASH_ACKS" "$CRASH_POINTS_FILE" "$BKC_RESULTS"/slow-wb-*
	mkdir -p "$CRASH_ACKS"
	[ "$(cat /sys/block/cache0/queue/write_cache)" = "write back" ] ||
		fail "/dev/cache0 does not advertise a write cache (C5)"
	[ "$(cat /sys/block/cache0/queue/fua)" = 1 ] ||
		fail "/dev/cache0 does not advertise FUA (C5)"
}

# crash_writer_args EPOCH: the crash-io write arguments of an epoch.  On
# odd epochs writeback_percent is 1, so that writeback runs during the
# crash (and the dirty data of the epoch need not all be there after it);
# on even epochs it is 10 (the default: no writeback due for the 32 MiB
# region).  Both are set every time, as the value persists in the backing
# superblock across the crash.
# Every third epoch writes with FUA only, no fdatasync: a FUA write
# acknowledged before its journal entry is durable shows up there (in the
# other epochs the next flush of any thread hides it).
crash_writer_args() {
	local epoch=$1 fua=20
	if [ $((epoch % 2)) = 1 ]; then
		echo 1 >"$BATTR/writeback_percent"
		: >"$BKC_RESULTS/slow-wb-$epoch"
	else
		echo 10 >"$BATTR/writeback_percent"
	fi
	[ $((epoch % 3)) != 0 ] || fua=100
	echo /dev/cache0 --blocks "$CRASH_BLOCKS" --seed "$CRASH_SEED" \
		--epoch "$epoch" --log "$CRASH_ACKS" --threads 4 --fua-pct "$fua"
}

# crash_register: register the cache device (CACHE_DEV, default the SSD),
# note the dirty data the set recovered and the state md0's superblock
# says before anything can write it back, then register md0 and wait for
# /dev/cache0.  (Read later, the state can be "clean" already: writeback
# drains dirty data below the target once the device is idle.)
crash_register() {
	local s
	echo "${CACHE_DEV:-$BKC_SSD}" >/sys/fs/blkcache/register ||
		fail "registering ${CACHE_DEV:-$BKC_SSD} failed"
	wait_for "/sys/fs/blkcache/$BKC_SET" 30
	s=$(cat "/sys/fs/blkcache/$BKC_SET/dirty_data")
	CRASH_SET_DIRTY=$s
	CRASH_SB_STATE=$(md0_sb_state)
	echo /dev/md0 >/sys/fs/blkcache/register || fail "registering md0 failed"
	wait_for /dev/cache0 30
	check_dmesg || fail "kernel complained during recovery"
}

# crash_check K: after crash point K (recovered by crash_register), every
# block acknowledged so far reads back its acknowledged or a later
# generation and nothing reads another sector's data or garbage (C1, C2);
# the set recovered at least the dirty data epoch K got acknowledged, and
# md0's superblock said dirty when it was recovered (C3).
crash_check() {
	local k=$1 out ep_blocks verified slow=0 set_dirty
	out=$("$CRASH_IO" check /dev/cache0 --blocks "$CRASH_BLOCKS" \
		--seed "$CRASH_SEED" --log "$CRASH_ACKS" --epoch "$k" \
		--count-epoch "$k") || {
		echo "$out"
		fail "crash point $k: data check failed on /dev/cache0 (C1/C2)"
	}
	grep -v '=' <<<"$out" || true
	ep_blocks=$(sed -n 's/^epoch_blocks=//p' <<<"$out")
	verified=$(sed -n 's/^verified_blocks=//p' <<<"$out")
	[ ! -e "$BKC_RESULTS/slow-wb-$k" ] || slow=1
	set_dirty=$(($(hsize_bytes "$CRASH_SET_DIRTY") + $(hsize_unit "$CRASH_SET_DIRTY")))
	if [ "$ep_blocks" -gt 0 ]; then
		[ "$CRASH_SB_STATE" = dirty ] ||
			fail "crash point $k: md0's superblock says '$CRASH_SB_STATE' after the crash with dirty data acknowledged (C3)"
		if [ "$slow" = 0 ] && [ "$set_dirty" -lt $((ep_blocks * 4096)) ]; then
			fail "crash point $k: the set recovered $CRASH_SET_DIRTY of dirty data, but $ep_blocks blocks ($((ep_blocks * 4)) KiB) were acknowledged in the last run, with no writeback due (C3)"
		fi
	fi
	log "crash point $k: $verified acknowledged blocks verified; $ep_blocks" \
		"acknowledged in the last run; the set recovered $CRASH_SET_DIRTY dirty" \
		"$([ "$slow" = 1 ] && echo "(writeback was running)")"
	echo "point=$k verified_blocks=$verified epoch_blocks=$ep_blocks set_dirty=$CRASH_SET_DIRTY" \
		>>"$CRASH_POINTS_FILE"
}

# crash_drain K [last]: writeback_percent=0 drains the dirty data; raw md0
# then holds what /dev/cache0 showed (C3).  /dev/cache0 comes back unless
# "last".
crash_drain() {
	local k=$1 off sum_c sum_m len=$((CRASH_BLOCKS * 4096)) d
	d=$(dirty_sectors)
	wait_clean 300
	sum_c=$(region_sum /dev/cache0 0 "$len")
	off=$(data_offset)
	echo 1 >"$BATTR/stop"
	wait_gone /dev/cache0 60
	"$CRASH_IO" check /dev/md0 --dev-offset "$off" --blocks "$CRASH_BLOCKS" \
		--seed "$CRASH_SEED" --log "$CRASH_ACKS" --epoch "$k" --quiet ||
		fail "crash point $k: data check failed on raw md0 after writing back $((d / 2048)) MiB (C3)"
	sum_m=$(region_sum /dev/md0 "$off" "$len")
	[ "$sum_c" = "$sum_m" ] ||
		fail "crash point $k: raw md0 differs from /dev/cache0 after writing back $((d / 2048)) MiB (C3)"
	log "crash point $k: $((d / 2048)) MiB drained; raw md0 matches /dev/cache0"
	if [ "${2:-}" != last ]; then
		echo /dev/md0 >/sys/fs/blkcache/register || fail "registering md0 failed"
		wait_for /dev/cache0 30
	fi
}

crash_summary() {
	local n v
	n=$(wc -l <"$CRASH_POINTS_FILE")
	v=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^verified_blocks=/) {
		sub("verified_blocks=", "", $i); s += $i } } END { print s + 0 }' \
		"$CRASH_POINTS_FILE")
	log "$n crash points checked, $v acknowledged blocks verified in all"
}
