# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# tests/vm/verify-lib.sh - helpers shared by the issue-4 VM tests
# (t20-t25), sourced after lib.sh:
#	. "$BKC_REPO/tests/vm/lib.sh"
#	. "$BKC_REPO/tests/vm/verify-lib.sh"

CRASH_IO=$BKC_REPO/tests/vm/crash-io
BATTR=/sys/block/cache0/cache
BKC_SET=			# the set uuid, once known

[ -x "$CRASH_IO" ] || fail "$CRASH_IO missing: run make on the host"

# hsize_bytes STRING: the bytes of a human-readable size as the module
# prints it ("0", "512", "1.5k", "20.0M"); rounded down.
hsize_bytes() {
	local s=$1 int frac=0 mul=1
	if [[ $s =~ ^([0-9]+)(\.([0-9]))?([kMGTPE])?$ ]]; then
		int=${BASH_REMATCH[1]}
		[ -z "${BASH_REMATCH[3]}" ] || frac=${BASH_REMATCH[3]}
		case ${BASH_REMATCH[4]} in
		k) mul=$((1 << 10)) ;;
		M) mul=$((1 << 20)) ;;
		G) mul=$((1 << 30)) ;;
		T) mul=$((1 << 40)) ;;
		esac
		echo $((int * mul + frac * mul / 10))
	else
		fail "cannot parse the size '$s'"
	fi
}

# hsize_unit STRING: the bytes one step of the last printed digit stands
# for (how far the printed value may be below the real one).
hsize_unit() {
	case $1 in
	*k) echo $(((1 << 10) / 10 + 1)) ;;
	*M) echo $(((1 << 20) / 10 + 1)) ;;
	*G) echo $(((1 << 30) / 10 + 1)) ;;
	*) echo 1 ;;
	esac
}

# The exact dirty sectors of /dev/cache0 (writeback_rate_debug).
dirty_sectors() {
	local line
	line=$(grep '^dirty:' "$BATTR/writeback_rate_debug") ||
		fail "no dirty: line in writeback_rate_debug"
	line=${line#dirty:}
	line=${line%sectors}
	echo $((line))
}

stat_get() {
	cat "$BATTR/stats_total/$1"
}

state() {
	cat "$BATTR/state"
}

set_mode() {
	echo "$1" >"$BATTR/cache_mode" || fail "cannot set cache_mode $1"
	[[ $(cat "$BATTR/cache_mode") == *"[$1]"* ]] ||
		fail "cache_mode shows '$(cat "$BATTR/cache_mode")' after setting $1"
}

# show_md0: make-cache --show /dev/md0.  It reads through the page cache,
# which does not see the module's superblock writes: drop it first.
show_md0() {
	blockdev --flushbufs /dev/md0
	"${make_cache:?}" --show /dev/md0
}

# The state recorded in md0's superblock.
md0_sb_state() {
	show_md0 | sed -n 's/^state: *//p'
}

# data_offset of /dev/md0 in bytes, from its superblock.
data_offset() {
	local off
	off=$(show_md0 | sed -n 's/^data_offset: *//p')
	[[ $off =~ ^[0-9]+$ ]] || fail "no data_offset in make-cache --show /dev/md0"
	echo "$off"
}

# new_cache [make-cache options]: format $CACHE_DEV (default the SSD) and
# /dev/md0 and wait for /dev/cache0; sets BKC_SET.
new_cache() {
	local out
	out=$("${make_cache:?}" --wipe "$@" -C "${CACHE_DEV:-$BKC_SSD}" -B /dev/md0) ||
		fail "make-cache $* failed: $out"
	BKC_SET=$(sed -n 's/^Set UUID: *//p' <<<"$out")
	[ -n "$BKC_SET" ] || fail "make-cache printed no set uuid"
	wait_for /dev/cache0
}

# stop_all: stop /dev/cache0 and the cache set (both keep their data).
stop_all() {
	if [ -e /dev/cache0 ]; then
		echo 1 >"$BATTR/stop" || fail "stop of /dev/cache0 refused"
		wait_gone /dev/cache0 60
	fi
	if [ -n "$BKC_SET" ] && [ -e "/sys/fs/blkcache/$BKC_SET" ]; then
		echo 1 >"/sys/fs/blkcache/$BKC_SET/stop" || fail "stop of the set refused"
		wait_gone "/sys/fs/blkcache/$BKC_SET" 60
	fi
}

# register_all: register the cache device, then md0; wait for /dev/cache0.
register_all() {
	echo "${CACHE_DEV:-$BKC_SSD}" >/sys/fs/blkcache/register ||
		fail "registering ${CACHE_DEV:-$BKC_SSD} failed"
	echo /dev/md0 >/sys/fs/blkcache/register || fail "registering /dev/md0 failed"
	wait_for /dev/cache0 30
}

# reregister: stop everything and register it again (journal replay).
reregister() {
	stop_all
	register_all
	check_dmesg || fail "kernel complained during stop and re-registration"
}

# wait_clean SEC: writeback_percent=0, then wait until /dev/cache0 has no
# dirty data and says "clean".
wait_clean() {
	local t=$1 start=$SECONDS d
	echo 0 >"$BATTR/writeback_percent"
	echo 1 >"$BATTR/writeback_running"
	while :; do
		d=$(dirty_sectors)
		[ "$d" != 0 ] || [ "$(state)" != clean ] || break
		[ $((SECONDS - start)) -lt "$t" ] ||
			fail "still $d dirty sectors, state '$(state)', after ${t}s of writeback_percent=0"
		sleep 0.5
	done
	[ "$(cat "$BATTR/dirty_data")" = 0 ] ||
		fail "dirty_data says '$(cat "$BATTR/dirty_data")' with no dirty sectors"
	log "drained in $((SECONDS - start))s"
}

# region_sum DEV OFFSET_BYTES LEN_BYTES: sha256 of a region (1 MiB units).
region_sum() {
	local dev=$1 off=$2 len=$3
	if [ $((off % 1048576)) != 0 ] || [ $((len % 1048576)) != 0 ]; then
		fail "region_sum needs 1 MiB units ($off, $len)"
	fi
	dd if="$dev" bs=1M skip=$((off / 1048576)) count=$((len / 1048576)) \
		iflag=direct status=none | sha256sum | cut -d' ' -f1
}
