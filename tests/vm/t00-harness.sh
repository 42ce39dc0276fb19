#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# boot: shared
#
# t00-harness: checks the VM test harness itself: the disks and their
# throttling, the guest environment, md RAID5 + xfs, fio, ioping, dmsetup,
# and loading/unloading blkcache.ko.
. "$BKC_REPO/tests/vm/lib.sh"

MIB=$((1024 * 1024))

check_env() {
	local v
	for v in BKC_HDDS BKC_SSD BKC_SCRATCH BKC_REPO BKC_RESULTS BKC_KVER; do
		[ -n "${!v:-}" ] || fail "\$$v is not set"
	done
	[ "$(uname -r)" = "$BKC_KVER" ] || fail "running $(uname -r), BKC_KVER=$BKC_KVER"
	[ -f "$BKC_REPO/Makefile" ] || fail "repo not visible at $BKC_REPO"
	touch "$BKC_RESULTS/t00-probe" || fail "\$BKC_RESULTS is not writable"
	rm "$BKC_RESULTS/t00-probe"
	touch /tmp/probe /var/tmp/probe /run/probe || fail "tmpfs dirs not writable"
	[ "$(cat <(echo procsub))" = procsub ] || fail "process substitution broken"
	[ -e /dev/fd/0 ] || fail "/dev/fd missing"
	[ -d /sys/kernel/debug/block ] || fail "debugfs not mounted"
	log "environment ok: $(nproc) CPUs, $(($(getconf _PHYS_PAGES) * $(getconf PAGE_SIZE) / MIB)) MiB"
}

# check_disk DEV SERIAL MIB
check_disk() {
	local dev=$1 serial=$2 mib=$3 name got
	[ -b "$dev" ] || fail "$dev is not a block device"
	name=${dev#/dev/}
	got=$(cat "/sys/block/$name/serial")
	[ "$got" = "$serial" ] || fail "$dev has serial '$got', expected $serial"
	got=$(($(dev_bytes "$dev") / MIB))
	[ "$got" = "$mib" ] || fail "$dev is $got MiB, expected $mib"
}

check_disks() {
	local hdds scratch i
	read -r -a hdds <<<"$BKC_HDDS"
	read -r -a scratch <<<"$BKC_SCRATCH"
	[ "${#hdds[@]}" = 3 ] || fail "BKC_HDDS='$BKC_HDDS'"
	[ "${#scratch[@]}" = 2 ] || fail "BKC_SCRATCH='$BKC_SCRATCH'"
	for i in 0 1 2; do
		check_disk "${hdds[i]}" "hdd$i" 1024
	done
	check_disk "$BKC_SSD" ssd0 2048
	check_disk "${scratch[0]}" scratch0 512
	check_disk "${scratch[1]}" scratch1 512
	log "disks ok: HDDs $BKC_HDDS, SSD $BKC_SSD, scratch $BKC_SCRATCH"
}

# fio_iops DEV RW SECONDS: 4k QD8 IOPS of a short fio job on DEV.
fio_iops() {
	fio --name=probe --filename="$1" --rw="$2" --bs=4k --iodepth=8 \
		--ioengine=libaio --direct=1 --runtime="$3" --time_based \
		--size=256m --output-format=terse --terse-version=3 |
		awk -F';' '{ print int($8 + $49) }'
}

# The HDDs must be throttled to about 200 IOPS, the SSD must not be.
check_throttling() {
	local hdd ssd
	hdd=$(fio_iops "${BKC_HDDS%% *}" randread 3)
	ssd=$(fio_iops "$BKC_SSD" randread 3)
	log "4k randread QD8: HDD $hdd IOPS, SSD $ssd IOPS"
	if [ "$hdd" -lt 100 ] || [ "$hdd" -gt 300 ]; then
		fail "HDD does $hdd IOPS, expected about 200 (throttling)"
	fi
	[ "$ssd" -ge $((hdd * 3)) ] || fail "SSD ($ssd IOPS) not faster than an HDD ($hdd)"
}

check_raid_xfs() {
	local mnt=/mnt/md0 sum1 sum2
	make_raid5 64
	on_exit stop_raid
	[ "$(cat /sys/block/md0/md/level)" = raid5 ] || fail "md0 is not RAID5"
	[ "$(cat /sys/block/md0/queue/optimal_io_size)" = $((128 * 1024)) ] ||
		fail "md0 io_opt $(cat /sys/block/md0/queue/optimal_io_size), expected 128 KiB"
	mkfs.xfs -q -f "$BKC_MD" || fail "mkfs.xfs failed"
	mkdir -p "$mnt"
	# No explicit modprobe xfs: module auto-loading must work in the guest.
	mount "$BKC_MD" "$mnt" || fail "mount xfs failed"
	on_exit "umount $mnt"
	head -c $((32 * MIB)) /dev/urandom >"$mnt/data"
	sum1=$(sha256sum <"$mnt/data")
	umount "$mnt"
	mount "$BKC_MD" "$mnt" || fail "remount failed"
	sum2=$(sha256sum <"$mnt/data")
	[ "$sum1" = "$sum2" ] || fail "checksum changed across remount"
	log "RAID5 + xfs ok, 32 MiB file checksum survives remount"

	fio --name=fs --directory="$mnt" --rw=randwrite --bs=4k --size=16m \
		--ioengine=libaio --iodepth=8 --direct=1 --runtime=3 --time_based \
		--output-format=terse --terse-version=3 >/tmp/fio.out ||
		fail "fio on xfs failed"
	log "fio on xfs ok: $(awk -F';' '{ print int($49) }' /tmp/fio.out) write IOPS"
	ioping -c 5 -i 0.1 -q "$mnt" || fail "ioping failed"
	log "ioping ok"
	umount "$mnt"
	BKC_ON_EXIT=("${BKC_ON_EXIT[@]:1}")
	stop_raid --zero
	[ ! -e /sys/block/md0 ] || wait_gone /sys/block/md0
}

check_dmsetup() {
	local dev=${BKC_SCRATCH%% *} sectors
	sectors=$(blockdev --getsz "$dev")
	dmsetup create bkc-t00 --table "0 $sectors linear $dev 0" ||
		fail "dmsetup create failed"
	wait_for /dev/mapper/bkc-t00 5
	[ "$(blockdev --getsz /dev/mapper/bkc-t00)" = "$sectors" ] ||
		fail "dm device has the wrong size"
	dmsetup remove bkc-t00 || fail "dmsetup remove failed"
	wait_gone /dev/mapper/bkc-t00 5
	log "dmsetup ok"
}

check_module() {
	bkc_load
	[ -d /sys/module/blkcache ] || fail "blkcache not loaded"
	bkc_load
	bkc_unload
	[ ! -d /sys/module/blkcache ] || fail "blkcache still loaded"
	bkc_load
	bkc_unload
}

check_env
check_disks
check_throttling
check_raid_xfs
check_dmsetup
check_module
