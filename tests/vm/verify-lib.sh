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

# stat_grows STAT N WHAT: waits (10 s at most) until the stats_total
# counter STAT is more than N above what it reads now; fails with WHAT
# if it does not get there.
stat_grows() {
	local base i
	base=$(stat_get "$1")
	for ((i = 0; i < 100; i++)); do
		[ "$(stat_get "$1")" -gt $((base + $2)) ] && return 0
		sleep 0.1
	done
	fail "$3"
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
# md0 is released too when its set failed with dirty data (it then stays
# registered without /dev/cache0, for `running`).
stop_all() {
	if [ -e /dev/cache0 ]; then
		echo 1 >"$BATTR/stop" || fail "stop of /dev/cache0 refused"
		wait_gone /dev/cache0 60
	elif [ -e /sys/block/md0/cache/stop ]; then
		echo 1 >/sys/block/md0/cache/stop || fail "stop of md0 refused"
		wait_gone /sys/block/md0/cache 60
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

# ---- issue 7: failing devices -------------------------------------------

# shellcheck disable=SC2034  # for the tests
POISON_IO=$BKC_REPO/tests/vm/poison-io

# set_attr NAME: path of an attribute of the cache set $BKC_SET.
set_attr() {
	echo "/sys/fs/blkcache/${BKC_SET:?}/$1"
}

# md0_sb FIELD: a field of md0's superblock (make-cache --show).
md0_sb() {
	show_md0 | sed -n "s/^$1: *//p"
}

# dm_linear NAME DEV: a device-mapper linear device over all of DEV, so
# that its table can later be swapped for "error"; prints its path.
dm_linear() {
	local name=$1 dev=$2 sz
	need_module dm_mod
	sz=$(blockdev --getsz "$dev")
	dmsetup create "$name" --table "0 $sz linear $dev 0" ||
		fail "dmsetup create $name failed"
	wait_for "/dev/mapper/$name"
	echo "/dev/mapper/$name"
}

# dm_error NAME: from now on every I/O to NAME fails (EIO).
dm_error() {
	local name=$1 sz
	sz=$(blockdev --getsz "/dev/mapper/$name")
	dmsetup suspend --noflush "$name" || fail "dmsetup suspend $name failed"
	dmsetup load "$name" --table "0 $sz error" || fail "dmsetup load $name failed"
	dmsetup resume "$name" || fail "dmsetup resume $name failed"
	log "$name now fails every I/O"
}

dm_remove() {
	[ -e "/dev/mapper/$1" ] || return 0
	dmsetup remove "$1" || fail "dmsetup remove $1 failed"
}

# wait_state STATE [SEC]: wait until md0's cache/state reads STATE.
wait_state() {
	local want=$1 t=${2:-30} i st=
	for ((i = 0; i < t * 10; i++)); do
		st=$(cat /sys/block/md0/cache/state 2>/dev/null || true)
		[ "$st" = "$want" ] && return 0
		sleep 0.1
	done
	fail "state is '$st', not '$want', after ${t}s"
}

# fio_job NAME OFFSET_MB SIZE_MB SEED [fio options]: 16k random I/O with a
# crc32c pattern on /dev/cache0 (region and seed make the pattern).
fio_job() {
	local name=$1 off=$2 size=$3 seed=$4
	shift 4
	fio --output="/tmp/fio-$name.out" --eta=never --name="$name" \
		--filename=/dev/cache0 --direct=1 --ioengine=libaio --iodepth=8 \
		--bs=16k --offset="${off}m" --size="${size}m" --randrepeat=1 \
		--randseed="$seed" --verify=crc32c --verify_fatal=1 \
		--verify_state_save=0 "$@"
}

# fill_region NAME OFF SIZE SEED: write the pattern (and read it back).
fill_region() {
	fio_job "$1" "$2" "$3" "$4" --rw=randwrite ||
		{ cat "/tmp/fio-$1.out"; fail "writing region $1 failed"; }
}

# check_region NAME OFF SIZE SEED: read the region and verify the pattern.
check_region() {
	fio_job "$1" "$2" "$3" "$4" --rw=randwrite --verify_only ||
		{ cat "/tmp/fio-$1.out"; fail "region $1 does not verify"; }
}
