#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# boot: shared
#
# Issue 2, test b: attach by hand.  Format the backing and the cache
# devices separately, register both, echo the set uuid into attach.  The
# state changes, the superblock records it, and the attachment survives
# re-registration in either order.  Detach survives it too.
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
bkc_unload
