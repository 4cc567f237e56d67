/* summary.c: not written yet */
