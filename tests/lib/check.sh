# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# tests/lib/check.sh - PASS/FAIL/SKIP lines and their counts, for the
# host-side test scripts (tests/tools, tests/install).  A script may
# define fail_detail, which fail calls to print more about the failure.

npass=0
nfail=0
nskip=0
FAILED=()

pass() {
	echo "PASS: $1"
	npass=$((npass + 1))
}

# fail NAME [DETAIL...]
fail() {
	local name=$1 l
	shift
	echo "FAIL: $name"
	for l in "$@"; do
		echo "      $l"
	done
	if declare -F fail_detail >/dev/null; then
		fail_detail
	fi
	nfail=$((nfail + 1))
	FAILED+=("$name")
}

skip() {
	echo "SKIP: $1"
	nskip=$((nskip + 1))
}

# check_summary WHAT: the counts; returns 1 if anything failed.
check_summary() {
	echo
	echo "$1: $npass passed, $nfail failed, $nskip skipped"
	if [[ $nfail -ne 0 ]]; then
		printf 'failed: %s\n' "${FAILED[@]}"
		return 1
	fi
	return 0
}
