// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>

static int __init bkc_init(void)
{
	return 0;
}

static void __exit bkc_exit(void)
{
}

module_init(bkc_init);
module_exit(bkc_exit);
MODULE_LICENSE("GPL");
