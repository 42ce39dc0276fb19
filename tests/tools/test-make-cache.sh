#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make-cache tests on image files.
#
#   tests/tools/test-make-cache.sh
#
# Formats sparse image files in a temporary directory and checks what
# make-cache writes (through --show), what it refuses, and that a refused
# invocation writes nothing at all.  Prints PASS/FAIL per case and exits
# non-zero if any case failed.  Needs no root, except the optional loop
# device cases (BKC_TEST_LOOP=1, root only), which check the logical block
# size, O_EXCL and mount refusals on real block devices.
#
# Environment:
#   MAKE_CACHE       binary to test (default: tools/make-cache/make-cache)
#   BKC_TEST_LOOP=1  also run the loop device cases (root)

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MC=${MAKE_CACHE:-$ROOT/tools/make-cache/make-cache}

if [[ ! -x $MC ]]; then
	echo "FAIL: $MC not built (run: make tools)" >&2
	exit 1
fi

T=$(mktemp -d /tmp/test-make-cache.XXXXXX)
LOOPS=()
# shellcheck disable=SC2317  # invoked through the EXIT trap
cleanup() {
	local l

	if mountpoint -q "$T/mnt" 2>/dev/null; then
		umount "$T/mnt" || true
	fi
	for l in "${LOOPS[@]}"; do
		losetup -d "$l" 2>/dev/null || true
	done
	rm -rf "$T"
}
trap cleanup EXIT

rc=0
# shellcheck source=tests/lib/check.sh
. "$ROOT/tests/lib/check.sh"

# what make-cache printed in the failed case
# shellcheck disable=SC2317  # called by fail (tests/lib/check.sh)
fail_detail() {
	if [[ -s $T/out || -s $T/err ]]; then
		sed 's/^/      stdout: /' "$T/out" 2>/dev/null | head -n 40
		sed 's/^/      stderr: /' "$T/err" 2>/dev/null | head -n 20
	fi
}

# run ARGS...: run make-cache, keep stdout/stderr in $T/out, $T/err, status in $rc
run() {
	set +e
	"$MC" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	set -e
}

# img NAME SIZE: a fresh sparse image
img() {
	rm -f "$T/$1"
	truncate -s "$2" "$T/$1"
	echo "$T/$1"
}

sum() {
	cksum <"$1"
}

# field IMAGE KEY: the value of "KEY: value" in --show output
field() {
	"$MC" --show "$1" 2>/dev/null | sed -n "s/^$2: //p" | head -n1 || true
}

# expect_ok CASE ARGS...: make-cache must succeed
expect_ok() {
	CASE=$1
	shift
	run "$@"
	if [[ $rc -eq 0 ]]; then
		return 0
	fi
	fail "$CASE" "expected exit 0, got $rc: make-cache $*"
	return 1
}

# expect_refused CASE PATTERN IMAGES -- ARGS...
#   make-cache must exit 1, print PATTERN (extended regex) on stderr, and
#   leave every listed image byte-for-byte unchanged.
expect_refused() {
	local name=$1 pat=$2 i before=() after=() ok=1
	shift 2
	local imgs=()
	while [[ $1 != -- ]]; do
		imgs+=("$1")
		shift
	done
	shift
	CASE=$name
	for i in "${imgs[@]}"; do
		before+=("$(sum "$i")")
	done
	run "$@"
	for i in "${imgs[@]}"; do
		after+=("$(sum "$i")")
	done
	if [[ $rc -ne 1 ]]; then
		fail "$name" "expected exit 1, got $rc: make-cache $*"
		return
	fi
	if [[ -n $pat ]] && ! grep -Eq -- "$pat" "$T/err"; then
		fail "$name" "stderr does not match /$pat/"
		return
	fi
	for i in "${!imgs[@]}"; do
		if [[ ${before[$i]} != "${after[$i]}" ]]; then
			fail "$name" "${imgs[$i]} changed although make-cache refused"
			ok=0
		fi
	done
	[[ $ok -eq 1 ]] && pass "$name"
	return 0
}

# expect_field CASE IMAGE KEY VALUE
expect_field() {
	local got

	got=$(field "$2" "$3")
	if [[ $got == "$4" ]]; then
		return 0
	fi
	CASE=$1
	: >"$T/out"
	: >"$T/err"
	fail "$1" "$(basename "$2"): $3 is '$got', expected '$4'"
	return 1
}

# expect_fields CASE IMAGE KEY=VALUE...: all must match for one PASS
expect_fields() {
	local name=$1 image=$2 kv ok=1
	shift 2
	for kv in "$@"; do
		expect_field "$name" "$image" "${kv%%=*}" "${kv#*=}" || ok=0
	done
	[[ $ok -eq 1 ]] && pass "$name"
	return 0
}

set_uuid_of_output() {
	sed -n 's/^Set UUID: //p' "$T/out"
}

ZERO_UUID=00000000-0000-0000-0000-000000000000

echo "make-cache tests: $MC (in $T)"

# ---------------------------------------------------------------- basics

CASE="--help exits 0 and prints usage on stdout"
run --help
if [[ $rc -eq 0 ]] && grep -q -- "--cache-replacement-policy" "$T/out" &&
   grep -q "^Usage:" "$T/out"; then
	pass "$CASE"
else
	fail "$CASE" "rc=$rc"
fi

CASE="-h exits 0"
run -h
if [[ $rc -eq 0 ]] && grep -q "^Usage:" "$T/out"; then pass "$CASE"; else fail "$CASE" "rc=$rc"; fi

CASE="--version prints make-cache <version>"
run --version
if [[ $rc -eq 0 ]] && grep -Eq '^make-cache [0-9]+\.[0-9]+\.[0-9]+$' "$T/out"; then
	pass "$CASE"
else
	fail "$CASE" "rc=$rc"
fi

C=$(img c.img 96M)
B=$(img b.img 64M)

expect_refused "unknown option exits non-zero" "" "$C" -- --no-such-option -C "$C"
expect_refused "no devices is a usage error" "no devices" --
expect_refused "stray positional argument is refused" "unexpected argument" "$C" -- -C "$C" extra
expect_refused "missing option argument is refused" "" -- -C
expect_refused "conflicting cache modes are refused" "conflicts" "$B" -- \
	-B "$B" --writeback --writearound
expect_refused "--show with -C is a usage error" "cannot be combined" "$C" -- \
	--show "$C" -C "$C"

# ------------------------------------------------ format cache + backing

CASE="format -C and -B together"
if expect_ok "$CASE" -C "$C" -B "$B" -l mylabel --writeback --no-register; then
	SET=$(set_uuid_of_output)
	if [[ $SET =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ &&
	      $SET != "$ZERO_UUID" ]]; then
		pass "$CASE (Set UUID $SET)"
	else
		fail "$CASE" "no 'Set UUID: <uuid>' line"
	fi
	expect_fields "cache --show fields (defaults)" "$C" \
		magic=0x45484341434b4c42 version=1 dev_type=cache \
		block_size=4096 bucket_size=524288 dev_size=$((96 << 20)) \
		seq=1 label=mylabel set_uuid="$SET" replacement=lru \
		nbuckets=192 first_bucket=1 nr_journal_buckets=8 \
		feature_incompat=0x0 checksum=valid status=ok
	expect_fields "backing --show fields (set uuid recorded, clean)" "$B" \
		dev_type=backing block_size=4096 data_offset=1048576 \
		label=mylabel set_uuid="$SET" cache_mode=writeback \
		state=clean seq=1 checksum=valid status=ok
	CASE="cache and backing get distinct device uuids"
	cu=$(field "$C" uuid)
	bu=$(field "$B" uuid)
	if [[ -n $cu && -n $bu && $cu != "$bu" && $cu != "$SET" &&
	      $cu != "$ZERO_UUID" ]]; then
		pass "$CASE"
	else
		fail "$CASE" "cache $cu backing $bu set $SET"
	fi
	CASE="--show exits 0 on a valid superblock"
	run --show "$C"
	if [[ $rc -eq 0 ]]; then pass "$CASE"; else fail "$CASE" "rc=$rc"; fi
	CASE="without the module or for image files, a note says nothing was registered"
	run -C "$(img reg.img 80M)" --no-register
	if [[ $rc -eq 0 ]] && grep -q "not registered" "$T/out"; then
		pass "$CASE"
	else
		fail "$CASE" "rc=$rc"
	fi
fi

B2=$(img b2.img 64M)
if expect_ok "backing alone" -B "$B2" --no-register; then
	expect_fields "backing alone: zero set uuid, state none, writethrough" "$B2" \
		set_uuid=$ZERO_UUID "state=no cache" cache_mode=writethrough \
		data_offset=1048576 block_size=4096 status=ok
fi

C2=$(img c2.img 256M)
B3=$(img b3.img 64M)
U=5a1e4d0c-3f2b-4e8a-9c71-0123456789ab
if expect_ok "-u, -b, -w, -o, --writearound" -C "$C2" -B "$B3" -u "$U" \
		-b 1M -w 8k -o 2m --writearound --no-register; then
	expect_fields "-u/-b/-w recorded on the cache" "$C2" set_uuid=$U \
		bucket_size=1048576 block_size=8192 status=ok
	expect_fields "-u/-w/-o/--writearound recorded on the backing" "$B3" \
		set_uuid=$U block_size=8192 data_offset=2097152 \
		cache_mode=writearound state=clean status=ok
	CASE="-u is printed as the Set UUID"
	if [[ $(set_uuid_of_output) == "$U" ]]; then pass "$CASE"; else fail "$CASE"; fi
fi

for spec in "1MiB:1048576" "256K:262144" "64k:65536" "131072:131072" \
	    "2M:2097152"; do
	arg=${spec%%:*}
	want=${spec#*:}
	C3=$(img c3.img 300M)
	if expect_ok "size syntax -b $arg" -C "$C3" -b "$arg" --no-register; then
		expect_fields "size syntax -b $arg recorded as $want" "$C3" \
			bucket_size="$want"
	fi
done

# ------------------------------------------------------ replacement policy

for spec in "--cache_replacement_policy=fifo:fifo" \
	    "--cache-replacement-policy random:random" \
	    "--cache-replacement-policy=lru:lru" \
	    "--cache_replacement_policy random:random" \
	    "--cache-replacement-policy fifo:fifo"; do
	opt=${spec%:*}
	want=${spec##*:}
	C4=$(img c4.img 96M)
	# shellcheck disable=SC2086  # $opt is deliberately split
	if expect_ok "$opt" -C "$C4" $opt --no-register; then
		expect_fields "$opt recorded as $want" "$C4" replacement="$want" \
			status=ok
	fi
done
C4=$(img c4.img 96M)
expect_refused "unknown replacement policy refused" "replacement policy" "$C4" -- \
	-C "$C4" --cache-replacement-policy mru
expect_refused "unknown replacement policy refused (underscore form)" \
	"replacement policy" "$C4" -- -C "$C4" --cache_replacement_policy=LRU

# ------------------------------------------------------------ signatures

if command -v mkfs.xfs >/dev/null; then
	X=$(img x.img 320M)
	mkfs.xfs -q -f "$X"
	C5=$(img c5.img 96M)
	expect_refused "xfs signature refused without --wipe" \
		"x\.img: contains a xfs signature.*--wipe" "$X" -- -B "$X"
	expect_refused "xfs on one device refuses the whole invocation" \
		"contains a xfs signature" "$X" "$C5" -- -C "$C5" -B "$X"
	CASE="xfs signature: --wipe overrides"
	if expect_ok "$CASE" -C "$C5" -B "$X" --wipe --no-register; then
		if grep -q "wiping xfs" "$T/out" &&
		   [[ $(field "$X" status) == ok ]]; then
			pass "$CASE"
		else
			fail "$CASE" "no 'wiping xfs' message or bad superblock"
		fi
		CASE="after --wipe, libblkid finds no xfs"
		if ! command -v blkid >/dev/null; then
			skip "$CASE (no blkid)"
		elif blkid -p -o value -s TYPE "$X" 2>/dev/null | grep xfs >/dev/null; then
			fail "$CASE"
		else
			pass "$CASE"
		fi
	fi
else
	skip "xfs signature cases (mkfs.xfs not installed; install xfsprogs)"
fi

C6=$(img c6.img 96M)
expect_ok "format a cache for the reformat cases" -C "$C6" --no-register &&
	pass "$CASE"
OLD=$(field "$C6" uuid)
expect_refused "second format of a blkcache device refused" \
	"contains a blkcache signature.*--wipe" "$C6" -- -C "$C6"
expect_refused "blkcache cache device refused as a backing device too" \
	"blkcache signature" "$C6" -- -B "$C6"
CASE="second format with --wipe accepted, new uuid"
if expect_ok "$CASE" -C "$C6" --wipe --no-register; then
	NEW=$(field "$C6" uuid)
	if [[ -n $NEW && $NEW != "$OLD" && $(field "$C6" status) == ok ]]; then
		pass "$CASE"
	else
		fail "$CASE" "uuid $OLD -> $NEW"
	fi
fi

P=$(img p.img 96M)
# a minimal MBR: one Linux partition from LBA 2048, boot signature 55aa
printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\x00\x01\x00' |
	dd of="$P" bs=1 seek=446 conv=notrunc status=none
printf '\x55\xaa' | dd of="$P" bs=1 seek=510 conv=notrunc status=none
expect_refused "partition table refused without --wipe" \
	"contains a dos partition table" "$P" -- -C "$P"

if command -v mkswap >/dev/null; then
	S=$(img s.img 64M)
	mkswap "$S" >/dev/null 2>&1
	expect_refused "swap signature refused" "contains a swap signature" \
		"$S" -- -B "$S"
else
	skip "swap signature (mkswap not installed)"
fi

if command -v mkfs.ext4 >/dev/null; then
	E=$(img e.img 64M)
	mkfs.ext4 -q -F "$E" >/dev/null 2>&1
	expect_refused "ext4 signature refused" "contains a ext4 signature" \
		"$E" -- -B "$E"
else
	skip "ext4 signature (mkfs.ext4 not installed)"
fi

# ------------------------------------------------------------- bad sizes

C7=$(img c7.img 96M)
B7=$(img b7.img 64M)
expect_refused "-b 3000 (not a power of two)" "bucket size '3000'" "$C7" -- -C "$C7" -b 3000
expect_refused "-b 100k (not a power of two)" "bucket size '100k'" "$C7" -- -C "$C7" -b 100k
expect_refused "-b 0" "bucket size '0'" "$C7" -- -C "$C7" -b 0
expect_refused "-b garbage" "bucket size 'garbage'" "$C7" -- -C "$C7" -b garbage
expect_refused "-b 4kx (trailing junk)" "bucket size" "$C7" -- -C "$C7" -b 4kx
expect_refused "-b -4k (negative)" "bucket size" "$C7" -- -C "$C7" -b -4k
expect_refused "-b 2k (below 4k)" "bucket size" "$C7" -- -C "$C7" -b 2k
expect_refused "-b 2g (above 1g)" "bucket size" "$C7" -- -C "$C7" -b 2g
expect_refused "-b 99999999999999999999g (overflow)" "bucket size" "$C7" -- \
	-C "$C7" -b 99999999999999999999g
expect_refused "-w 1000 (not a power of two)" "block size '1000'" "$C7" -- -C "$C7" -w 1000
expect_refused "-w 0" "block size" "$C7" -- -C "$C7" -w 0
expect_refused "-w 256 (below 512)" "block size" "$C7" -- -C "$C7" -w 256
expect_refused "-w 128k (above 64k)" "block size" "$C7" -- -C "$C7" -w 128k
expect_refused "-b 4k -w 8k (bucket smaller than block)" "bucket size" "$C7" -- \
	-C "$C7" -b 4k -w 8k
expect_refused "-o 12345 (not a multiple of the block size)" "data offset" "$B7" -- \
	-B "$B7" -o 12345
expect_refused "-o 4k (below 8k)" "data offset" "$B7" -- -B "$B7" -o 4k
expect_refused "-o 6144 -w 2k (below 8k)" "data offset" "$B7" -- -B "$B7" -o 6144 -w 2k
expect_refused "-o garbage" "data offset" "$B7" -- -B "$B7" -o garbage
expect_refused "-o 1g on a 64M device (beyond the end)" "data_offset beyond" \
	"$B7" -- -B "$B7" -o 1g
expect_refused "-u garbage" "uuid" "$C7" -- -C "$C7" -u not-a-uuid
expect_refused "-u all zeroes" "uuid" "$C7" -- -C "$C7" -u $ZERO_UUID
expect_refused "label longer than 32 bytes" "label" "$C7" -- \
	-C "$C7" -l 123456789012345678901234567890123
L32=12345678901234567890123456789012
if expect_ok "label of exactly 32 bytes" -C "$C7" -l $L32 --no-register; then
	expect_fields "32-byte label recorded" "$C7" label=$L32 status=ok
fi

# ------------------------------------------------------ too small, dupes

TC=$(img tiny-c.img 1M)
TB=$(img tiny-b.img 1M)
expect_refused "too-small cache device refused with the core's reason" \
	"tiny-c\.img: .*too few buckets" "$TC" -- -C "$TC"
expect_refused "too-small backing device refused with the core's reason" \
	"tiny-b\.img: .*data_offset beyond the end" "$TB" -- -B "$TB"
T4=$(img tiny4k.img 4k)
expect_refused "4 KiB image refused" "tiny4k" "$T4" -- -B "$T4"
C8=$(img c8.img 96M)
expect_refused "too-small device refuses the whole invocation" "too few buckets" \
	"$C8" "$TC" -- -B "$C8" -C "$TC"

D=$(img d.img 96M)
ln -sf d.img "$T/d-link.img"
expect_refused "same device as -C and -B refused" "given twice" "$D" -- -C "$D" -B "$D"
expect_refused "same device twice as -C refused" "given twice" "$D" -- -C "$D" -C "$D"
expect_refused "same device through another path refused" "given twice" "$D" -- \
	-C "$D" -C "$T/./d.img"
expect_refused "same device through a symlink refused" "given twice" "$D" -- \
	-B "$D" -C "$T/d-link.img"
E=$(img e.img 96M)
expect_refused "a second -C is refused" "holds one cache device" "$D" "$E" -- \
	-C "$D" -C "$E"
expect_refused "a directory is refused" "not a block device or regular file" -- \
	-C "$T"
expect_refused "a character device is refused" "not a block device or regular file" -- \
	-C /dev/null
expect_refused "a missing file is refused" "No such file" -- -C "$T/missing.img"

# ---------------------------------------------------------------- --show

CASE="--show on a corrupted superblock"
K=$(img k.img 96M)
if expect_ok "$CASE" -C "$K" -l corrupt-me --no-register; then
	# flip a byte inside the checksummed area (label, offset 0x50)
	printf 'X' | dd of="$K" bs=1 seek=$((4096 + 0x50)) conv=notrunc status=none
	run --show "$K"
	if [[ $rc -ne 0 ]] && grep -qx "checksum: INVALID" "$T/out" &&
	   grep -q "^status: .*EBADMSG" "$T/out" &&
	   grep -qx "dev_type: cache" "$T/out" &&
	   grep -qx "label: Xorrupt-me" "$T/out"; then
		pass "$CASE: non-zero exit, checksum INVALID, fields still printed"
	else
		fail "$CASE" "rc=$rc"
	fi
	CASE="a corrupted blkcache superblock still refuses a reformat"
	expect_refused "$CASE" "blkcache signature" "$K" -- -C "$K"
fi

CASE="--show on a bad magic"
K2=$(img k2.img 96M)
if expect_ok "$CASE" -B "$K2" --no-register; then
	printf '\x00' | dd of="$K2" bs=1 seek=$((4096 + 8)) conv=notrunc status=none
	run --show "$K2"
	if [[ $rc -ne 0 ]] && grep -q "^status: bad magic.*EINVAL" "$T/out" &&
	   grep -q "^data_offset: 1048576" "$T/out"; then
		pass "$CASE: non-zero exit, EINVAL, fields still printed"
	else
		fail "$CASE" "rc=$rc"
	fi
fi

CASE="--show on a blank image"
Z=$(img z.img 1M)
run --show "$Z"
if [[ $rc -ne 0 ]] && grep -qx "checksum: INVALID" "$T/out" &&
   grep -q "^status: " "$T/out"; then
	pass "$CASE"
else
	fail "$CASE" "rc=$rc"
fi

CASE="--show on a truncated cache device"
K3=$(img k3.img 96M)
if expect_ok "$CASE" -C "$K3" --no-register; then
	truncate -s 32M "$K3"
	run --show "$K3"
	if [[ $rc -ne 0 ]] && grep -qx "checksum: valid" "$T/out" &&
	   grep -q "^status: .*EUCLEAN" "$T/out"; then
		pass "$CASE: checksum valid but geometry rejected"
	else
		fail "$CASE" "rc=$rc"
	fi
fi

CASE="--show on a missing file"
run --show "$T/missing.img"
if [[ $rc -ne 0 ]]; then pass "$CASE"; else fail "$CASE" "rc=$rc"; fi

CASE="--show on a file too small to hold a superblock"
run --show "$T4"
if [[ $rc -ne 0 ]]; then pass "$CASE"; else fail "$CASE" "rc=$rc"; fi

# --------------------------------------------------------------- --probe

CASE="--probe on a backing device"
P=$(img p.img 96M)
PC=$(img pc.img 96M)
if expect_ok "$CASE" -C "$PC" -B "$P" -l "my vol" --no-register; then
	puuid=$(field "$P" uuid)
	pset=$(field "$P" set_uuid)
	run --probe "$P"
	if [[ $rc -eq 0 ]] && [[ ! -s $T/err ]] &&
	   grep -qx "BLKCACHE_TYPE=backing" "$T/out" &&
	   grep -qx "BLKCACHE_UUID=$puuid" "$T/out" &&
	   grep -qx "BLKCACHE_SET_UUID=$pset" "$T/out" &&
	   grep -qx "BLKCACHE_LABEL=my_vol" "$T/out" &&
	   grep -qx 'BLKCACHE_LABEL_ENC=my\\x20vol' "$T/out" &&
	   grep -qx "ID_FS_TYPE=blkcache" "$T/out" &&
	   grep -qx "ID_FS_USAGE=other" "$T/out" &&
	   ! grep -qv '^[A-Z_]*=' "$T/out"; then
		pass "$CASE: udev KEY=value lines"
	else
		fail "$CASE" "rc=$rc"
	fi
	CASE="--probe on a cache device"
	run --probe "$PC"
	if [[ $rc -eq 0 ]] && grep -qx "BLKCACHE_TYPE=cache" "$T/out" &&
	   grep -qx "BLKCACHE_SET_UUID=$pset" "$T/out" &&
	   grep -qx "BLKCACHE_UUID=$(field "$PC" uuid)" "$T/out" &&
	   grep -qx "ID_FS_TYPE=blkcache" "$T/out"; then
		pass "$CASE"
	else
		fail "$CASE" "rc=$rc"
	fi
	CASE="--probe reads the superblock once, 4 KiB"
	if command -v strace >/dev/null; then
		strace -f -e trace=openat,read,pread64,readv,preadv \
			-o "$T/strace" "$MC" --probe "$P" >/dev/null 2>&1 || true
		# the reads after the image is opened (not the loader's)
		sed -n "\|openat(.*${P##*/}\"|,\$p" "$T/strace" >"$T/strace.dev"
		reads=$(grep -c 'pread64(3, .*, 4096, 4096) = 4096' "$T/strace.dev" || true)
		others=$(grep -c 'read' "$T/strace.dev" || true)
		if [[ $reads == 1 && $others == 1 ]]; then
			pass "$CASE"
		else
			fail "$CASE" "$reads reads of 4 KiB at 4 KiB, $others preads"
		fi
	else
		skip "$CASE (no strace)"
	fi
fi

CASE="--probe on a device that is not blkcache"
Z2=$(img z2.img 8M)
printf 'hello' | dd of="$Z2" bs=1 seek=4096 conv=notrunc status=none
run --probe "$Z2"
if [[ $rc -eq 1 && ! -s $T/out && ! -s $T/err ]]; then
	pass "$CASE: exit 1, no output"
else
	fail "$CASE" "rc=$rc"
fi

CASE="--probe on a corrupted superblock"
if [[ -n ${K:-} ]]; then
	run --probe "$K"
	if [[ $rc -eq 1 && ! -s $T/out ]]; then pass "$CASE"; else fail "$CASE" "rc=$rc"; fi
fi

CASE="--probe on a missing file"
run --probe "$T/missing.img"
if [[ $rc -eq 1 && ! -s $T/out && ! -s $T/err ]]; then pass "$CASE"; else fail "$CASE" "rc=$rc"; fi

expect_refused "--probe with -C is a usage error" "cannot be combined" "$Z2" -- \
	--probe "$Z2" -C "$Z2"

# -------------------------------------------------------------- --status

CASE="--status --json parses (module loaded or not)"
run --status --json
if [[ $rc -eq 0 ]] && python3 -m json.tool "$T/out" >/dev/null &&
   grep -q '"loaded": ' "$T/out"; then
	pass "$CASE"
else
	fail "$CASE" "rc=$rc"
fi
CASE="--status"
run --status
if [[ $rc -eq 0 && -s $T/out ]]; then pass "$CASE"; else fail "$CASE" "rc=$rc"; fi
expect_refused "--json without --status is a usage error" "goes with --status" -- --json
expect_refused "--status with -C is a usage error" "cannot be combined" "$Z2" -- \
	--status -C "$Z2"

CASE="--flush on a file is refused"
run --flush "$Z2"
if [[ $rc -eq 1 ]] && grep -q "not a block device" "$T/err"; then pass "$CASE"; else fail "$CASE" "rc=$rc"; fi
CASE="--detach of a device that is not registered is refused"
run --detach /dev/null
if [[ $rc -eq 1 ]]; then pass "$CASE"; else fail "$CASE" "rc=$rc"; fi
expect_refused "--flush with --status is a usage error" "cannot be combined" -- \
	--flush /dev/null --status

# -------------------------------------------------------------- discard

CASE="--discard on an image punches out the data area"
DC=$(img dc.img 96M)
dd if=/dev/urandom of="$DC" bs=1M count=96 conv=notrunc status=none
du_before=$(du -k "$DC" | cut -f1)
if expect_ok "$CASE" -C "$DC" --discard --no-register; then
	du_after=$(du -k "$DC" | cut -f1)
	if [[ $(field "$DC" status) == ok && $du_after -lt $((du_before / 2)) ]]; then
		pass "$CASE ($du_before KiB -> $du_after KiB)"
	else
		fail "$CASE" "$du_before KiB -> $du_after KiB"
	fi
fi

# ------------------------------------------------------ journal zeroed

CASE="the journal ring is zeroed, also when formatted again with -u"
JC=$(img jc.img 96M)
dd if=/dev/urandom of="$JC" bs=1M count=96 conv=notrunc status=none
if expect_ok "$CASE" -C "$JC" --no-register -u 0f0e0d0c-0b0a-4908-8706-050403020100; then
	bs=$(field "$JC" bucket_size)
	read -r -a jb <<<"$(field "$JC" journal_buckets)"
	nz=0
	for b in "${jb[@]}"; do
		# bytes that are not zero in the bucket
		n=$(dd if="$JC" bs="$bs" skip="$b" count=1 status=none | tr -d '\0' | wc -c)
		nz=$((nz + n))
	done
	if [[ ${#jb[@]} -ge 8 && $nz == 0 ]]; then
		pass "$CASE (${#jb[@]} buckets of $bs bytes)"
	else
		fail "$CASE" "${#jb[@]} journal buckets, $nz non-zero bytes"
	fi
fi

# ------------------------------------------- loop devices (root, opt-in)

if [[ ${BKC_TEST_LOOP:-0} == 1 ]]; then
	if [[ $(id -u) -ne 0 ]] || ! command -v losetup >/dev/null; then
		skip "loop device cases (need root and losetup)"
	else
		LI=$(img loop.img 128M)
		L=$(losetup --find --show --sector-size 4096 "$LI")
		LOOPS+=("$L")
		expect_refused "4k-sector device: -w 2k refused" \
			"not a multiple of the device's logical block size" \
			"$LI" -- -C "$L" -w 2k
		if expect_ok "4k-sector device formats" -C "$L" --no-register; then
			expect_fields "4k-sector device: block size 4096" "$L" \
				block_size=4096 status=ok
		fi
		if command -v mkfs.ext4 >/dev/null; then
			mkfs.ext4 -q -F "$L" >/dev/null 2>&1
			mkdir -p "$T/mnt"
			mount "$L" "$T/mnt"
			expect_refused "mounted device refused even with --wipe" \
				"is mounted on" "$LI" -- -C "$L" --wipe
			umount "$T/mnt"
		fi
		LF=$(img loopfile.img 96M)
		LF_DEV=$(losetup --find --show "$LF")
		LOOPS+=("$LF_DEV")
		expect_refused "image file attached to a loop device refused" \
			"attached to /dev/loop" "$LF" -- -C "$LF" --wipe
		losetup -d "$LF_DEV"
		python3 -c 'import os,sys,time; os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL); time.sleep(30)' "$L" &
		holder=$!
		sleep 1
		expect_refused "exclusively opened device refused (busy)" \
			"busy" "$LI" -- -C "$L" --wipe
		kill "$holder" 2>/dev/null || true
		wait "$holder" 2>/dev/null || true
	fi
fi

# --------------------------------------------------------------- summary

check_summary "make-cache tests"
