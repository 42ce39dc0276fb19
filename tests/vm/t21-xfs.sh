#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# boot: shared
#
# Issue 4, correctness: XFS on /dev/cache0 under a file workload.  In
# writeback mode: cp -a of a directory tree (/usr/include/linux from the
# host), fio over 2x24 files of random sizes with fsyncs and crc32c
# verify, and a few large random files; checksums of every file, compared
# after a remount and after stop and re-registration (with dirty data in
# the cache), then xfs_repair -n.  The same in writethrough mode on top
# (with renames and deletions of the first set), and once more after the
# dirty data has been written back and the devices registered again.
# shellcheck disable=SC2119  # make_raid5 takes no arguments here
. "$BKC_REPO/tests/vm/lib.sh"
. "$BKC_REPO/tests/vm/verify-lib.sh"

cd /tmp
MNT=/mnt/t
SUMS=/tmp/sums

mount_fs() {
	mount /dev/cache0 "$MNT" || fail "mount /dev/cache0 failed"
}

umount_fs() {
	umount "$MNT" || fail "umount failed"
}

# workload NAME: a tree copy, fio files and large files under $MNT/NAME.
workload() {
	local d=$MNT/$1 i start=$SECONDS
	mkdir -p "$d/fio"
	cp -a /usr/include/linux "$d/tree" || fail "cp -a failed"
	fio --output=/tmp/fio.out --eta=never --name="$1" --directory="$d/fio" \
		--nrfiles=24 --filesize=16k-2m --bsrange=4k-64k --rw=randwrite \
		--ioengine=psync --fsync=32 --numjobs=2 --verify=crc32c \
		--verify_fatal=1 --verify_state_save=0 --randrepeat=0 ||
		{ cat /tmp/fio.out; fail "fio on xfs failed"; }
	for i in 1 2 3; do
		head -c $((i * 5 * 1048576 + i * 4097)) /dev/urandom >"$d/big$i"
	done
	sync
	log "workload $1: $(find "$d" -type f | wc -l) files," \
		"$(du -sm "$d" | cut -f1) MiB in $((SECONDS - start))s"
}

save_sums() {
	(cd "$MNT" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$SUMS"
	log "$(wc -l <"$SUMS") checksums saved"
}

# check_sums WHEN: every file is there with its checksum, and no other.
check_sums() {
	local now
	now=$(cd "$MNT" && find . -type f | sort)
	[ "$now" = "$(awk '{ print $2 }' "$SUMS")" ] ||
		fail "the file list changed $1"
	(cd "$MNT" && sha256sum -c --quiet "$SUMS") ||
		fail "checksums differ $1"
	log "$(wc -l <"$SUMS") checksums match $1"
}

repair_check() {
	xfs_repair -n /dev/cache0 >/tmp/repair.out 2>&1 || {
		cat /tmp/repair.out
		fail "xfs_repair -n found problems $1"
	}
	log "xfs_repair -n clean $1"
}

# round MODE [dirty]: remount, re-register and repair checks of what is on
# the fs; with "dirty", the re-registration must find dirty data.
round() {
	save_sums
	umount_fs
	mount_fs
	check_sums "after a remount ($1)"
	umount_fs
	log "dirty before stop: $(cat "$BATTR/dirty_data"), state $(state)"
	reregister
	if [ "${2:-}" = dirty ] && [ "$(state)" != dirty ]; then
		fail "state $(state) after re-registration with dirty data"
	fi
	mount_fs
	check_sums "after stop and re-registration ($1)"
	umount_fs
	repair_check "($1)"
}

bkc_load
make_raid5
need_module xfs
new_cache --writeback
mkdir -p "$MNT"
on_exit "umount $MNT 2>/dev/null || true"
mkfs.xfs -q -f /dev/cache0 || fail "mkfs.xfs failed"

mount_fs
# Writeback paused: the stop and re-registration below find dirty data.
echo 0 >"$BATTR/writeback_running"
workload wb
[ "$(dirty_sectors)" -gt 0 ] || fail "no dirty data after the writeback workload"
round writeback dirty

set_mode writethrough
mount_fs
mv "$MNT/wb/tree" "$MNT/wb/tree-moved"
rm -rf "$MNT/wb/fio"
rm -f "$MNT/wb/big2"
workload wt
round writethrough

wait_clean 300
reregister
mount_fs
check_sums "after writeback and re-registration"
umount_fs
repair_check "after writeback"
stop_all
bkc_unload
