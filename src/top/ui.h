/*
 * ui.h - the loops of `jobscope top`: interactive (ncurses) and --batch
 * (the screen as text, like `top -b`).  Each returns 0 or -errno.
 */
#ifndef JOBSCOPE_TOP_UI_H
#define JOBSCOPE_TOP_UI_H

#include <stdio.h>

#include "top/source.h"
#include "top/top.h"

int top_interactive(struct top_source *src, struct top_view *v, int interval_ms);
/* The screens printed all the same; 0, or the last read's -errno when the source could not be read.
 */
int top_batch(struct top_source *src, struct top_view *v, int width, int height, int iterations,
	      int interval_ms, FILE *out);
/* a key on the view (exposed for the tests): 1 quit, 2 read the source again, else 0 */
int top_ui_key(struct top_source *src, const struct top_model *m, struct top_view *v, int ch,
	       int page);

#endif
