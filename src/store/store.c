/* store.c: not written yet */
