/* cmd_runs.c: not written yet */
