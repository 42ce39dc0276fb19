#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# host-driver: crash-run
#
# Issue 4, crash (a): SIGKILL of QEMU in the middle of flushed writes, in
# writeback mode (design.md section 4, C1-C3).  Driven from the host by
# tests/vm/crash-run, which boots this script once per crash point plus
# once more, on the same disk images, as
#	t24-crash-kill.sh K N		(K = 0 .. N)
# and kills QEMU at a random moment while the writer of boot K < N runs
# (N is BKC_CRASH_POINTS, default 10).
#
#   boot 0      RAID5, make-cache --writeback; start the writer (epoch 1).
#   boot K>0    assemble md0, register the SSD and md0, then the checks of
#               crash-lib.sh: every acknowledged block reads back its
#               acknowledged or a later generation, nothing reads another
#               sector's data or garbage (C1, C2); the set recovered at
#               least the dirty data of the last writer, state "dirty"
#               (C3).  Every 4th boot and the last drain the dirty data
#               and compare raw md0 with /dev/cache0.  Before N, start
#               the writer of epoch K+1.
# The writer (tests/vm/crash-io) acknowledges a write when its FUA write or
# a later fdatasync completed, and logs that to the results share.
# shellcheck disable=SC2119  # make_raid5 and stop_raid take no arguments here
. "$BKC_REPO/tests/vm/lib.sh"
. "$BKC_REPO/tests/vm/verify-lib.sh"
. "$BKC_REPO/tests/vm/crash-lib.sh"

K=${1:-}
N=${2:-}
if ! [[ $K =~ ^[0-9]+$ && $N =~ ^[0-9]+$ ]] || [ "$K" -gt "$N" ]; then
	fail "usage: t24-crash-kill.sh K N; tests/vm/crash-run runs it (tests/vm/run does that)"
fi

cd /tmp
STATE=$BKC_RESULTS/crash-state

first_boot() {
	bkc_load
	make_raid5
	new_cache --writeback
	crash_init
	printf 'CRASH_SEED=%s\nBKC_SET=%s\n' "$CRASH_SEED" "$BKC_SET" >"$STATE"
	log "seed $CRASH_SEED, set $BKC_SET, region $CRASH_BLOCKS blocks of 4 KiB"
}

recover() {
	# shellcheck source=/dev/null
	. "$STATE"
	need_module raid456
	# shellcheck disable=SC2086  # a list of devices
	mdadm --assemble --run --quiet /dev/md0 $BKC_HDDS </dev/null ||
		fail "mdadm --assemble failed"
	wait_for /sys/block/md0/md/sync_action
	# The crash left md0 unclean; a resync would only compete for the HDDs.
	echo frozen >/sys/block/md0/md/sync_action
	bkc_load
	crash_register
	crash_check "$K"
}

start_writer() {
	local args out
	read -r -a args <<<"$(crash_writer_args $((K + 1)))"
	log "writer epoch $((K + 1)); waiting for the host to kill the VM"
	out=$("$CRASH_IO" write "${args[@]}" --seconds 60 \
		--started "$BKC_RESULTS/started-$K" 2>&1) || true
	echo "$out"
	fail "the writer ended and the host did not kill the VM"
}

if [ "$K" = 0 ]; then
	first_boot
else
	recover
	if [ "$K" = "$N" ]; then
		crash_drain "$K" last
	elif [ $((K % 4)) = 0 ]; then
		crash_drain "$K"
	fi
fi
[ "$K" = "$N" ] || start_writer
stop_all
stop_raid
bkc_unload
crash_summary
