# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# tests/fuzz/lib.sh - helpers shared by tests/fuzz/run (the short CI run)
# and scripts/fuzz-campaign (the long runs that grow tests/fuzz/corpus/).
#
#   . "$TOP/tests/fuzz/lib.sh"
#   fuzz_build DIR target...     DIR/gen_seeds, DIR/seeds/<target>/ and
#                                DIR/fuzz_<target>
#   fuzz_exec DIR target LOG libFuzzer-args...
#                                runs DIR/fuzz_<target> in DIR with the
#                                sanitizer options and the limits of every
#                                run; all output goes to LOG
#   fuzz_execs LOG, fuzz_cov LOG executions and last coverage of a run
#   fuzz_failure target LOG artifact...
#                                the sanitizer's lines of a failed run and
#                                each artifact as hex, on stderr
#
# CLANG=<compiler> overrides clang.

FUZZ_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FUZZ_TOP=$(cd "$FUZZ_HERE/../.." && pwd)
# Used by the scripts that source this file:
# shellcheck disable=SC2034
FUZZ_CORPUS=$FUZZ_HERE/corpus		# the committed corpus, per target
# shellcheck disable=SC2034
FUZZ_TARGETS=(sb node journal table)

fuzz_build() {
	local dir=$1 t cc=${CLANG:-clang} core=$FUZZ_TOP/drivers/blkcache/core
	shift
	command -v "$cc" >/dev/null || { echo "fuzz: $cc not found" >&2; return 2; }
	local inc=(-I"$FUZZ_TOP/include/uapi" -I"$FUZZ_TOP/tools/lib" -I"$core"
		   -I"$FUZZ_HERE")
	local cflags=(-std=gnu11 -g -O1 -D_GNU_SOURCE -Wall -Wno-unused-parameter
		      -Wno-missing-field-initializers -Wno-c2x-extensions "${inc[@]}")
	local san=("-fsanitize=fuzzer,address,undefined" -fno-sanitize-recover=all)
	local src=("$core"/sb.c "$core"/key.c "$core"/bset.c "$core"/journal.c
		   "$core"/alloc.c "$core"/policy.c "$core"/table.c
		   "$FUZZ_TOP"/tools/lib/crc32c.c)

	# one compiler per program, all at once (each is single-threaded)
	local pids=() p rc=0
	"$cc" "${cflags[@]}" -fsanitize=address,undefined -o "$dir/gen_seeds" \
		"$FUZZ_HERE/gen_seeds.c" "${src[@]}" &
	pids+=($!)
	for t in "$@"; do
		"$cc" "${cflags[@]}" "${san[@]}" -o "$dir/fuzz_$t" \
			"$FUZZ_HERE/fuzz_$t.c" "${src[@]}" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || rc=$?
	done
	[ "$rc" = 0 ] || return "$rc"
	"$dir/gen_seeds" "$dir/seeds"
}

fuzz_exec() {
	local dir=$1 t=$2 log=$3
	shift 3
	(cd "$dir" && ASAN_OPTIONS=detect_leaks=1 \
	    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    "./fuzz_$t" -max_len=65600 -rss_limit_mb=2048 "$@") >"$log" 2>&1
}

fuzz_execs() {
	sed -n 's/^stat::number_of_executed_units: *//p' "$1" | tail -n1
}

fuzz_cov() {
	grep -o 'cov: [0-9]* ft: [0-9]*' "$1" | tail -n1 || true
}

fuzz_failure() {
	local t=$1 log=$2 f
	shift 2
	grep -E 'ERROR|SUMMARY|runtime error|fuzz_check|==[0-9]+==' "$log" |
		head -20 >&2 || tail -30 "$log" >&2
	for f in "$@"; do
		[ -e "$f" ] || continue
		# the input itself, so that a CI log is enough to reproduce
		# (od folds repeated lines into a '*')
		echo "fuzz: $t input $(basename "$f") ($(stat -c %s "$f") bytes):" >&2
		od -A x -t x1 "$f" | head -n 80 >&2
	done
}
