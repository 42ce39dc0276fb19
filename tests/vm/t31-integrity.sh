#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
#
# Issue 7, integrity under hostile and failing conditions, in one boot:
#   1. cache poisoning: a reader overwrites its own O_DIRECT buffer while
#      it reads uncached data (tests/vm/poison-io); a fresh reader, also
#      after re-registration, gets the true data, in writethrough and in
#      writeback;
#   2. I/O accounting: /proc/diskstats of cache0 matches what fio did
#      (within 5 %), nothing is left in flight, the busy times are sane;
#   3. the superblock state under concurrent label changes: it says
#      "dirty" whenever dirty data exists;
#   4. memory pressure: the node cache gives memory back
#      (drop_caches), and fio --verify while stress-ng drives the guest
#      into reclaim sees no error; a discard over 96 MiB of leaves that
#      are not in memory (1 MiB of them dirty) leaves the set up and the
#      range uncached, and so does one over 8 MiB of 512-byte keys in
#      4 KiB leaves (more in a 2 MiB piece than can be pinned);
#   5. a RAID5 member failed (mdadm --fail) during writeback: the drain
#      finishes degraded and the data checks on md0;
#   6. the cache device formatted again with the same set uuid: the old
#      journal is not replayed, /dev/cache0 reads what md0 holds, and the
#      dirty data md0's superblock still claimed is reported lost
#      (dmesg, state "inconsistent").
# shellcheck disable=SC2119  # make_raid5 takes no arguments here
. "$BKC_REPO/tests/vm/lib.sh"
. "$BKC_REPO/tests/vm/verify-lib.sh"

cd /tmp
[ -x "$POISON_IO" ] || fail "$POISON_IO missing: run make on the host"

bkc_load
make_raid5

# -- 1. cache poisoning ----------------------------------------------------
# poison_round MODE OFF_MB SEED: uncached data, the attack in MODE, checks.
poison_round() {
	local mode=$1 off=$2 seed=$3 h0 h1 out
	set_mode writearound
	"$POISON_IO" fill /dev/cache0 "$off" 16 "$seed" || fail "poison-io fill failed"
	set_mode "$mode"
	m0=$(stat_get cache_misses)
	"$POISON_IO" attack /dev/cache0 "$off" 16 "$seed" || fail "poison-io attack failed"
	[ $(($(stat_get cache_misses) - m0)) -ge 2048 ] ||
		fail "$mode: the attack's reads were not misses"
	sleep 2
	h0=$(stat_get cache_hits)
	out=$("$POISON_IO" check /dev/cache0 "$off" 16 "$seed") ||
		fail "$mode: a fresh reader got the attacker's bytes: $out"
	h1=$(stat_get cache_hits)
	# the check read the promoted copies, or it proves nothing
	[ $((h1 - h0)) -ge 2048 ] ||
		fail "$mode: only $((h1 - h0)) of 4096 checked blocks were cache hits"
	reregister
	out=$("$POISON_IO" check /dev/cache0 "$off" 16 "$seed") ||
		fail "$mode: after re-registration: $out"
	log "$mode: promotion kept the true data ($((h1 - h0)) hits checked)"
}
new_cache --writethrough
echo 0 >"$BATTR/sequential_cutoff"
poison_round writethrough 0 5
echo 0 >"$BATTR/sequential_cutoff"
poison_round writeback 32 6

# -- 2. I/O accounting -----------------------------------------------------
set_mode writethrough
ds() {
	awk '$3 == "cache0" { print $4, $6, $7, $8, $10, $11, $12 }' /proc/diskstats
}
read -r r0 rs0 rt0 w0 ws0 wt0 _ < <(ds)
t0=$SECONDS
fio --output=/tmp/fio-acct.out --eta=never --output-format=terse \
	--terse-version=3 --name=acct --filename=/dev/cache0 --direct=1 \
	--ioengine=libaio --iodepth=4 --rw=randrw --bs=4k --offset=64m \
	--size=16m --randrepeat=1 --randseed=3 || fail "fio for accounting failed"
el=$(((SECONDS - t0 + 1) * 1000))
read -r r1 rs1 rt1 w1 ws1 wt1 inflight < <(ds)
rkb=$(awk -F';' '{ print $6 }' /tmp/fio-acct.out)
wkb=$(awk -F';' '{ print $47 }' /tmp/fio-acct.out)
log "fio: ${rkb} KiB read, ${wkb} KiB written; diskstats: $((r1 - r0)) reads," \
	"$((rs1 - rs0)) sectors, ${rt0}->${rt1} ms; $((w1 - w0)) writes," \
	"$((ws1 - ws0)) sectors, ${wt0}->${wt1} ms; in flight $inflight"
within5() {
	local got=$1 want=$2
	[ "$want" -gt 0 ] && [ $((got * 100)) -ge $((want * 95)) ] &&
		[ $((got * 100)) -le $((want * 105)) ]
}
within5 $((rs1 - rs0)) $((rkb * 2)) || fail "diskstats read $((rs1 - rs0)) sectors, fio $((rkb * 2))"
within5 $((ws1 - ws0)) $((wkb * 2)) || fail "diskstats wrote $((ws1 - ws0)) sectors, fio $((wkb * 2))"
within5 $((r1 - r0)) $((rkb / 4)) || fail "diskstats counted $((r1 - r0)) reads, fio did $((rkb / 4))"
within5 $((w1 - w0)) $((wkb / 4)) || fail "diskstats counted $((w1 - w0)) writes, fio did $((wkb / 4))"
[ "$inflight" = 0 ] || fail "diskstats shows $inflight I/Os in flight after fio"
# at most iodepth I/Os were in flight for the run's duration
[ $((rt1 - rt0 + wt1 - wt0)) -le $((4 * el)) ] ||
	fail "diskstats busy time $((rt1 - rt0 + wt1 - wt0)) ms for a ${el} ms run at depth 4"
[ "$(tr -s ' ' </sys/block/cache0/inflight | sed 's/^ //')" = "0 0" ] ||
	fail "/sys/block/cache0/inflight says '$(cat /sys/block/cache0/inflight)'"

# -- 3. superblock state vs label changes ----------------------------------
set_mode writeback
echo 0 >"$BATTR/writeback_percent"
for i in $(seq 1 20); do
	echo 0 >"$BATTR/writeback_running"
	dd if=/dev/urandom of=/dev/cache0 bs=4k seek=$((30000 + i * 7)) count=1 \
		oflag=direct status=none &
	echo "l$i" >"$BATTR/label"
	echo "m$i" >"$BATTR/label"
	wait
	[ "$(dirty_sectors)" -gt 0 ] || fail "round $i: no dirty data"
	[ "$(md0_sb state)" = dirty ] ||
		fail "round $i: md0's superblock says '$(md0_sb state)' with dirty data"
	echo 1 >"$BATTR/writeback_running"
	wait_state clean 30
done
log "the superblock said dirty whenever dirty data existed (20 rounds)"

# -- 4. memory pressure ----------------------------------------------------
# small nodes, so that many clean leaves are in memory (32 MiB of 4k
# keys: about 18 leaves of 16 KiB).  The keys are written in writeback
# and drained (whole stripes), then the mode is writethrough: 4k
# writethrough writes are RAID5 read-modify-writes, 50 s for these.
stop_all
echo 1 >"$BATTR/stop" 2>/dev/null || true
new_cache --writeback -b 16k
fio_job keys 0 32 41 --rw=randwrite --bs=4k --iodepth=16 >/dev/null ||
	fail "writing 32 MiB of 4k keys failed"
wait_clean 120
set_mode writethrough
reregister
fio_job keys 0 32 41 --rw=randwrite --bs=4k --iodepth=16 --verify_only >/dev/null ||
	fail "the 4k keys do not verify"
before=$(hsize_bytes "$(cat "$(set_attr btree_cache_size)")")
sync
echo 2 >/proc/sys/vm/drop_caches
after=$(hsize_bytes "$(cat "$(set_attr btree_cache_size)")")
log "btree_cache_size $before -> $after bytes after drop_caches"
[ "$after" -lt "$before" ] || fail "the node cache did not shrink under reclaim"
stress-ng --vm 2 --vm-bytes 75% --vm-keep --timeout 40s --quiet &
hog=$!
on_exit "kill $hog 2>/dev/null || true"
sleep 3
fio_job keys 0 32 41 --rw=randwrite --bs=4k --verify_only --iodepth=16 ||
	{ cat /tmp/fio-keys.out; fail "reads failed under memory pressure"; }
fill_region press 128 32 42
check_region press 128 32 42
wait "$hog" || true
check_dmesg || fail "the kernel complained under memory pressure"
log "no I/O error under memory pressure"

# -- 4b. a discard over leaves not in memory --------------------------------
# Forgetting a range (a bypassed write, a discard) needs the leaves of
# each 2 MiB piece in memory, one piece at a time, and pins at most 16
# of them.  discard_case CACHE BUCKET BLOCK BS SIZE_MB DIRTY_KB: a set on
# CACHE of BUCKET buckets (its btree nodes) and BLOCK blocks over a scratch
# disk (md0 takes no discards) gets SIZE_MB MiB of clean keys of BS bytes
# and DIRTY_KB KiB of dirty ones at the end, is registered again and its
# node cache emptied (below 16 nodes left), then one discard of it all,
# while 4k random reads go to the 16 MiB after it (the insert worker lets
# them in between pieces): the set stays up, the dirty data goes (after a
# flush of the scratch disk, the clean pieces before it first), and the
# range then reads as misses, at its start and at its end (1 MiB at each
# end, 4k reads).
discard_case() {
	local cache=$1 bucket=$2 block=$3 bs=$4 mb=$5 dkb=$6
	local size h0 h1 m0 m1 off nbytes rdpid
	stop_all
	out=$("$make_cache" --wipe -b "$bucket" -w "$block" -C "$cache" \
		-B "${scratch[0]}" 2>&1) ||
		fail "make-cache -b $bucket -w $block over ${scratch[0]} failed: $out"
	BKC_SET=$(sed -n 's/^Set UUID: *//p' <<<"$out")
	wait_for /dev/cache0
	[ "$(cat /sys/block/cache0/queue/discard_max_bytes)" -ge $((mb << 20)) ] ||
		fail "cache0 over ${scratch[0]} takes no $mb MiB discard"
	fio --output=/tmp/fio-disc.out --eta=never --name=disc --filename=/dev/cache0 \
		--direct=1 --ioengine=libaio --iodepth=16 --rw=randwrite --bs="$bs" \
		--size="${mb}m" --randrepeat=1 ||
		{ cat /tmp/fio-disc.out; fail "writing $mb MiB of $bs keys failed"; }
	echo 0 >"$BATTR/writeback_running"
	set_mode writeback
	fio --output=/tmp/fio-disc.out --eta=never --name=disc --filename=/dev/cache0 \
		--direct=1 --ioengine=libaio --iodepth=16 --rw=randwrite --bs="$bs" \
		--offset=$(((mb << 20) - (dkb << 10))) --size="${dkb}k" --randrepeat=1 ||
		{ cat /tmp/fio-disc.out; fail "writing $dkb KiB of dirty $bs keys failed"; }
	[ "$(dirty_sectors)" -gt 0 ] || fail "no dirty data before the discard"
	stop_all
	echo "$cache" >/sys/fs/blkcache/register || fail "registering $cache failed"
	echo "${scratch[0]}" >/sys/fs/blkcache/register ||
		fail "registering ${scratch[0]} failed"
	wait_for /dev/cache0 30
	sync
	echo 2 >/proc/sys/vm/drop_caches
	size=$(hsize_bytes "$(cat "$(set_attr btree_cache_size)")")
	nbytes=$(hsize_bytes "${bucket}")
	log "-b $bucket, $bs keys: btree_cache_size $size bytes before the discard"
	# the root, an interior node, the leaves of the dirty keys: not 16 leaves
	[ "$size" -lt $((16 * nbytes)) ] || fail "the node cache kept $size bytes"
	# reads past the discarded range meanwhile: the insert worker lets
	# them take the set lock between the discard's pieces
	fio --output=/tmp/fio-rd.out --eta=never --name=rd --filename=/dev/cache0 \
		--direct=1 --ioengine=libaio --iodepth=4 --rw=randread --bs=4k \
		--offset="${mb}m" --size=16m --time_based --runtime=5 &
	rdpid=$!
	on_exit "kill $rdpid 2>/dev/null || true"
	stat_grows cache_misses 19 "the reader beside the discard makes no misses"
	blkdiscard -o 0 -l $((mb << 20)) /dev/cache0 ||
		fail "blkdiscard of $mb MiB failed"
	wait "$rdpid" || { cat /tmp/fio-rd.out; fail "reads during the discard failed"; }
	# writeback is held: the discard alone took the dirty data
	if [ "$(dirty_sectors)" != 0 ] || [ "$(state)" = "no cache" ]; then
		fail "state '$(state)', $(dirty_sectors) dirty sectors after a discard over leaves not in memory"
	fi
	echo 1 >"$BATTR/writeback_running"
	for ((i = 0; i < 100; i++)); do
		[ "$(state)" != clean ] || break
		sleep 0.1
	done
	[ "$(state)" = clean ] || fail "state '$(state)' after the discard, not clean"
	check_dmesg || fail "the kernel complained about a discard"
	echo 0 >"$BATTR/sequential_cutoff"
	h0=$(stat_get cache_hits)
	m0=$(stat_get cache_misses)
	for off in 0 $(((mb - 1) << 20)); do
		fio --output=/tmp/fio-disc.out --eta=never --name=disc --filename=/dev/cache0 \
			--direct=1 --ioengine=psync --rw=read --bs=4k --offset="$off" --size=1m ||
			{ cat /tmp/fio-disc.out; fail "reading the discarded range failed"; }
	done
	h1=$(stat_get cache_hits)
	m1=$(stat_get cache_misses)
	log "-b $bucket, $bs keys: a discard of $mb MiB over leaves not in memory," \
		"then 512 reads of it: $((h1 - h0)) hits, $((m1 - m0)) misses"
	if [ "$h1" != "$h0" ] || [ $((m1 - m0)) != 512 ]; then
		fail "reads of the discarded range: $((h1 - h0)) hits, $((m1 - m0)) misses"
	fi
}
# 4k keys in 16 KiB leaves: a piece spans a few leaves (the set failed,
# "cannot record a write (-35)", while only the 16 leaves from the start
# of a range were pinned for it)
read -r -a scratch <<<"$BKC_SCRATCH"
[ "$(dev_bytes "${scratch[1]}")" -le $((960 << 20)) ] ||
	fail "${scratch[1]} is over 960 MiB, too large for 4 KiB buckets (--scratch-size)"
discard_case "$BKC_SSD" 16k 4k 4k 96 1024
# 512-byte keys in 4 KiB leaves: a 2 MiB piece spans 28 or more leaves
# and shrinks to the 16 it can pin (the set failed with -35 before).  The
# cache is the second scratch disk: 4 KiB buckets take at most about
# 253,000 buckets (the bucket table), which the SSD has more of.
discard_case "${scratch[1]}" 4k 512 512 8 256
stop_all
dd if=/dev/zero of="${scratch[1]}" bs=1M count=1 oflag=direct status=none ||
	fail "cannot wipe ${scratch[1]}"

# -- 5. a RAID member fails during writeback -------------------------------
stop_all
echo 1 >"$BATTR/stop" 2>/dev/null || true
new_cache --writeback
echo 0 >"$BATTR/writeback_running"
fio --output=/tmp/fio-raid.out --eta=never --name=raid --filename=/dev/cache0 \
	--direct=1 --ioengine=libaio --iodepth=16 --rw=randwrite \
	--bssplit=4k/50:16k/30:64k/20 --offset=256m --size=64m --randrepeat=1 \
	--randseed=9 --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
	--do_verify=0 || { cat /tmp/fio-raid.out; fail "writing the dirty data failed"; }
d=$(dirty_sectors)
[ "$d" -gt $((60 * 2048)) ] || fail "only $d sectors dirty"
# slow enough that the member fails in the middle of it
echo 4M >"$BATTR/writeback_rate_max"
echo 0 >"$BATTR/writeback_percent"
echo 1 >"$BATTR/writeback_running"
sleep 3
read -r -a hdds <<<"$BKC_HDDS"
mdadm "$BKC_MD" --fail "${hdds[0]}" || fail "mdadm --fail failed"
left=$(dirty_sectors)
log "failed ${hdds[0]} with $left of $d sectors still dirty"
[ "$left" -gt 0 ] || fail "writeback was over before the member failed"
echo 0 >"$BATTR/writeback_rate_max"
wait_clean 300
grep -q degraded /proc/mdstat || grep -q "_" /proc/mdstat || fail "md0 is not degraded"
echo 1 >"$BATTR/detach"
wait_state "no cache" 60
fio --output=/tmp/fio-raid.out --eta=never --name=raid --filename=/dev/cache0 \
	--direct=1 --ioengine=libaio --iodepth=16 --rw=randwrite \
	--bssplit=4k/50:16k/30:64k/20 --offset=256m --size=64m --randrepeat=1 \
	--randseed=9 --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
	--verify_only=1 || { cat /tmp/fio-raid.out; fail "the data on degraded md0 does not verify"; }
log "a failed RAID member during writeback lost nothing"

# -- 6. re-format with the same set uuid -----------------------------------
echo 1 >"$BATTR/stop"
wait_gone /dev/cache0
echo 1 >"$(set_attr stop)"
wait_gone "/sys/fs/blkcache/$BKC_SET"
new_cache --writearound
old_set=$BKC_SET
echo 0 >"$BATTR/sequential_cutoff"
"$POISON_IO" fill /dev/cache0 400 8 7 || fail "fill failed"
set_mode writeback
echo 0 >"$BATTR/writeback_running"
"$POISON_IO" fill /dev/cache0 400 8 8 || fail "fill failed"
[ "$(dirty_sectors)" -ge $((8 * 2048)) ] || fail "the second fill is not dirty"
stop_all
"$make_cache" --wipe --no-register -u "$old_set" -C "$BKC_SSD" >/dev/null ||
	fail "make-cache -u $old_set failed"
echo "$BKC_SSD" >/sys/fs/blkcache/register || fail "registering the new cache failed"
echo /dev/md0 >/sys/fs/blkcache/register || fail "registering md0 failed"
wait_for /dev/cache0 30
out=$("$POISON_IO" check /dev/cache0 400 8 7) ||
	fail "after the re-format /dev/cache0 does not show md0's data: $out"
[ "$(state)" = inconsistent ] || fail "state '$(state)' after its dirty data was lost"
dmesg_has "blkcache: md0: superblock says its dirty data is in cache set $old_set .* which has no record of this device: that data is lost; marked inconsistent" ||
	fail "the lost dirty data was not reported"
echo 1 >"$BATTR/stop"
wait_gone /dev/cache0

bkc_unload
log "integrity held"
