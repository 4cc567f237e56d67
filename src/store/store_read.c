/* store_read.c: not written yet */
