#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1200
#
# demo.sh - the blkcache user flow and a short benchmark, run by scripts/demo
# (`make demo`) in one VM:
#   1. md RAID5 over the three throttled HDDs;
#   2. fio/ioping on the raw SSD and the raw RAID (before anything is on them);
#   3. make-cache -C <ssd> -B /dev/md0 [ARGS...]: /dev/cache0 appears;
#   4. the same fio/ioping jobs on /dev/cache0;
#   5. mkfs.xfs on /dev/cache0, files with checksums, stop, register both
#      devices again, mount, the checksums still match;
#   6. a table comparing /dev/cache0 with the raw devices (also saved as
#      $BKC_RESULTS/demo-table.txt).
# ARGS go to make-cache (default --writeback, which shows the cache best;
# e.g. --writethrough).
. "$BKC_REPO/tests/vm/lib.sh"

MAKE_CACHE_ARGS=("$@")
[ "${#MAKE_CACHE_ARGS[@]}" -gt 0 ] || MAKE_CACHE_ARGS=(--writeback)
MNT=/mnt/cache0
RUNTIME=${DEMO_RUNTIME:-10}
declare -A R=()

say() {
	printf '\n=== %s\n' "$*"
}

# fio_job DEV NAME RW BS QD OFFSET SIZE: runs one fio job on DEV, prints
# the terse v3 line.
fio_job() {
	fio --name="$2" --filename="$1" --rw="$3" --bs="$4" --iodepth="$5" \
		--offset="$6" --size="$7" --ioengine=libaio --direct=1 \
		--runtime="$RUNTIME" --time_based --randrepeat=0 \
		--output-format=terse --terse-version=3 ||
		fail "fio $2 on $1 failed"
}

# bench KEY DEV: fills R[KEY,...] with IOPS, MB/s and latency of DEV.
bench() {
	local key=$1 dev=$2 line
	log "benchmarking $dev (${RUNTIME}s per job)"
	line=$(fio_job "$dev" randwrite randwrite 4k 8 0 128m)
	R[$key,randwrite]=$(awk -F';' '{ print int($49) }' <<<"$line")
	line=$(fio_job "$dev" randread randread 4k 8 0 128m)
	R[$key,randread]=$(awk -F';' '{ print int($8) }' <<<"$line")
	line=$(fio_job "$dev" seqwrite write 1m 4 256m 1g)
	R[$key,seqwrite]=$(awk -F';' '{ printf "%d", $48 / 1024 }' <<<"$line")
	# ioping -B: field 6 is the average request time in nanoseconds.
	line=$(ioping -B -q -D -c 10 -i 0.1 -S 64m "$dev") || fail "ioping on $dev failed"
	R[$key,ioping]=$(awk '{ printf "%d", $6 / 1000 }' <<<"$line")
	log "$dev: randwrite ${R[$key,randwrite]} IOPS, randread ${R[$key,randread]} IOPS," \
		"seqwrite ${R[$key,seqwrite]} MB/s, ioping ${R[$key,ioping]} us"
}

# ratio A B: A/B as a percentage or a factor.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (b <= 0) { print "-"; exit }
		r = a / b
		if (r < 10) printf "%.0f%%", r * 100; else printf "%.1fx", r
	}'
}

table() {
	local row name
	printf '%-26s %10s %10s %12s %11s %11s\n' "" "raw SSD" "raw md0" \
		"/dev/cache0" "cache0/SSD" "cache0/md0"
	for row in "randwrite:4k randwrite QD8, IOPS" "randread:4k randread QD8, IOPS" \
		"seqwrite:1M seqwrite QD4, MB/s" "ioping:ioping latency, us"; do
		name=${row#*:}
		row=${row%%:*}
		printf '%-26s %10s %10s %12s %11s %11s\n' "$name" "${R[ssd,$row]}" \
			"${R[md,$row]}" "${R[cache,$row]}" \
			"$(ratio "${R[cache,$row]}" "${R[ssd,$row]}")" \
			"$(ratio "${R[cache,$row]}" "${R[md,$row]}")"
	done
	echo "(ratios: higher is better, except for latency; $(uname -r), TCG VM," \
		"3 HDDs throttled to 200 IOPS each)"
}

preflight() {
	[ -x "$make_cache" ] || fail "make-cache is not built yet ($make_cache): run make"
	bkc_load
	[ -e /sys/fs/blkcache/register ] ||
		fail "this blkcache.ko has no /sys/fs/blkcache/register yet"
	# Keep the console for the demo; the kernel log is still saved.
	dmesg -n 5
}

# Zeroes the first MiB of the devices the benchmark wrote garbage on, so
# make-cache finds no stray signature.
clear_heads() {
	local d
	for d in "$@"; do
		dd if=/dev/zero of="$d" bs=1M count=1 oflag=direct status=none ||
			fail "cannot clear $d"
	done
}

format_and_register() {
	local out
	say "make-cache -C $BKC_SSD -B /dev/md0 ${MAKE_CACHE_ARGS[*]}"
	out=$("$make_cache" -C "$BKC_SSD" -B /dev/md0 "${MAKE_CACHE_ARGS[@]}") ||
		fail "make-cache failed: $out"
	echo "$out"
	SET_UUID=$(sed -n 's/^Set UUID: *//p' <<<"$out")
	[ -n "$SET_UUID" ] || fail "make-cache printed no set uuid"
	wait_for /dev/cache0
	log "/dev/cache0: $(($(dev_bytes /dev/cache0) / 1048576)) MiB," \
		"state $(cat /sys/block/cache0/cache/state)," \
		"mode $(cat /sys/block/cache0/cache/cache_mode)"
	[ "$(cat /sys/block/cache0/cache/state)" != "no cache" ] ||
		fail "/dev/cache0 is not attached to its cache set"
}

filesystem_flow() {
	local attr=/sys/block/cache0/cache i
	say "xfs on /dev/cache0, files with checksums, stop, register again"
	mkfs.xfs -q -f /dev/cache0 || fail "mkfs.xfs failed"
	mkdir -p "$MNT"
	mount /dev/cache0 "$MNT" || fail "mount failed"
	on_exit "umount $MNT 2>/dev/null || true"
	log "xfs stripe alignment: $(xfs_info "$MNT" |
		sed -n 's/.*\(sunit=[0-9]* *swidth=[0-9]* blks\).*/\1/p' | head -n 1)"
	for i in $(seq 1 16); do
		head -c $((i * 512 * 1024)) /dev/urandom >"$MNT/file$i"
	done
	(cd "$MNT" && sha256sum file*) >/tmp/sums
	log "wrote 16 files, $(du -sh "$MNT" | cut -f1)"
	umount "$MNT"
	echo 1 >"$attr/stop"
	wait_gone /dev/cache0
	echo 1 >"/sys/fs/blkcache/$SET_UUID/stop"
	wait_gone "/sys/fs/blkcache/$SET_UUID"
	log "stopped /dev/cache0 and the cache set; registering both again"
	echo /dev/md0 >/sys/fs/blkcache/register || fail "register /dev/md0 failed"
	echo "$BKC_SSD" >/sys/fs/blkcache/register || fail "register $BKC_SSD failed"
	wait_for /dev/cache0
	log "/dev/cache0 is back, state $(cat "$attr/state")"
	mount /dev/cache0 "$MNT" || fail "mount after re-registration failed"
	(cd "$MNT" && sha256sum -c --quiet /tmp/sums) ||
		fail "checksums differ after re-registration"
	log "all 16 checksums match"
	umount "$MNT"
}

preflight
say "RAID5 over the HDDs"
make_raid5 64
say "raw devices"
bench ssd "$BKC_SSD"
bench md /dev/md0
clear_heads "$BKC_SSD" /dev/md0
format_and_register
say "/dev/cache0"
bench cache /dev/cache0
log "cache statistics: $(cd /sys/block/cache0/cache/stats_total &&
	grep . cache_hits cache_misses cache_hit_ratio bypassed | tr '\n' ' ')"
log "dirty data: $(cat /sys/block/cache0/cache/dirty_data)," \
	"writeback rate $(cat /sys/block/cache0/cache/writeback_rate)"
filesystem_flow
say "blkcache demo results"
table | tee "$BKC_RESULTS/demo-table.txt"
