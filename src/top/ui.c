/*
 * ui.c - the loop of `jobscope top`: refresh the model from its source
 * each interval (a replayed store: when the time moves), draw it with the
 * layout into a grid the terminal's size, copy the grid to ncurses, and
 * act on keys.  --batch draws the same grid as text instead.
 *
 * ncurses is loaded with dlopen() when the interactive screen starts: the
 * agent is the same binary and must not map it (nor libtinfo).  The
 * header gives the types and constants; only functions are called (the
 * header's macros over stdscr are not: they would link its variable).
 */
#include <dlfcn.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curses.h>

#include "common/log.h"
#include "top/source.h"
#include "top/top.h"
#include "top/ui.h"

/* Every ncurses function used (each a function in libncursesw or its libtinfo). */
#define CURSES_FUNCTIONS(X)                                                                        \
	X(WINDOW *, initscr, (void))                                                               \
	X(int, endwin, (void))                                                                     \
	X(int, cbreak, (void))                                                                     \
	X(int, noecho, (void))                                                                     \
	X(int, keypad, (WINDOW *, bool))                                                           \
	X(int, curs_set, (int))                                                                    \
	X(int, set_escdelay, (int))                                                                \
	X(void, wtimeout, (WINDOW *, int))                                                         \
	X(bool, has_colors, (void))                                                                \
	X(int, start_color, (void))                                                                \
	X(int, use_default_colors, (void))                                                         \
	X(int, init_pair, (short, short, short))                                                   \
	X(int, getmaxx, (const WINDOW *))                                                          \
	X(int, getmaxy, (const WINDOW *))                                                          \
	X(int, wmove, (WINDOW *, int, int))                                                        \
	X(int, waddch, (WINDOW *, const chtype))                                                   \
	X(int, wrefresh, (WINDOW *))                                                               \
	X(int, wgetch, (WINDOW *))

/* the functions by their names with a prefix (some names are also the header's macros) */
static struct {
#define CURSES_FIELD(ret, name, args) ret(*fn_##name) args;
	CURSES_FUNCTIONS(CURSES_FIELD)
#undef CURSES_FIELD
	WINDOW **stdscr;
} cu;

static int curses_load(void)
{
	const char *name = getenv("JOBSCOPE_NCURSES_LIBRARY"); /* tests: another path */
	void *dl = dlopen(name && name[0] ? name : "libncursesw.so.6", RTLD_NOW | RTLD_LOCAL);

	if (!dl)
		return log_err(-ENOENT,
			       "top: the screen needs libncursesw6 (%s): apt-get install "
			       "libncursesw6, or use --batch",
			       dlerror());
#define CURSES_RESOLVE(ret, name, args)                                                            \
	cu.fn_##name = (ret(*) args)dlsym(dl, #name);                                              \
	if (!cu.fn_##name)                                                                         \
		goto out_missing;
	CURSES_FUNCTIONS(CURSES_RESOLVE)
#undef CURSES_RESOLVE
	cu.stdscr = dlsym(dl, "stdscr");
	if (cu.stdscr)
		return 0;
out_missing:
	log_err(0, "top: this libncursesw lacks %s", dlerror());
	dlclose(dl);
	return -ENOENT;
}

static void draw_grid(const struct top_grid *g)
{
	static const int pair_of[] = {
	    [TOP_A_BAD] = 1,
	    [TOP_A_WARN] = 2,
	    [TOP_A_GOOD] = 3,
	    [TOP_A_TITLE] = 4,
	};
	bool colors = cu.fn_has_colors(); /* asked once a draw, not once a cell */

	for (int y = 0; y < g->height; y++) {
		cu.fn_wmove(*cu.stdscr, y, 0);
		for (int x = 0; x < g->width; x++) {
			size_t at = (size_t)y * g->width + x;
			enum top_attr a = g->attr[at];
			attr_t ca = A_NORMAL;

			if (a == TOP_A_HEADER || a == TOP_A_SELECTED)
				ca = A_REVERSE;
			else if (a == TOP_A_TITLE)
				ca = A_BOLD;
			else if (a == TOP_A_DIM)
				ca = A_DIM;
			if (colors && a < sizeof(pair_of) / sizeof(pair_of[0]) && pair_of[a])
				ca |= COLOR_PAIR(pair_of[a]);
			if (y == g->height - 1 && x == g->width - 1)
				break; /* the last cell would scroll the screen */
			cu.fn_waddch(*cu.stdscr, (chtype)(unsigned char)g->cell[at] | ca);
		}
	}
}

/* the list shown now: how many rows the selection moves through */
static size_t list_len(const struct top_model *m, const struct top_view *v)
{
	size_t *idx, n;

	if (v->screen == TOP_SCREEN_JOB)
		return m->nprocs;
	if (v->screen != TOP_SCREEN_JOBS || !(idx = malloc((m->njobs + 1) * sizeof(*idx))))
		return 0;
	n = top_view_jobs(m, v, idx);
	free(idx);
	return n;
}

/* the key of the job selected on the jobs screen, "" when none */
static void selected_key(const struct top_model *m, const struct top_view *v, char *buf,
			 size_t size)
{
	size_t *idx = malloc((m->njobs + 1) * sizeof(*idx)), n;

	buf[0] = '\0';
	if (!idx)
		return;
	n = top_view_jobs(m, v, idx);
	if (n)
		snprintf(buf, size, "%s", m->jobs[idx[v->sel < n ? v->sel : n - 1]].key);
	free(idx);
}

/* A key typed into the prompt; true when the prompt ended. */
static bool prompt_key(struct top_view *v, int ch)
{
	size_t len = strlen(v->prompt);

	if (ch == 27) {
		v->prompt_kind = 0;
		return true;
	}
	if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
		top_strcpy(v->prompt_kind == '/' ? v->search : v->user,
			   v->prompt_kind == '/' ? sizeof(v->search) : sizeof(v->user), v->prompt);
		v->prompt_kind = 0;
		v->sel = 0;
		return true;
	}
	if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && len)
		v->prompt[len - 1] = '\0';
	else if (ch >= 0x20 && ch < 0x7f && len + 1 < sizeof(v->prompt))
		v->prompt[len] = (char)ch, v->prompt[len + 1] = '\0';
	return false;
}

/*
 * One key on the view: returns 1 to quit, 2 when the source must be
 * read again (a job opened or closed, a replay step), else 0.
 */
int top_ui_key(struct top_source *src, const struct top_model *m, struct top_view *v, int ch,
	       int page)
{
	size_t n = list_len(m, v);

	if (v->prompt_kind) {
		prompt_key(v, ch);
		return 0;
	}
	if (v->screen == TOP_SCREEN_HELP) {
		v->screen = v->back;
		return ch == 'q' ? 1 : 0;
	}
	switch (ch) {
	case 'q':
		return 1;
	case 'h':
	case '?':
		v->back = v->screen;
		v->screen = TOP_SCREEN_HELP;
		return 0;
	case KEY_UP:
	case 'k':
		if (v->sel > 0)
			v->sel = v->sel < n ? v->sel - 1 : (n ? n - 1 : 0);
		return 0;
	case KEY_DOWN:
	case 'j':
		if (v->sel + 1 < n)
			v->sel++;
		return 0;
	case KEY_PPAGE:
		v->sel = v->sel > (size_t)page ? v->sel - page : 0;
		return 0;
	case KEY_NPAGE:
		v->sel = n && v->sel + page < n ? v->sel + page : (n ? n - 1 : 0);
		return 0;
	case KEY_HOME:
		v->sel = 0;
		return 0;
	case 's':
		v->sort = (v->sort + 1) % TOP_SORT__COUNT;
		return 0;
	case 'S':
		v->ascending = !v->ascending;
		return 0;
	case '/':
	case 'u':
		if (v->screen != TOP_SCREEN_JOBS)
			return 0;
		v->prompt_kind = ch;
		v->prompt[0] = '\0';
		return 0;
	case '[':
	case ']':
		if (!src->be->step)
			return 0;
		src->be->step(src, ch == '[' ? -1 : 1);
		return 2;
	case 'f': /* the selection stays on the job as the list moves; its screen stays too */
		if (v->screen == TOP_SCREEN_JOB) {
			v->follow = !v->follow;
		} else if (v->screen == TOP_SCREEN_JOBS) {
			char key[TOP_KEY_MAX];

			selected_key(m, v, key, sizeof(key));
			v->follow = key[0] && !(v->follow && strcmp(key, v->open_key) == 0);
			top_strcpy(v->open_key, sizeof(v->open_key), key);
		}
		return 0;
	case '\n':
	case '\r':
	case KEY_ENTER:
		if (v->screen != TOP_SCREEN_JOBS)
			return 0;
		selected_key(m, v, v->open_key, sizeof(v->open_key));
		if (!v->open_key[0])
			return 0;
		v->screen = TOP_SCREEN_JOB;
		v->sel = 0;
		return 2;
	case 27:
	case KEY_BACKSPACE:
	case 127:
	case 8:
	case KEY_LEFT:
		if (v->screen == TOP_SCREEN_JOB && !src->job[0]) {
			v->screen = TOP_SCREEN_JOBS;
			if (!v->follow)
				v->open_key[0] = '\0';
			v->sel = 0;
			top_view_follow(m, v);
			return 2;
		}
		return 0;
	default:
		return 0;
	}
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int top_batch(struct top_source *src, struct top_view *v, int width, int height, int iterations,
	      int interval_ms, FILE *out)
{
	struct top_model m;
	struct top_grid g;
	int ret = 0;

	if (top_grid_init(&g, width, height))
		return -ENOMEM;
	top_model_init(&m);
	for (int i = 0; i < iterations; i++) {
		struct timespec ts = {interval_ms / 1000, (interval_ms % 1000) * 1000000L};

		if (i)
			nanosleep(&ts, NULL);
		ret = src->be->load(src, &m, v->screen == TOP_SCREEN_JOB ? v->open_key : NULL);
		top_render(&m, v, &g);
		top_grid_print(&g, out);
		if (i + 1 < iterations)
			fputs("\f\n", out);
		fflush(out);
	}
	top_model_release(&m);
	top_grid_release(&g);
	/* the screen says what is wrong; the exit status says the source could not be used */
	return ret;
}

int top_interactive(struct top_source *src, struct top_view *v, int interval_ms)
{
	struct top_model m;
	struct top_grid g = {0};
	int64_t next = 0;
	bool dirty = true, fresh = true;
	FILE *quiet;
	int ret = 0;

	ret = curses_load();
	if (ret)
		return ret;
	setlocale(LC_ALL, "");
	/* messages would scribble over the screen: the status line says what is wrong */
	quiet = fopen("/dev/null", "w");
	if (quiet)
		log_set_file(quiet);
	if (!cu.fn_initscr()) {
		ret = -ENOTTY;
		goto out_log;
	}
	cu.fn_cbreak();
	cu.fn_noecho();
	cu.fn_keypad(*cu.stdscr, TRUE);
	cu.fn_curs_set(0);
	cu.fn_set_escdelay(25);
	cu.fn_wtimeout(*cu.stdscr, 100);
	v->color = cu.fn_has_colors() && !getenv("NO_COLOR");
	if (v->color) {
		cu.fn_start_color();
		cu.fn_use_default_colors();
		cu.fn_init_pair(1, COLOR_RED, -1);
		cu.fn_init_pair(2, COLOR_YELLOW, -1);
		cu.fn_init_pair(3, COLOR_GREEN, -1);
		cu.fn_init_pair(4, COLOR_CYAN, -1);
	}
	top_model_init(&m);
	for (;;) {
		int ch, w, h, act;

		if (fresh || (!src->be->step && mono_ms() >= next)) {
			src->be->load(src, &m,
				      v->screen != TOP_SCREEN_JOBS || v->back == TOP_SCREEN_JOB
					  ? (v->open_key[0] ? v->open_key : NULL)
					  : NULL);
			next = mono_ms() + interval_ms;
			fresh = false;
			dirty = true;
		}
		h = cu.fn_getmaxy(*cu.stdscr);
		w = cu.fn_getmaxx(*cu.stdscr);
		if (g.width != w || g.height != h) {
			top_grid_release(&g);
			if (top_grid_init(&g, w, h)) {
				ret = -ENOMEM;
				break;
			}
			dirty = true;
		}
		if (dirty) {
			top_view_follow(&m, v);
			top_render(&m, v, &g);
			draw_grid(&g);
			cu.fn_wrefresh(*cu.stdscr);
			dirty = false;
		}
		ch = cu.fn_wgetch(*cu.stdscr);
		if (ch == ERR)
			continue;
		dirty = true;
		if (ch == KEY_RESIZE)
			continue;
		act = top_ui_key(src, &m, v, ch, h > 6 ? h - 6 : 1);
		if (act == 1)
			break;
		if (act == 2)
			fresh = true;
	}
	cu.fn_endwin();
	top_model_release(&m);
	top_grid_release(&g);
out_log:
	if (quiet) {
		log_set_file(stderr);
		fclose(quiet);
	}
	return ret;
}
