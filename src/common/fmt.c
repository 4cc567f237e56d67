/* fmt.c: not written yet */
