#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
#
# Issue 7, a dying cache device (design.md section 6), in one boot:
#   1. writethrough, writearound and writeback (clean): the dm table under
#      the cache device is swapped to "error" while fio verifies cached
#      data (and, but in writeback, writes new data): fio sees no error,
#      the set fails, /dev/cache0 goes on without a cache ("no cache", the
#      md0 superblock forgets the set), dmesg names both devices, new
#      writes read back, the set's stop writes nothing and returns;
#   2. the same with errors other than EIO: the cache device on scsi_debug
#      set "offline" (ENODEV), and scsi_debug deleted under I/O (hot
#      removal);
#   3. read errors with ENODATA (scsi_debug medium errors): every one is
#      counted in io_errors, reads still succeed from md0, and the set
#      fails only once the count passes io_error_limit;
#   4. writeback with dirty data: reads of the dirty ranges fail with EIO
#      (never md0's stale data), the set fails, /dev/cache0 stops,
#      lost_dirty lists exactly the dirty ranges, stop returns, running
#      starts /dev/cache0 again marked "inconsistent";
#   5. stop_when_cache_set_failed=always stops a clean device too.
# shellcheck disable=SC2119  # make_raid5 takes no arguments here
. "$BKC_REPO/tests/vm/lib.sh"
. "$BKC_REPO/tests/vm/verify-lib.sh"

cd /tmp
DM=bkcssd

bkc_load
make_raid5
need_module dm_mod

# bg_verify NAME OFF SIZE SEED: verify a region in a loop until /tmp/stop
# exists; the status file says whether every pass verified.
bg_verify() {
	local name=$1
	(
		rc=0
		while [ ! -e /tmp/stop ]; do
			if ! fio_job "$@" --rw=randwrite --verify_only >/dev/null; then
				rc=1
				break
			fi
		done
		echo "$rc" >"/tmp/bg-$name.rc"
	) &
}

# bg_write NAME OFF SIZE SEED: write and verify a region in a loop.
bg_write() {
	local name=$1
	(
		rc=0
		while [ ! -e /tmp/stop ]; do
			if ! fio_job "$@" --rw=randwrite >/dev/null; then
				rc=1
				break
			fi
		done
		echo "$rc" >"/tmp/bg-$name.rc"
	) &
}

bg_collect() {
	local name
	touch /tmp/stop
	wait
	rm -f /tmp/stop
	for name in "$@"; do
		[ "$(cat "/tmp/bg-$name.rc" 2>/dev/null)" = 0 ] || {
			cat "/tmp/fio-$name.out" 2>/dev/null
			fail "fio $name saw an error while the cache device died"
		}
	done
}

# after_failure KNAME: the checks once the set failed on a clean device
# (KNAME: the kernel name of the cache device, e.g. dm-0).
after_failure() {
	local dev=$1
	wait_state "no cache" 30
	[ -e /dev/cache0 ] || fail "/dev/cache0 went away"
	[ "$(md0_sb set_uuid)" = 00000000-0000-0000-0000-000000000000 ] ||
		fail "md0's superblock still names set $(md0_sb set_uuid)"
	[ "$(md0_sb state)" = "no cache" ] || fail "md0's superblock says '$(md0_sb state)'"
	dmesg_has "blkcache: md0: cache set $BKC_SET on ${dev##*/} failed: cache0 runs without a cache" ||
		fail "no dmesg line naming md0 and ${dev##*/}"
	[ "$(cat "$(set_attr io_errors)")" -gt 0 ] || fail "io_errors is 0"
	# new data reads back, old data still verifies
	fill_region new 200 4 77
	check_region a 0 8 11
	# the failed set stops without writing to its device
	echo 1 >"$(set_attr stop)" || fail "stop of the failed set refused"
	wait_gone "/sys/fs/blkcache/$BKC_SET" 30
	check_region new 200 4 77
	echo 1 >"$BATTR/stop" || fail "stop of /dev/cache0 refused"
	wait_gone /dev/cache0 30
	check_dmesg || fail "kernel complained"
}

# -- 1. dm error under a clean device, each mode ---------------------------
for mode in writethrough writearound writeback; do
	log "== $mode: the cache device fails with EIO"
	CACHE_DEV=$(dm_linear "$DM" "$BKC_SSD")
	new_cache "--$mode"
	fill_region a 0 8 11
	fill_region b 64 8 22
	case $mode in
	writearound) check_region a 0 8 11; sleep 2 ;;	# promoted
	writeback) wait_clean 120 ;;
	esac
	# warm the cache with the data: reads of a hit the cache
	check_region a 0 8 11
	hits=$(stat_get cache_hits)
	[ "$hits" -gt 0 ] || fail "$mode: no cache hits before the failure"
	bg_verify a 0 8 11
	[ "$mode" = writeback ] || bg_write b 64 8 22
	sleep 2
	dm_error "$DM"
	sleep 5
	if [ "$mode" = writeback ]; then
		bg_collect a
	else
		bg_collect a b
	fi
	after_failure "$(lsblk -dno KNAME "$CACHE_DEV")"
	dm_remove "$DM"
	log "$mode: survived the cache device's death"
done

# -- 2. errors other than EIO: offline (ENODEV) and hot removal ------------
need_module sd_mod
sd_dev() {
	local d last=
	for d in /sys/bus/pseudo/drivers/scsi_debug/adapter*/host*/target*/*/block/*; do
		[ -e "$d" ] && last=/dev/${d##*/}
	done
	echo "$last"
}
modprobe -r scsi_debug 2>/dev/null || true
one_cpu modprobe scsi_debug dev_size_mb=400 max_luns=1 num_tgts=1 ||
	fail "modprobe scsi_debug failed"
# sd_wait: the newest scsi_debug disk, once its /dev node exists
sd_wait() {
	local i
	for ((i = 0; i < 100; i++)); do
		SD=$(sd_dev)
		[ -n "$SD" ] && [ -b "$SD" ] && return 0
		sleep 0.1
	done
	fail "no scsi_debug disk appeared"
}
sd_wait
SDN=${SD##*/}
for how in offline delete; do
	log "== writethrough on scsi_debug $SD: $how"
	CACHE_DEV=$SD
	new_cache --writethrough
	fill_region a 0 8 11
	check_region a 0 8 11
	bg_verify a 0 8 11
	bg_write b 64 8 22
	sleep 2
	if [ "$how" = offline ]; then
		echo offline >"/sys/block/$SDN/device/state"
	else
		echo 1 >"/sys/block/$SDN/device/delete"
	fi
	sleep 5
	bg_collect a b
	dmesg | grep "blkcache: .*cache set $BKC_SET failed" | tail -n1
	after_failure "$SDN"
	[ "$how" = offline ] && echo running >"/sys/block/$SDN/device/state"
done
wait_gone "$SD" 10

# -- 2b. ENOSPC: a thin device whose pool runs full -------------------------
log "== writethrough on a thin device whose pool fills up (ENOSPC)"
need_module dm_thin_pool
dmsetup create bkcmeta --table "0 32768 linear $BKC_SSD 0"
dmsetup create bkcdata --table "0 131072 linear $BKC_SSD 32768"
wait_for /dev/mapper/bkcdata
dd if=/dev/zero of=/dev/mapper/bkcmeta bs=4k count=1 oflag=direct status=none
# 64 MiB of real space under 1 GiB: writes past it fail with ENOSPC.  The
# boot's first thin-pool table switches a static key of dm-mod: one_cpu.
one_cpu dmsetup create bkcpool --table "0 131072 thin-pool /dev/mapper/bkcmeta /dev/mapper/bkcdata 128 0 2 skip_block_zeroing error_if_no_space" ||
	fail "cannot create the thin pool"
wait_for /dev/mapper/bkcpool
dmsetup message bkcpool 0 "create_thin 0"
dmsetup create bkcthin --table "0 2097152 thin /dev/mapper/bkcpool 0"
wait_for /dev/mapper/bkcthin
CACHE_DEV=/dev/mapper/bkcthin
new_cache --writethrough
fill_region a 0 8 11
check_region a 0 8 11
bg_verify a 0 8 11
# new data fills the cache, then the pool: every later cache write fails
bg_write b 300 200 22 --bs=128k
for _ in $(seq 1 150); do
	[ "$(cat /sys/block/md0/cache/state)" = "no cache" ] && break
	sleep 1
done
bg_collect a b
dmesg | grep "blkcache: .*cache set $BKC_SET failed" | tail -n1
dmesg_has "cache set $BKC_SET failed: .*(-28)" ||
	fail "the thin device's failure did not report ENOSPC"
after_failure "$(lsblk -dno KNAME "$CACHE_DEV")"
for d in bkcthin bkcpool bkcdata bkcmeta; do
	dm_remove "$d"
done

# -- 3. ENODATA read errors: counted, retried from md0, limit --------------
echo 1 >/sys/bus/pseudo/drivers/scsi_debug/add_host
sd_wait
CACHE_DEV=$SD
log "== medium errors on $SD"
new_cache --writethrough
fill_region a 0 16 11
check_region a 0 16 11
echo 100000 >"$(set_attr io_error_limit)"
e0=$(cat "$(set_attr io_errors)")
# every read of the scsi_debug device now fails with a medium error
blockdev --getsz "$SD" >/sys/module/scsi_debug/parameters/medium_error_count
echo 0 >/sys/module/scsi_debug/parameters/medium_error_start
echo 2 >/sys/bus/pseudo/drivers/scsi_debug/opts
# one error first: the SCSI layer's lines for a thousand of them would
# push this one out of the kernel log before it is looked at
dd if=/dev/cache0 of=/dev/null bs=16k count=1 iflag=direct status=none ||
	fail "a read of a clean hit failed with a medium error on the cache"
dmesg_has "cache device data read error (-61)" ||
	fail "no dmesg line for an ENODATA read error"
check_region a 0 16 11
e1=$(cat "$(set_attr io_errors)")
log "io_errors $e0 -> $e1 after reading 16 MiB of clean hits"
[ "$e1" -ge $((e0 + 64)) ] || fail "medium errors counted $((e1 - e0)) times, expected at least 64"
[ "$(state)" = clean ] || fail "the set failed below io_error_limit (state $(state))"
echo 8 >"$(set_attr io_error_limit)"
check_region a 0 16 11
wait_state "no cache" 30
dmesg_has "cache set $BKC_SET failed: too many cache device I/O errors (-61)" ||
	fail "the set did not fail for passing io_error_limit"
echo 0 >/sys/bus/pseudo/drivers/scsi_debug/opts
echo 1 >"$(set_attr stop)"
wait_gone "/sys/fs/blkcache/$BKC_SET" 30
echo 1 >"$BATTR/stop"
wait_gone /dev/cache0 30

# -- 4. writeback with dirty data ------------------------------------------
log "== writeback with dirty data: the cache device fails"
CACHE_DEV=$(dm_linear "$DM" "$BKC_SSD")
new_cache --writeback
fill_region a 0 32 11
wait_clean 120
echo 0 >"$BATTR/writeback_running"
head -c 1M /dev/urandom >/tmp/dirty
dd if=/tmp/dirty of=/dev/cache0 bs=64k seek=16 count=1 oflag=direct status=none
dd if=/tmp/dirty of=/dev/cache0 bs=4k skip=16 seek=2048 count=1 oflag=direct status=none
dd if=/tmp/dirty of=/dev/cache0 bs=4k skip=17 seek=2049 count=1 oflag=direct status=none
dd if=/tmp/dirty of=/dev/cache0 bs=4k skip=18 seek=5123 count=1 oflag=direct status=none
[ "$(dirty_sectors)" = $((76 * 2)) ] || fail "dirty sectors $(dirty_sectors), expected 152"
[ "$(state)" = dirty ] || fail "state '$(state)' with dirty data"
printf '%s\n' "1048576 65536" "8388608 8192" "20983808 4096" >/tmp/lost.want
exec 3</dev/cache0
dmk=$(lsblk -dno KNAME "$CACHE_DEV")
# below the limit first: reads fail only where the data is dirty
echo 100000 >"$(set_attr io_error_limit)"
dm_error "$DM"
# a dirty range: EIO, never md0's stale data
if dd if=/dev/cache0 of=/tmp/got bs=64k skip=16 count=1 iflag=direct status=none 2>/tmp/dd.err; then
	fail "a read of dirty data succeeded after the cache device died"
fi
grep -q "Input/output error" /tmp/dd.err || fail "the read failed with '$(cat /tmp/dd.err)', not EIO"
# clean data is read from md0
dd if=/dev/cache0 of=/tmp/clean bs=1M skip=24 count=4 iflag=direct status=none ||
	fail "a read of clean data failed after the cache device died"
[ -e /dev/cache0 ] || fail "/dev/cache0 stopped below io_error_limit"
# more errors: the set fails (io_error_limit 8) and /dev/cache0 stops
echo 8 >"$(set_attr io_error_limit)"
for _ in $(seq 1 20); do
	[ -e /dev/cache0 ] || break
	dd if=/dev/cache0 of=/dev/null bs=4k skip=2048 count=1 iflag=direct status=none 2>/dev/null &&
		fail "a read of dirty data succeeded"
	sleep 0.2
done
wait_gone /dev/cache0 30
# the open descriptor now fails too
if dd if=/dev/fd/3 of=/dev/null bs=4k skip=5123 count=1 iflag=direct status=none 2>/dev/null; then
	fail "a read through a descriptor opened before the failure succeeded"
fi
exec 3<&-
[ "$(cat /sys/block/md0/cache/state)" = dirty ] ||
	fail "state '$(cat /sys/block/md0/cache/state)' after losing dirty data"
cat /sys/block/md0/cache/lost_dirty >/tmp/lost.got
diff /tmp/lost.want /tmp/lost.got >&2 || fail "lost_dirty is not the dirty ranges"
dmesg_has "blkcache: md0: cache set $BKC_SET on $dmk failed holding 77824 bytes of dirty data of cache0: cache0 stopped" ||
	fail "no dmesg line about the lost dirty data"
dmesg_has "blkcache: md0: lost dirty data of cache0: bytes 8388608-8396799 (8192 bytes)" ||
	fail "dmesg does not list the lost ranges"
timeout 30 sh -c "echo 1 >$(set_attr stop)" || fail "stop of the failed set did not return"
wait_gone "/sys/fs/blkcache/$BKC_SET" 30
echo 1 >/sys/block/md0/cache/running || fail "running refused"
wait_for /dev/cache0 10
[ "$(state)" = inconsistent ] || fail "state '$(state)' after running"
[ "$(md0_sb state)" = inconsistent ] || fail "md0's superblock says '$(md0_sb state)' after running"
cmp /tmp/clean <(dd if=/dev/cache0 bs=1M skip=24 count=4 iflag=direct status=none) ||
	fail "clean data differs after running"
diff /tmp/lost.want /sys/block/md0/cache/lost_dirty >&2 || fail "lost_dirty changed after running"
dmesg_has "blkcache: md0: started without cache set $BKC_SET on request: marked inconsistent, the dirty data it held is lost" ||
	fail "no dmesg line for running"
echo 1 >"$BATTR/stop"
wait_gone /dev/cache0 30
dm_remove "$DM"

# -- 5. stop_when_cache_set_failed=always ----------------------------------
log "== stop_when_cache_set_failed=always, clean"
CACHE_DEV=$(dm_linear "$DM" "$BKC_SSD")
new_cache --writethrough
[[ $(cat "$BATTR/stop_when_cache_set_failed") == "[auto] always" ]] ||
	fail "stop_when_cache_set_failed shows '$(cat "$BATTR/stop_when_cache_set_failed")'"
echo always >"$BATTR/stop_when_cache_set_failed"
fill_region a 0 4 11
dm_error "$DM"
# a write's invalidation needs a journal commit, which fails the set
fio_job x 0 4 12 --rw=randwrite --do_verify=0 >/dev/null 2>&1 || true
wait_gone /dev/cache0 30
dmesg_has "stop_when_cache_set_failed is always" || fail "no dmesg line for always"
echo 1 >"$(set_attr stop)"
wait_gone "/sys/fs/blkcache/$BKC_SET" 30
echo 1 >/sys/block/md0/cache/stop
dm_remove "$DM"

bkc_unload
log "a dying cache device never took clean data offline"
