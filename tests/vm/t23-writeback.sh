#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
#
# Issue 4, writeback:
#   - writeback mode, writeback paused: 96 MiB of random writes (4k-64k,
#     each block once, fio crc32c pattern) make exactly 96 MiB of dirty
#     data and state "dirty"; writeback_percent=0 drains it to 0 and
#     "clean"; after stopping /dev/cache0 and the set, raw md0 from
#     data_offset matches what /dev/cache0 showed (sha256);
#   - registered again, 32 MiB more dirty data, writeback still paused:
#     detach writes it back first (state stays "dirty" until
#     dirty_data is 0), then detaches ("no cache", on disk too); the data
#     reads the same through /dev/cache0 and on raw md0.
# shellcheck disable=SC2119  # make_raid5 takes no arguments here
. "$BKC_REPO/tests/vm/lib.sh"
. "$BKC_REPO/tests/vm/verify-lib.sh"

cd /tmp
MB=1048576

# fio_region OFFSET_MB SIZE_MB SEED [fio options]: random writes with a
# crc32c pattern over the region, each block once.
fio_region() {
	local off=$1 size=$2 seed=$3
	shift 3
	fio --output=/tmp/fio.out --eta=never --name=wb --filename=/dev/cache0 --direct=1 \
		--ioengine=libaio --iodepth=16 --rw=randwrite \
		--bssplit=4k/70:8k/10:16k/10:64k/10 --offset="${off}m" \
		--size="${size}m" --randrepeat=1 --randseed="$seed" \
		--verify=crc32c --verify_fatal=1 --verify_state_save=0 "$@" ||
		{ cat /tmp/fio.out; fail "fio on ${size} MiB at ${off} MiB failed"; }
}

bkc_load
make_raid5
new_cache --writeback
off=$(data_offset)

# -- fill, drain, compare ----------------------------------------------------
echo 0 >"$BATTR/writeback_running"
fio_region 64 96 11 --do_verify=0
d=$(dirty_sectors)
[ "$d" = $((96 * 2048)) ] ||
	fail "96 MiB of random writes made $((d / 2)) KiB of dirty data"
[ "$(state)" = dirty ] || fail "state '$(state)' with dirty data"
[ "$(hsize_bytes "$(cat "/sys/fs/blkcache/$BKC_SET/dirty_data")")" -ge $((96 * MB - MB / 10)) ] ||
	fail "the set shows $(cat "/sys/fs/blkcache/$BKC_SET/dirty_data") dirty"
[ "$(md0_sb_state)" = dirty ] ||
	fail "the backing superblock says '$(md0_sb_state)', not dirty"
fio_region 64 96 11 --verify_only=1
sum1=$(region_sum /dev/cache0 $((64 * MB)) $((96 * MB)))
log "96 MiB dirty ($(cat "$BATTR/dirty_data")), verified; draining"

wait_clean 300
[ "$(state)" = clean ] || fail "state '$(state)' after draining"
grep -q '^written:' "$BATTR/writeback_rate_debug" ||
	fail "writeback_rate_debug has no written: line"
log "writeback_rate_debug: $(tr '\n\t' '  ' <"$BATTR/writeback_rate_debug")"
stop_all
[ "$(md0_sb_state)" = clean ] ||
	fail "the backing superblock says '$(md0_sb_state)' after writeback, not clean"
sum2=$(region_sum /dev/md0 $((off + 64 * MB)) $((96 * MB)))
[ "$sum1" = "$sum2" ] || fail "raw md0 differs from what /dev/cache0 showed"
log "raw md0 at data_offset $off matches the 96 MiB written"

# -- detach with dirty data ---------------------------------------------------
register_all
[ "$(state)" = clean ] || fail "state '$(state)' after re-registration"
echo 0 >"$BATTR/writeback_running"
fio_region 256 32 12 --do_verify=0
[ "$(dirty_sectors)" = $((32 * 2048)) ] ||
	fail "32 MiB of random writes made $(($(dirty_sectors) / 2)) KiB of dirty data"
sum3=$(region_sum /dev/cache0 $((256 * MB)) $((32 * MB)))
echo 1 >"$BATTR/detach" || fail "detach refused"
start=$SECONDS
samples=""
while [ "$(state)" != "no cache" ]; do
	d=$(dirty_sectors 2>/dev/null || echo 0)
	st=$(state)
	samples+=" $((d / 2048))M"
	if [ "$d" -gt 0 ] && [ "$st" != dirty ]; then
		fail "state '$st' during detach with $d dirty sectors"
	fi
	[ $((SECONDS - start)) -lt 300 ] ||
		fail "detach not done after 300s: $d dirty sectors, state $st"
	sleep 0.5
done
log "detach wrote back and detached in $((SECONDS - start))s; dirty seen:$samples"
[ "$(cat "$BATTR/dirty_data")" = 0 ] || fail "dirty_data $(cat "$BATTR/dirty_data") after detach"
[ "$(md0_sb_state)" = "no cache" ] ||
	fail "the backing superblock says '$(md0_sb_state)' after detach, not 'no cache'"
[ -d "/sys/fs/blkcache/$BKC_SET" ] || fail "detach removed the cache set"
[ "$(region_sum /dev/cache0 $((256 * MB)) $((32 * MB)))" = "$sum3" ] ||
	fail "/dev/cache0 reads different data after detach"
[ "$(region_sum /dev/cache0 $((64 * MB)) $((96 * MB)))" = "$sum1" ] ||
	fail "the first region changed after detach"
fio_region 256 32 12 --verify_only=1
echo 1 >"$BATTR/stop"
wait_gone /dev/cache0
[ "$(region_sum /dev/md0 $((off + 256 * MB)) $((32 * MB)))" = "$sum3" ] ||
	fail "raw md0 differs from what /dev/cache0 showed before detach"
log "after detach raw md0 matches"
echo 1 >"/sys/fs/blkcache/$BKC_SET/stop"
wait_gone "/sys/fs/blkcache/$BKC_SET"
bkc_unload
