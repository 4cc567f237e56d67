/* cli_common.c: not written yet */
