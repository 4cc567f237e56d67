/* proc.c: not written yet */
