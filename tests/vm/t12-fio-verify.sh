#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# boot: shared
#
# Issue 2, test c: fio --verify=crc32c on /dev/cache0, 4k random and 1M
# sequential, checked again after stop and re-registration.
. "$BKC_REPO/tests/vm/lib.sh"

cd /tmp
bkc_load
# shellcheck disable=SC2119  # the default chunk
make_raid5
out=$("$make_cache" -C "$BKC_SSD" -B /dev/md0) || fail "make-cache failed: $out"
set_uuid=$(sed -n 's/^Set UUID: *//p' <<<"$out")
wait_for /dev/cache0

fio_run() {
	fio --output-format=terse --terse-version=3 --minimal \
		--filename=/dev/cache0 --direct=1 --ioengine=libaio \
		--verify=crc32c --verify_fatal=1 --do_verify=1 \
		--verify_state_save=0 "$@" >/tmp/fio.out ||
		{ cat /tmp/fio.out; fail "fio $* failed"; }
}

# 4k random writes over 64 MiB at QD8, then 1M sequential over 256 MiB
# further in, each verified after writing.
fio_run --name=rand4k --rw=randwrite --bs=4k --iodepth=8 --size=64M \
	--offset=0 --io_size=16M --norandommap=0 --randrepeat=1
log "4k random write+verify OK"
fio_run --name=seq1m --rw=write --bs=1M --iodepth=4 --size=256M \
	--offset=512M
log "1M sequential write+verify OK"

# The same data read back after stop and re-registration.
echo 1 >"/sys/fs/blkcache/$set_uuid/stop"
wait_gone /dev/cache0
echo "$BKC_SSD" >/sys/fs/blkcache/register
echo /dev/md0 >/sys/fs/blkcache/register
wait_for /dev/cache0
fio_run --name=seq1m --rw=write --bs=1M --iodepth=4 --size=256M \
	--offset=512M --verify_only=1
log "1M sequential data verified after re-registration"
