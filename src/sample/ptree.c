/* ptree.c: not written yet */
