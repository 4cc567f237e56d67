/*
 * cairo_dl.h - cairo loaded with dlopen() on the first plot.
 *
 * A node daemon that never plots must not map cairo and what it pulls in
 * (pixman, X11, xcb, fontconfig, freetype, png, expat: about 20 libraries),
 * so the binary does not link it: the cairo headers give the types, and
 * cairo_dl_load() resolves the few functions plot.c calls into `cairo_fn`.
 *
 * cairo_dl_load() returns 0 (also on later calls) or -ENOENT after logging
 * why, naming the package to install.  $JOBSCOPE_CAIRO_LIBRARY, when set,
 * names the library to load instead of libcairo.so.2 (tests).  The table is filled once and never
 * unloaded.  Not thread-safe (plots are drawn by the CLI's one thread).
 */
#ifndef JOBSCOPE_CAIRO_DL_H
#define JOBSCOPE_CAIRO_DL_H

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>

/* Every cairo function plot.c uses, without its cairo_ prefix. */
#define CAIRO_DL_FUNCTIONS(X)                                                                      \
	X(arc)                                                                                     \
	X(clip)                                                                                    \
	X(create)                                                                                  \
	X(destroy)                                                                                 \
	X(fill)                                                                                    \
	X(image_surface_create)                                                                    \
	X(line_to)                                                                                 \
	X(move_to)                                                                                 \
	X(new_sub_path)                                                                            \
	X(paint)                                                                                   \
	X(pdf_surface_create_for_stream)                                                           \
	X(rectangle)                                                                               \
	X(restore)                                                                                 \
	X(save)                                                                                    \
	X(select_font_face)                                                                        \
	X(set_dash)                                                                                \
	X(set_font_size)                                                                           \
	X(set_line_join)                                                                           \
	X(set_line_width)                                                                          \
	X(set_source_rgb)                                                                          \
	X(set_source_rgba)                                                                         \
	X(show_page)                                                                               \
	X(show_text)                                                                               \
	X(status)                                                                                  \
	X(status_to_string)                                                                        \
	X(stroke)                                                                                  \
	X(surface_destroy)                                                                         \
	X(surface_finish)                                                                          \
	X(surface_status)                                                                          \
	X(surface_write_to_png_stream)                                                             \
	X(svg_surface_create_for_stream)                                                           \
	X(text_extents)

struct cairo_dl {
#define CAIRO_DL_POINTER(name) __typeof__(cairo_##name) *name;
	CAIRO_DL_FUNCTIONS(CAIRO_DL_POINTER)
#undef CAIRO_DL_POINTER
};

/* Filled by cairo_dl_load(); call nothing in it before that returned 0. */
extern struct cairo_dl cairo_fn;

int cairo_dl_load(void);

/*
 * plot.c: a picture of w x h pixels (points in PDF and SVG), drawn by
 * draw(cr, arg), written to path in the format its extension names (.png,
 * .pdf or .svg, any case).  Loads cairo; 0 or -errno after logging why
 * (-EINVAL for another extension), and then no file is left at path.
 */
typedef void plot_draw_fn(cairo_t *cr, const void *arg);
int plot_draw_write(const char *path, int w, int h, plot_draw_fn *draw, const void *arg);

#endif
