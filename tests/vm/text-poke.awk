# SPDX-License-Identifier: GPL-2.0
#
# tests/vm/text-poke.awk - reads the trace of the kprobe that scripts/vm
# puts on text_poke_bp_batch() (tracefs instance bkc-text-poke; each event
# says how many CPUs were online, and its stack follows) and prints each
# patch of kernel text made while more than one CPU was online, counted
# by stack, under a heading; nothing if there was none.  Patches of a
# module being loaded (through static_call_module_notify or
# jump_label_module_notify) are left out: no CPU runs that text yet.
# Used by scripts/vm at the end of a boot and by tests/vm/boot-group after
# each test; testing.rst, "QEMU and TCG", says why.

function done() {
	if (on + 0 > 1 && !mod)
		count[on " CPUs online:" st]++
}

/ bkc_text_poke: / {
	done()
	on = $NF
	sub("online=", "", on)
	mod = 0
	st = ""
	n = 0
	next
}

/^ => / {
	if ($2 ~ /^(static_call|jump_label)_module_notify$/)
		mod = 1
	if ($2 !~ /^text_poke/ && n++ < 5)
		st = st " " $2
}

END {
	done()
	for (s in count) {
		if (!head++)
			print "kernel text was patched while another CPU ran (wrap it in one_cpu):"
		print "  " count[s] "x " s
	}
}
