#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
#
# Issue 7 part 4, corrupt metadata, in one boot.  A small writeback cache
# (a 16 MiB dm-linear slice of the SSD: 256 buckets and nodes of 64 KiB,
# 8 journal buckets, 512-byte blocks, so that 10 MiB of 512-byte random
# writes make a two-level tree of about 16 leaves) over md0 holds
# 10 MiB of dirty data, all of it covered by a completed flush, and is
# stopped.  Its root is the only interior node, so the same is done
# again with 4 KiB buckets (nodes of 4 KiB, a three-level tree) for the
# interior node below the root.  A second set of the same
# geometry (its own set uuid, the first scratch disk as backing device)
# gives the "valid block of another set".  tests/vm/metamap finds the
# regions: the superblock, every journal bucket, the btree root, an
# interior node, a leaf and the first bucket of the bucket table.  For
# every region x damage (random bytes over all of it; one bit flipped,
# in a journal bucket's entries or in a node's newest bset; the other
# set's block of the same kind copied over it): restore the pristine
# cache and md0, damage the region, register the cache device and md0,
# and classify:
#   refused    the cache device was refused, with a blkcache line in
#              dmesg; /dev/cache0 does not appear (md0 waits for its set);
#   recovered  it registered; all 10 MiB read back exactly through
#              /dev/cache0 (md0 holds none of it, so a lost key shows).
# An oops or warning, a hang (60 s per step), a refusal without a dmesg
# line or any wrong data fails the test.  Prints a table of the outcomes
# and "corrupt: N cases: R refused, V recovered, W wrong data".
# shellcheck disable=SC2119  # make_raid5 takes no arguments here
. "$BKC_REPO/tests/vm/lib.sh"
. "$BKC_REPO/tests/vm/verify-lib.sh"

cd /tmp
METAMAP=$BKC_REPO/tests/vm/metamap
[ -x "$METAMAP" ] || fail "$METAMAP missing: run make on the host"

SLICE_MB=16		# each cache device
DATA_MB=10		# dirty data, in 512-byte random writes
SEED=${T32_SEED:-32}	# bit positions; random bytes come from urandom
RANDOM=$SEED
STEP=60			# seconds any one step may take before it is a hang
MAIN=t32main
OTHER=t32other
MAIN_DEV=/dev/mapper/$MAIN
OTHER_DEV=/dev/mapper/$OTHER
FORMAT=()		# make-cache options of both sets (setup)
read -r -a scratch <<<"$BKC_SCRATCH"
OTHER_BDEV=${scratch[0]}

# ---- helpers ---------------------------------------------------------------

# fio_data NAME SEED [fio options]: 512-byte random writes with a crc32c
# pattern over the first DATA_MB of /dev/cache0, each block once.
fio_data() {
	local name=$1 seed=$2
	shift 2
	fio --output="/tmp/fio-$name.out" --eta=never --name="$name" \
		--filename=/dev/cache0 --direct=1 --ioengine=libaio --iodepth=16 \
		--rw=randwrite --bs=512 --offset=0 --size="${DATA_MB}m" \
		--randrepeat=1 --randseed="$seed" --verify=crc32c \
		--verify_fatal=1 --verify_state_save=0 "$@"
}

# timed SEC CMD...: run CMD; a CMD still running after SEC seconds is a
# hang (blocked tasks go to the console, the test fails).  Returns CMD's
# status.
timed() {
	local t=$1 pid i
	shift
	"$@" &
	pid=$!
	for ((i = 0; i < t * 10; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			return
		fi
		sleep 0.1
	done
	echo w >/proc/sysrq-trigger 2>/dev/null || true
	for pid in $(pgrep blkcache); do
		echo "$(cat "/proc/$pid/comm") ($pid):"
		cat "/proc/$pid/stack" 2>/dev/null
	done >&2
	io_state >&2 || true
	fail "hang: '$*' still running after ${t}s (case ${CASE:-setup})"
}

register_dev() {
	echo "$1" >/sys/fs/blkcache/register 2>/dev/null
}

# stop_dev PATH: write 1 to the stop file PATH, wait for its directory to go.
stop_dev() {
	echo 1 >"$1" || fail "writing $1 refused (case ${CASE:-setup})"
	wait_gone "${1%/stop}" $STEP
}

# stop_everything: /dev/cache0 (or md0 waiting for its set), then every
# registered cache set, whatever its uuid.
stop_everything() {
	local s
	if [ -e /dev/cache0 ]; then
		timed $STEP stop_dev "$BATTR/stop"
		wait_gone /dev/cache0 $STEP
	elif [ -e /sys/block/md0/cache/stop ]; then
		timed $STEP stop_dev /sys/block/md0/cache/stop
	fi
	for s in /sys/fs/blkcache/*/stop; do
		[ -e "$s" ] || continue
		timed $STEP stop_dev "$s"
	done
}

# kmsg_mark TEXT: a line in the kernel log to find a case's messages by.
kmsg_mark() {
	echo "t32: $*" >/dev/kmsg
}

# kmsg_since TEXT: the kernel log after the kmsg_mark TEXT line.
kmsg_since() {
	dmesg | sed -n "/t32: $1\$/,\$p" | sed 1d
}

# map_get MAP NAME: "offset length" of region NAME in a metamap output.
map_get() {
	local loc
	loc=$(sed -n "s/^$2 //p" "$1")
	[[ $loc =~ ^[0-9]+\ [0-9]+$ ]] || fail "metamap printed no region $2 in $1"
	echo "$loc"
}

# sum_to FILE: region_sum of the data through /dev/cache0 into FILE.
sum_to() {
	region_sum /dev/cache0 0 $((DATA_MB << 20)) >"$1"
}

# flip_bit FILE POS BIT: flip one bit of a file in place.
flip_bit() {
	local f=$1 pos=$2 bit=$3 b
	b=$(od -An -tu1 -j "$pos" -N1 "$f")
	b=$((${b// /} ^ (1 << bit)))
	# shellcheck disable=SC2059  # the format is the byte
	printf "$(printf '\\%03o' "$b")" |
		dd of="$f" bs=1 seek="$pos" conv=notrunc status=none
}

# rand32: a 30-bit pseudo-random number (from $RANDOM, seeded by SEED).
rand32() {
	echo $(((RANDOM << 15) | RANDOM))
}

# ---- the two sets ---------------------------------------------------------

# setup FORMAT...: both sets formatted with make-cache options FORMAT, the
# data written, the pristine images taken (/tmp/other.img, /tmp/pristine.img,
# /tmp/md0.img) and mapped (/tmp/other.map, /tmp/main.map); sets main_set,
# sum, doff and depth.
setup() {
	local t0=$SECONDS out
	FORMAT=("$@")

	out=$("$make_cache" --wipe "${FORMAT[@]}" -C $OTHER_DEV -B "$OTHER_BDEV") ||
		fail "make-cache of the other set failed: $out"
	BKC_SET=$(sed -n 's/^Set UUID: *//p' <<<"$out")
	other_set=$BKC_SET
	wait_for /dev/cache0
	echo 0 >"$BATTR/writeback_running"
	timed 120 fio_data other 2 --do_verify=0 --end_fsync=1 ||
		{ cat /tmp/fio-other.out; fail "writing the other set's data failed"; }
	stop_all
	"$METAMAP" -v $OTHER_DEV >/tmp/other.map || fail "metamap of the other set failed"
	dd if=$OTHER_DEV of=/tmp/other.img bs=1M iflag=direct status=none
	log "other set $other_set: $(tr '\n' ' ' </tmp/other.map)"

	# the set under test

	CACHE_DEV=$MAIN_DEV new_cache "${FORMAT[@]}"
	main_set=$BKC_SET
	echo 0 >"$BATTR/writeback_running"
	timed 120 fio_data main 1 --do_verify=0 --end_fsync=1 ||
		{ cat /tmp/fio-main.out; fail "writing the data failed"; }
	timed 120 fio_data main 1 --verify_only ||
		{ cat /tmp/fio-main.out; fail "the data does not verify before the stop"; }
	want_dirty=$(dirty_sectors)
	[ "$want_dirty" = $((DATA_MB * 2048)) ] ||
		fail "$DATA_MB MiB of random writes made $want_dirty dirty sectors"
	sum=$(region_sum /dev/cache0 0 $((DATA_MB << 20)))
	doff=$(data_offset)
	stop_all
	"$METAMAP" -v $MAIN_DEV >/tmp/main.map || fail "metamap of the cache failed"
	log "set $main_set: $(tr '\n' ' ' </tmp/main.map)"
	dd if=$MAIN_DEV of=/tmp/pristine.img bs=1M iflag=direct status=none
	# md0's superblock and the data area the cache covers: never written back
	dd if=/dev/md0 of=/tmp/md0.img bs=1M count=$(((doff >> 20) + SLICE_MB)) \
		iflag=direct status=none
	cmp -s -i "$doff:0" -n $((DATA_MB << 20)) /tmp/md0.img /dev/zero ||
		fail "md0 already holds some of the cached data"
	depth=$(sed -n 's/^depth //p' /tmp/main.map)
	log "setup done in $((SECONDS - t0))s: depth $depth, $want_dirty dirty sectors"
}

bkc_load
make_raid5
need_module dm_mod
sz=$((SLICE_MB * 2048))
dmsetup create $MAIN --table "0 $sz linear $BKC_SSD 0" ||
	fail "dmsetup create $MAIN failed"
dmsetup create $OTHER --table "0 $sz linear $BKC_SSD $sz" ||
	fail "dmsetup create $OTHER failed"
wait_for $MAIN_DEV
wait_for $OTHER_DEV

# ---- one case --------------------------------------------------------------

NCASES=0
NREFUSED=0
NRECOVERED=0
NWRONG=0
MARK=0
WRONG=()
BASE_DIRTY=
declare -A OUTCOME

# run_case REGION DAMAGE: restore, damage, register, classify.
run_case() {
	local region=$1 damage=$2 off len ooff olen clen pos bit rc lines
	local res dd_line st loc dirty=
	CASE="$region/$damage"
	cp /tmp/pristine.img /tmp/work.img
	if [ "$damage" != none ]; then
		loc=$(map_get /tmp/main.map "$region")
		read -r off len <<<"$loc"
	fi
	case $damage in
	none) ;;
	random)
		dd if=/dev/urandom of=/tmp/work.img bs="$len" count=1 \
			seek="$off" oflag=seek_bytes iflag=fullblock \
			conv=notrunc status=none
		;;
	bitflip)
		# in a journal bucket somewhere in its entries, in a node
		# somewhere in its newest bset (random bytes hit the first)
		for sub in used last; do
			grep -q "^${region}_$sub " /tmp/main.map || continue
			loc=$(map_get /tmp/main.map "${region}_$sub")
			read -r off len <<<"$loc"
		done
		pos=$((off + $(rand32) % len))
		bit=$((RANDOM % 8))
		flip_bit /tmp/work.img "$pos" "$bit"
		CASE+=" (byte $((pos - off)) bit $bit)"
		;;
	other)
		# the other set's block of the same kind; its interior node
		# if it has one, else its root (interior too at depth 2)
		if grep -q "^$region [0-9]" /tmp/other.map; then
			loc=$(map_get /tmp/other.map "$region")
		else
			loc=$(map_get /tmp/other.map root)
		fi
		read -r ooff olen <<<"$loc"
		clen=$((olen > len ? olen : len))
		dd if=/tmp/other.img of=/tmp/work.img bs="$clen" count=1 \
			skip="$ooff" seek="$off" iflag=skip_bytes \
			oflag=seek_bytes conv=notrunc status=none
		;;
	*) fail "unknown damage $damage" ;;
	esac
	NCASES=$((NCASES + 1))
	dd if=/tmp/work.img of=$MAIN_DEV bs=1M oflag=direct conv=fsync status=none
	dd if=/tmp/md0.img of=/dev/md0 bs=1M oflag=direct conv=fsync status=none

	MARK=$((MARK + 1))
	kmsg_mark "mark $MARK"
	rc=0
	timed $STEP register_dev $MAIN_DEV || rc=$?
	lines=$(kmsg_since "mark $MARK" | grep 'blkcache: ' || true)
	check_dmesg || fail "$CASE: the kernel complained registering the cache"
	if [ "$rc" != 0 ]; then
		[ -n "$lines" ] || fail "$CASE: the cache device was refused without a dmesg line"
		for st in /sys/fs/blkcache/*/stop; do
			[ ! -e "$st" ] || fail "$CASE: refused, but ${st%/stop} exists"
		done
		dd_line=$(head -n1 <<<"$lines" | sed 's/^\[[ 0-9.]*\] *//')
		res=refused
	else
		res=registered
		dirty=$(cat "/sys/fs/blkcache/$main_set/dirty_data" 2>/dev/null || echo none)
	fi
	rc=0
	timed $STEP register_dev /dev/md0 || rc=$?
	check_dmesg || fail "$CASE: the kernel complained registering md0"
	if [ "$res" = registered ]; then
		for ((i = 0; i < 300; i++)); do
			[ -e /dev/cache0 ] && break
			sleep 0.1
		done
	fi
	if [ -e /dev/cache0 ]; then
		echo 0 >"$BATTR/writeback_running" 2>/dev/null || true
		rm -f /tmp/sum
		timed $STEP sum_to /tmp/sum || fail "$CASE: reading /dev/cache0 failed"
		if [ "$(cat /tmp/sum)" = "$sum" ]; then
			[ "$res" = registered ] || fail "$CASE: refused, yet /dev/cache0 serves md0"
			res=recovered
		else
			res=wrong
		fi
	elif [ "$res" = registered ]; then
		res=wrong
		log "$CASE: the cache registered, but no /dev/cache0 (md0: rc $rc)"
	fi
	check_dmesg || fail "$CASE: the kernel complained reading the data"
	case $res in
	refused)
		NREFUSED=$((NREFUSED + 1))
		log "$CASE: refused: $dd_line ($(wc -l <<<"$lines") lines)"
		;;
	recovered)
		NRECOVERED=$((NRECOVERED + 1))
		[ -n "$BASE_DIRTY" ] || BASE_DIRTY=$dirty
		if [ "$dirty" = "$BASE_DIRTY" ]; then
			log "$CASE: recovered, data exact"
		else
			log "$CASE: recovered, data exact, set dirty_data $dirty (undamaged: $BASE_DIRTY)"
		fi
		;;
	wrong)
		NWRONG=$((NWRONG + 1))
		WRONG+=("$CASE")
		log "$CASE: WRONG DATA; kernel log of the case:"
		kmsg_since "mark $MARK" | grep 'blkcache' | sed 's/^/    /' || true
		cp /tmp/work.img "$BKC_RESULTS/t32-case$NCASES.img"
		log "$CASE: the damaged cache image is $BKC_RESULTS/t32-case$NCASES.img"
		;;
	esac
	OUTCOME["$region/$damage"]=$res
	stop_everything
	check_dmesg || fail "$CASE: the kernel complained stopping the cache"
	CASE=
}

# base_case: the undamaged cache first, which must come back whole (not
# counted among the cases).
base_case() {
	BASE_DIRTY=
	run_case base none
	[ "${OUTCOME[base/none]}" = recovered ] ||
		fail "the undamaged cache did not recover: ${OUTCOME[base/none]}"
	NCASES=$((NCASES - 1))
	NRECOVERED=$((NRECOVERED - 1))
}

DAMAGES=(random bitflip other)

# ---- a two-level tree of 64 KiB nodes: every region but an interior node --

setup --writeback -b 64k -w 512
[ "$depth" -ge 2 ] || fail "the tree has depth $depth; root and leaf need more"
base_case
REGIONS=(sb)
nj=$(grep -c '^journal[0-9]* ' /tmp/main.map)
for ((j = 0; j < nj; j++)); do
	REGIONS+=("journal$j")
done
REGIONS+=(root)
grep -q '^leaf none' /tmp/main.map || REGIONS+=(leaf)
grep -q '^table none' /tmp/main.map || REGIONS+=(table)
newest=$(sed -n 's/^journal_newest //p' /tmp/main.map)
depth1=$depth

t1=$SECONDS
for r in "${REGIONS[@]}"; do
	for d in "${DAMAGES[@]}"; do
		run_case "$r" "$d"
	done
done

# ---- a three-level tree of 4 KiB nodes: an interior node below the root ---

setup --writeback -b 4k -w 512
[ "$depth" -ge 3 ] ||
	fail "4 KiB nodes made a tree of depth $depth: no interior node below the root"
grep -q '^interior [0-9]' /tmp/main.map || fail "metamap found no interior node"
base_case
for d in "${DAMAGES[@]}"; do
	run_case interior "$d"
done
REGIONS+=(interior)

# ---- the table -------------------------------------------------------------

printf 'corrupt: %-12s %-10s %-10s %-10s\n' region "${DAMAGES[@]}"
for r in "${REGIONS[@]}"; do
	name=$r
	[ "$r" != "journal$newest" ] || name="$r*"
	printf 'corrupt: %-12s %-10s %-10s %-10s\n' "$name" \
		"${OUTCOME[$r/random]}" "${OUTCOME[$r/bitflip]}" "${OUTCOME[$r/other]}"
done
echo "corrupt: (* the journal bucket with the newest entry; depth $depth1 with" \
	"64 KiB nodes, $depth with 4 KiB nodes for the interior node;" \
	"$((SECONDS - t1))s for the cases)"
echo "corrupt: $NCASES cases: $NREFUSED refused, $NRECOVERED recovered, $NWRONG wrong data"
[ "$NWRONG" = 0 ] || fail "wrong data after: ${WRONG[*]}"
bkc_unload
