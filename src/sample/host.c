/* host.c: not written yet */
