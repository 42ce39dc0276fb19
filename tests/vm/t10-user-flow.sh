#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# boot: shared
#
# Issue 2, test a: the user flow.  RAID5 over the HDDs, make-cache -C ssd
# -B md0, /dev/cache0 appears attached; XFS with checksummed files; stop,
# unregister, register both again (backing first, so it must wait for its
# set), mount, checksums still match; the module unloads cleanly.
. "$BKC_REPO/tests/vm/lib.sh"

bkc_load
# shellcheck disable=SC2119  # the default chunk
make_raid5
need_module xfs

out=$("$make_cache" -C "$BKC_SSD" -B /dev/md0) || fail "make-cache failed: $out"
echo "$out"
set_uuid=$(sed -n 's/^Set UUID: *//p' <<<"$out")
[ -n "$set_uuid" ] || fail "make-cache printed no set uuid"
grep -q '/dev/cache0' <<<"$out" || fail "make-cache did not name /dev/cache0"
wait_for /dev/cache0
[ -d "/sys/fs/blkcache/$set_uuid" ] || fail "no /sys/fs/blkcache/$set_uuid"

attr=/sys/block/cache0/cache
[ "$(cat $attr/state)" = clean ] || fail "state is '$(cat $attr/state)', not clean"
[ "$(cat $attr/backing_dev_name)" = md0 ] || fail "backing_dev_name"
[ "$(cat $attr/cache_mode)" = "[writethrough] writeback writearound none" ] ||
	fail "cache_mode shows '$(cat $attr/cache_mode)'"

# Size: md0 minus the data offset, which keeps the RAID stripe alignment.
md_bytes=$(dev_bytes /dev/md0)
c_bytes=$(dev_bytes /dev/cache0)
io_opt=$(cat /sys/block/md0/queue/optimal_io_size)
off=$((md_bytes - c_bytes))
log "md0 $md_bytes bytes, cache0 $c_bytes bytes, data_offset $off, io_opt $io_opt"
[ "$off" -ge 1048576 ] || fail "data offset $off below 1 MiB"
[ "$io_opt" = 0 ] || [ $((off % io_opt)) = 0 ] ||
	fail "data offset $off is not a multiple of io_opt $io_opt"
[ "$(cat /sys/block/cache0/queue/optimal_io_size)" = "$io_opt" ] ||
	fail "cache0 does not advertise md0's io_opt"
"$make_cache" --show /dev/md0 | grep "^data_offset: *$off\$" >/dev/null ||
	fail "superblock data_offset is not $off"

mkfs.xfs -q -f /dev/cache0 || fail "mkfs.xfs failed"
mkdir -p /mnt/t
mount /dev/cache0 /mnt/t
on_exit "umount /mnt/t 2>/dev/null || true"
for i in 1 2 3 4 5 6 7 8; do
	head -c $((i * 1531 * 1024)) /dev/urandom >"/mnt/t/file$i"
done
cp -r /mnt/t /tmp/orig
(cd /mnt/t && sha256sum file*) >/tmp/sums
umount /mnt/t

echo 1 >$attr/stop
wait_gone /dev/cache0
echo 1 >"/sys/fs/blkcache/$set_uuid/unregister"
wait_gone "/sys/fs/blkcache/$set_uuid"

# The backing device first: it must wait for its cache set.
echo /dev/md0 >/sys/fs/blkcache/register
sleep 0.5
[ ! -e /dev/cache0 ] || fail "/dev/cache0 ran before its cache set came back"
[ "$(cat /sys/block/md0/cache/state)" = clean ] ||
	fail "waiting backing device state '$(cat /sys/block/md0/cache/state)'"
echo "$BKC_SSD" >/sys/fs/blkcache/register
wait_for /dev/cache0
[ "$(cat $attr/state)" = clean ] || fail "not attached after re-registration"

mount /dev/cache0 /mnt/t
(cd /mnt/t && sha256sum -c --quiet /tmp/sums) || fail "checksums differ after re-registration"
umount /mnt/t

# The other order, and register_quiet on everything (already registered or
# foreign devices are not errors).
echo 1 >"/sys/fs/blkcache/$set_uuid/stop"
wait_gone /dev/cache0
wait_gone "/sys/fs/blkcache/$set_uuid"
echo "$BKC_SSD" >/sys/fs/blkcache/register_quiet
echo /dev/md0 >/sys/fs/blkcache/register_quiet
for d in $BKC_SSD /dev/md0 $BKC_SCRATCH; do
	echo "$d" >/sys/fs/blkcache/register_quiet || fail "register_quiet $d failed"
done
wait_for /dev/cache0
mount /dev/cache0 /mnt/t
(cd /mnt/t && sha256sum -c --quiet /tmp/sums) || fail "checksums differ (cache first)"
umount /mnt/t

echo 1 >$attr/stop
wait_gone /dev/cache0
echo 1 >"/sys/fs/blkcache/$set_uuid/unregister"
wait_gone "/sys/fs/blkcache/$set_uuid"
bkc_unload
log "user flow OK"
