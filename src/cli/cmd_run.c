/* cmd_run.c: not written yet */
