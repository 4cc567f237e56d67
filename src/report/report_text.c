/* report_text.c: not written yet */
