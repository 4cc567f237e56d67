/* cmd_report.c: not written yet */
