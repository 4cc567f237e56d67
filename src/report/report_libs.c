/*
 * report_libs.c - the frameworks and libraries a job's processes loaded
 * (summary->libs, from proc_libs): the text report's "Frameworks:" line, the
 * JSON report's "libs" array, the HTML page's list.  Nothing (text, HTML)
 * or [] (JSON) when none was seen.
 */
#include "report/report.h"

#include "common/jsonw.h"
#include "store/jobdata.h"

void report_libs_text(const struct summary *s, struct strbuf *out)
{
	if (!s->nlibs)
		return;
	strbuf_addstr(out, "\n  Frameworks ");
	for (size_t i = 0; i < s->nlibs; i++) {
		const struct store_proc_lib *l = &s->libs[i];

		strbuf_addf(out, "%s%.64s%s%.64s (%lld process%s)", i ? ", " : "", l->name,
			    l->version[0] ? " " : "", l->version, (long long)l->nprocs,
			    l->nprocs == 1 ? "" : "es");
	}
	strbuf_addch(out, '\n');
}

void report_libs_json(struct jsonw *w, const struct summary *s)
{
	jsonw_key(w, "libs");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < s->nlibs; i++) {
		const struct store_proc_lib *l = &s->libs[i];

		jsonw_obj_begin(w);
		jsonw_kv_str(w, "name", l->name);
		jsonw_kv_str_opt(w, "version", l->version[0] ? l->version : NULL);
		jsonw_kv_int(w, "processes", l->nprocs);
		jsonw_kv_str_opt(w, "path", l->path[0] ? l->path : NULL);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
}

void report_libs_html(const struct summary *s, struct strbuf *out)
{
	if (!s->nlibs)
		return;
	strbuf_addstr(out, "<section id=\"libs\">\n<h2>Frameworks and libraries</h2>\n"
			   "<table>\n<tr><th>name</th><th>version</th><th>processes</th>"
			   "<th>file</th></tr>\n");
	for (size_t i = 0; i < s->nlibs; i++) {
		const struct store_proc_lib *l = &s->libs[i];

		strbuf_addstr(out, "<tr><td>");
		report_html_text(out, l->name);
		strbuf_addstr(out, "</td><td>");
		report_html_text(out, l->version[0] ? l->version : "-");
		strbuf_addf(out, "</td><td class=\"num\">%lld</td><td>", (long long)l->nprocs);
		report_html_text(out, l->path);
		strbuf_addstr(out, "</td></tr>\n");
	}
	strbuf_addstr(out, "</table>\n</section>\n");
}
