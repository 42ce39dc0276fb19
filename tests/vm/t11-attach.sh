#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# boot: shared
#
# Issue 2, test b: attach by hand.  Format the backing and the cache
# devices separately, register both, echo the set uuid into attach.  The
# state changes, the superblock records it, and the attachment survives
# re-registration in either order.  Detach survives it too, and a detach
# whose superblock write fails stays pending until it succeeds.
. "$BKC_REPO/tests/vm/lib.sh"

bkc_load
# shellcheck disable=SC2119  # the default chunk
make_raid5
attr=/sys/block/cache0/cache

"$make_cache" -B /dev/md0 || fail "make-cache -B failed"
wait_for /dev/cache0
[ "$(cat $attr/state)" = "no cache" ] || fail "fresh backing state '$(cat $attr/state)'"

out=$("$make_cache" -C "$BKC_SSD") || fail "make-cache -C failed: $out"
set_uuid=$(sed -n 's/^Set UUID: *//p' <<<"$out")
[ -d "/sys/fs/blkcache/$set_uuid" ] || fail "cache set $set_uuid not registered"
[ "$(cat $attr/state)" = "no cache" ] || fail "attached without being asked"

# Wrong uuids change nothing.
must_fail sh -c "echo 00000000-0000-0000-0000-000000000001 >$attr/attach"
must_fail sh -c "echo not-a-uuid >$attr/attach"
[ "$(cat $attr/state)" = "no cache" ] || fail "a failed attach changed the state"

echo "$set_uuid" >$attr/attach
[ "$(cat $attr/state)" = clean ] || fail "state after attach '$(cat $attr/state)'"
"$make_cache" --show /dev/md0 | grep "^set_uuid: *$set_uuid" >/dev/null ||
	fail "attach not recorded in the backing superblock"
"$make_cache" --show /dev/md0 | grep "^state: *clean" >/dev/null ||
	fail "superblock state not clean"
echo "$set_uuid" >$attr/attach || fail "attaching again to the same set should succeed"

# Some data to see across the re-registrations.
head -c 8M /dev/urandom >/tmp/data
dd if=/tmp/data of=/dev/cache0 bs=1M oflag=direct status=none
sum=$(sha256sum </tmp/data)

reregister() {
	# $1: which device to register first
	echo 1 >"/sys/fs/blkcache/$set_uuid/stop"
	wait_gone /dev/cache0
	wait_gone "/sys/fs/blkcache/$set_uuid"
	if [ "$1" = backing ]; then
		echo /dev/md0 >/sys/fs/blkcache/register
		echo "$BKC_SSD" >/sys/fs/blkcache/register
	else
		echo "$BKC_SSD" >/sys/fs/blkcache/register
		echo /dev/md0 >/sys/fs/blkcache/register
	fi
	wait_for /dev/cache0
}

for first in backing cache; do
	reregister $first
	[ "$(cat $attr/state)" = clean ] ||
		fail "attachment lost after re-registration ($first first)"
	[ "$(head -c 8M /dev/cache0 | sha256sum)" = "$sum" ] ||
		fail "data differs after re-registration ($first first)"
done

# Detach: recorded on disk, survives re-registration.
echo 1 >$attr/detach
[ "$(cat $attr/state)" = "no cache" ] || fail "state after detach '$(cat $attr/state)'"
"$make_cache" --show /dev/md0 | grep "^state: *no cache" >/dev/null ||
	fail "detach not recorded in the backing superblock"
echo 1 >$attr/detach || fail "detaching a detached device should succeed"
echo 1 >$attr/stop
wait_gone /dev/cache0
echo /dev/md0 >/sys/fs/blkcache/register
wait_for /dev/cache0
[ "$(cat $attr/state)" = "no cache" ] || fail "detached device came back attached"
[ "$(head -c 8M /dev/cache0 | sha256sum)" = "$sum" ] || fail "data differs after detach"

# unregister of a set detaches its devices, which keep running.
echo "$set_uuid" >$attr/attach
echo 1 >"/sys/fs/blkcache/$set_uuid/unregister"
wait_gone "/sys/fs/blkcache/$set_uuid"
[ -e /dev/cache0 ] || fail "unregister stopped the backing device"
[ "$(cat $attr/state)" = "no cache" ] || fail "state after unregister '$(cat $attr/state)'"

# Labels and cache modes are recorded too.
echo my-label >$attr/label
echo writeback >$attr/cache_mode
echo 1 >$attr/stop
wait_gone /dev/cache0
echo /dev/md0 >/sys/fs/blkcache/register
wait_for /dev/cache0
[ "$(cat $attr/label)" = my-label ] || fail "label not kept"
[ "$(cat $attr/cache_mode)" = "writethrough [writeback] writearound none" ] ||
	fail "cache mode not kept: $(cat $attr/cache_mode)"
echo 1 >$attr/stop
wait_gone /dev/cache0

# A detach whose backing superblock write fails returns the error and
# stays pending: once the cache's slot is cleaning, writes (in writeback
# mode) must not go dirty.  It is retried after 1 s, then 2 s, 4 s...,
# and completes once the superblock can be written.  The backing device
# is md0 under dm-linear; sectors 8-15 (its superblock) are swapped to
# dm-error for the detach.
need_module dm_mod
size=$(blockdev --getsz /dev/md0)
dmsetup create bkcbk --table "0 $size linear /dev/md0 0"
dm=dm-$(dmsetup info -c --noheadings -o minor bkcbk | tr -d " ")
# on failure: the machine's reset stops md0, which bkcbk holds
bk_cleanup() {
	[ -e /dev/mapper/bkcbk ] || return 0
	dmsetup resume bkcbk 2>/dev/null
	{ echo 1 >$attr/stop; } 2>/dev/null
	sleep 1
	dmsetup remove bkcbk
}
on_exit bk_cleanup
bk_table() {
	dmsetup suspend bkcbk
	dmsetup load bkcbk
	dmsetup resume bkcbk
}
bk_error() {
	printf '0 8 linear /dev/md0 0\n8 8 error\n16 %s linear /dev/md0 16\n' \
		$((size - 16)) | bk_table
}
bk_wait_detached() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(cat $attr/state)" = "no cache" ] && return 0
		sleep 0.1
	done
	fail "the failed $1 did not complete: state '$(cat $attr/state)'"
}
echo /dev/mapper/bkcbk >/sys/fs/blkcache/register
wait_for /dev/cache0
echo "$BKC_SSD" >/sys/fs/blkcache/register
wait_for "/sys/fs/blkcache/$set_uuid"
echo "$set_uuid" >$attr/attach
[ "$(cat $attr/state)" = clean ] || fail "state after attach '$(cat $attr/state)'"
[ "$(cat $attr/detach)" = 0 ] || fail "detach reads '$(cat $attr/detach)' with none pending"
bk_error
must_fail sh -c "echo 1 >$attr/detach"
[ "$(cat $attr/detach)" = 1 ] || fail "detach reads '$(cat $attr/detach)' while pending"
head -c 256K /dev/urandom >/tmp/data2
dd if=/tmp/data2 of=/dev/cache0 bs=4k seek=4096 oflag=direct conv=notrunc \
	status=none
[ "$(cat $attr/dirty_data)" = 0 ] ||
	fail "writes went dirty after a failed detach: $(cat $attr/dirty_data)"
[ "$(cat $attr/state)" = clean ] || fail "state of a pending detach '$(cat $attr/state)'"
dmesg_has "$dm: detach failed (-5): retrying in 1 s" ||
	fail "no log line for the failed detach"
# attempts at 0, 1 and 3 s: retried, and backing off
sleep 3.5
for d in 1 2; do
	n=$(dmesg | grep -c "$dm: detach failed (-5): retrying in $d s" || true)
	[ "$n" = 1 ] || fail "$n attempts logged 'retrying in $d s' (expected 1)"
done
echo "0 $size linear /dev/md0 0" | bk_table
# still pending (the next attempt at 7 s), with a superblock that can be
# written: writes must not go dirty either
[ "$(cat $attr/state)" = clean ] || fail "state of a pending detach '$(cat $attr/state)'"
head -c 256K /dev/urandom >/tmp/data3
dd if=/tmp/data3 of=/dev/cache0 bs=4k seek=8192 oflag=direct conv=notrunc \
	status=none
[ "$(cat $attr/dirty_data)" = 0 ] ||
	fail "writes went dirty after a failed detach: $(cat $attr/dirty_data)"
bk_wait_detached detach
[ "$(cat $attr/detach)" = 0 ] || fail "detach reads '$(cat $attr/detach)' once done"
blockdev --flushbufs /dev/mapper/bkcbk
"$make_cache" --show /dev/mapper/bkcbk | grep "^state: *no cache" >/dev/null ||
	fail "the retried detach not recorded in the backing superblock"

# unregister whose detach fails: refused, the set and the device stay, and
# the detach completes on its own once it can.
echo "$set_uuid" >$attr/attach
bk_error
must_fail sh -c "echo 1 >/sys/fs/blkcache/$set_uuid/unregister"
dmesg_has "cannot unregister: the detach of $dm failed (-5); it stays pending" ||
	fail "no log line for the failed unregister"
[ -d "/sys/fs/blkcache/$set_uuid" ] || fail "a failed unregister released the set"
[ -e /dev/cache0 ] || fail "a failed unregister stopped /dev/cache0"
echo "0 $size linear /dev/md0 0" | bk_table
bk_wait_detached unregister
echo 1 >"/sys/fs/blkcache/$set_uuid/unregister"
wait_gone "/sys/fs/blkcache/$set_uuid"
echo 1 >$attr/stop
wait_gone /dev/cache0
dmsetup remove bkcbk
echo /dev/md0 >/sys/fs/blkcache/register
wait_for /dev/cache0
[ "$(head -c 8M /dev/cache0 | sha256sum)" = "$sum" ] ||
	fail "data differs after the retried detach"
[ "$(dd if=/dev/cache0 bs=4k skip=4096 count=64 status=none | sha256sum)" = \
	"$(sha256sum </tmp/data2)" ] || fail "data written during the detach lost"
[ "$(dd if=/dev/cache0 bs=4k skip=8192 count=64 status=none | sha256sum)" = \
	"$(sha256sum </tmp/data3)" ] || fail "data written during the detach lost"
echo 1 >$attr/stop
wait_gone /dev/cache0
bkc_unload
