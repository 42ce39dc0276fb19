#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# boot: shared
#
# Issue 4, correctness: fio --verify in every cache mode.  Each mode
# writes its own 36 MiB region with one fio run of five concurrent jobs:
# random writes with block sizes from 4k to 1M at QD32 in four processes
# (own 4 MiB each), sequential 4k at QD1, sequential 128k at QD8,
# sequential 1M at QD4 (past sequential_cutoff: bypassed) and random 4k at
# QD1; every job verifies what it wrote.  Then the data is read back
# (fio --verify_only) after each later mode switch: writeback data while
# it drains, in writethrough, writearound and none.  Writearound and
# writeback rewrite regions that are cached dirty or clean with new data.
# Everything is verified again after stop and re-registration with dirty
# data in the cache, and once more after writeback drained it.  The data
# is a pattern made of the region's seed and the offset of its write,
# with a header holding each 4k block's own offset: fio's crc32c verify
# would take a region's older data as good.
# shellcheck disable=SC2119  # make_raid5 takes no arguments here
. "$BKC_REPO/tests/vm/lib.sh"
. "$BKC_REPO/tests/vm/verify-lib.sh"

cd /tmp
REGION_MB=48
declare -A SEED=()	# region -> fio seed of its newest data

# job_file REGION SEED: the fio job file of a region.
job_file() {
	local off=$(($1 * REGION_MB)) seed=$2
	cat <<EOF
[global]
filename=/dev/cache0
direct=1
verify_pattern=$(printf '0x%08x' "$seed")%o
verify_interval=4k
verify_fatal=1
verify_state_save=0
do_verify=1
randrepeat=1
randseed=$seed
group_reporting=0

[rand-bssplit-qd32]
ioengine=libaio
rw=randwrite
bssplit=4k/40:16k/20:64k/20:256k/15:1m/5
iodepth=32
numjobs=4
offset=$((off))m
offset_increment=4m
size=4m

[seq-4k-qd1]
ioengine=psync
rw=write
bs=4k
offset=$((off + 16))m
size=1m

[seq-128k-qd8]
ioengine=libaio
rw=write
bs=128k
iodepth=8
offset=$((off + 18))m
size=4m

[seq-1m-qd4]
ioengine=libaio
rw=write
bs=1m
iodepth=4
offset=$((off + 24))m
size=8m

[rand-4k-qd1]
ioengine=psync
rw=randwrite
bs=4k
offset=$((off + 34))m
size=2m
EOF
}

# run_fio WHAT REGION SEED [fio options]
run_fio() {
	local what=$1 region=$2 seed=$3 start=$SECONDS
	shift 3
	job_file "$region" "$seed" >/tmp/job.fio
	if ! fio --output=/tmp/fio.out --eta=never "$@" /tmp/job.fio; then
		cat /tmp/fio.out
		fail "$what of region $region (seed $seed) failed in $(mode_now) mode"
	fi
	check_dmesg || fail "kernel complained during $what of region $region"
	log "$what region $region (seed $seed) in $(mode_now) mode: OK ($((SECONDS - start))s)"
}

mode_now() {
	sed -n 's/.*\[\(.*\)\].*/\1/p' "$BATTR/cache_mode"
}

write_region() {
	SEED[$1]=$2
	run_fio write "$1" "$2"
}

verify_regions() {
	local r
	for r in "$@"; do
		run_fio verify "$r" "${SEED[$r]}" --verify_only=1
	done
}

bkc_load
make_raid5
new_cache --writeback
log "region size ${REGION_MB} MiB; dirty data shown as /dev/cache0 dirty_data"

set_mode writeback
write_region 0 101
log "dirty after the writeback region: $(cat "$BATTR/dirty_data")"

# Leaving writeback: the dirty data stays readable while it drains.
set_mode writethrough
verify_regions 0
write_region 1 102

set_mode writearound
verify_regions 0 1
write_region 2 103
# New data over dirty cached data, around the cache.
write_region 0 201
log "dirty now: $(cat "$BATTR/dirty_data")"

set_mode none
verify_regions 0 1 2
write_region 3 104

set_mode writeback
verify_regions 0 1 2 3
write_region 4 105
# New data over clean cached data (writethrough's), in writeback.
write_region 1 202
dirty=$(dirty_sectors)
[ "$dirty" -gt 0 ] || fail "no dirty data after writeback writes"
log "dirty before stop: $(cat "$BATTR/dirty_data")"

reregister
[ "$(state)" = dirty ] || fail "state '$(state)' after re-registration with dirty data"
verify_regions 0 1 2 3 4

wait_clean 300
set_mode writethrough
verify_regions 0 1 2 3 4
stop_all
bkc_unload
