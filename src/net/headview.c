/*
 * headview.c - a head's answers as the CLI prints them: GET /status,
 * GET /clients and the sessions of GET /profiling/sessions as text
 * (headview.h).  Any field may be missing or of the wrong type: it
 * prints as "?" (or 0), never read as what it is not.
 */
#include "net/headview.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/timeutil.h"

void headview_clients(const cJSON *clients, int64_t now)
{
	const cJSON *c;

	printf("%-20s %-26s %5s %10s %12s %8s\n", "NODE", "AGENT", "GPUS", "LAST SEEN", "ACKED SEQ",
	       "HEALTHY");
	cJSON_ArrayForEach(c, clients)
	{
		const cJSON *host = cJSON_GetObjectItemCaseSensitive(c, "hostname");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "client_id");
		const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(c, "gpu_count");
		const cJSON *seen = cJSON_GetObjectItemCaseSensitive(c, "last_seen_ms");
		const cJSON *acked = cJSON_GetObjectItemCaseSensitive(c, "acked_seq");
		const cJSON *ok = cJSON_GetObjectItemCaseSensitive(c, "healthy");
		char ago[32] = "-";

		if (cJSON_IsNumber(seen))
			format_duration_ms(now - (int64_t)seen->valuedouble, ago, sizeof(ago));
		printf("%-20s %-26s %5.0f %10s %12.0f %8s\n",
		       cJSON_IsString(host) ? host->valuestring : "?",
		       cJSON_IsString(id) ? id->valuestring : "?",
		       cJSON_IsNumber(gpus) ? gpus->valuedouble : 0, ago,
		       cJSON_IsNumber(acked) ? acked->valuedouble : 0,
		       cJSON_IsTrue(ok) ? "yes" : "NO");
	}
}

void headview_status(const cJSON *doc, int64_t now)
{
	const cJSON *active, *heads, *s;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "version");
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(doc, "batches");

	printf("head %s, %s; %.0f batches since it started\n",
	       cJSON_IsString(v) ? v->valuestring : "?",
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "is_profiling"))
		   ? "profiling"
		   : "not profiling",
	       cJSON_IsNumber(b) ? b->valuedouble : 0);
	active = cJSON_GetObjectItemCaseSensitive(doc, "active_sessions");
	cJSON_ArrayForEach(s, active)
	{
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(s, "name");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "start_time");
		const cJSON *iv = cJSON_GetObjectItemCaseSensitive(s, "interval_ms");
		const cJSON *fr = cJSON_GetObjectItemCaseSensitive(s, "frames");

		printf("  session %s since %s", cJSON_IsString(n) ? n->valuestring : "?",
		       cJSON_IsString(t) ? t->valuestring : "?");
		if (cJSON_IsNumber(iv))
			printf(", every %.0fms", iv->valuedouble);
		if (cJSON_IsNumber(fr))
			printf(", %.0f frame%s", fr->valuedouble, fr->valuedouble == 1 ? "" : "s");
		printf("\n");
	}
	/* several heads on one PostgreSQL database: each, and which runs the upkeep */
	heads = cJSON_GetObjectItemCaseSensitive(doc, "heads");
	if (cJSON_GetArraySize(heads) > 1) {
		printf("  %d heads on this database\n", cJSON_GetArraySize(heads));
		cJSON_ArrayForEach(s, heads)
		{
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(s, "id");
			const cJSON *at = cJSON_GetObjectItemCaseSensitive(s, "listen");

			printf("  head %s at %s%s%s\n", cJSON_IsString(id) ? id->valuestring : "?",
			       cJSON_IsString(at) ? at->valuestring : "?",
			       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "self"))
				   ? ", this one"
				   : "",
			       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "upkeep_lease"))
				   ? ", holds the upkeep lease"
				   : "");
		}
	}
	headview_clients(cJSON_GetObjectItemCaseSensitive(doc, "clients"), now);
}

void headview_sessions(const cJSON *sessions)
{
	const cJSON *s;

	printf("%-24s %-7s %-24s %-24s %-9s %7s %-4s %s\n", "NAME", "STATE", "START", "END",
	       "INTERVAL", "FRAMES", "CUDA", "NODES");
	cJSON_ArrayForEach(s, sessions)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "name");
		const cJSON *start = cJSON_GetObjectItemCaseSensitive(s, "start_ms");
		const cJSON *end = cJSON_GetObjectItemCaseSensitive(s, "end_ms");
		const cJSON *iv = cJSON_GetObjectItemCaseSensitive(s, "interval_ms");
		const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(s, "nodes");
		const cJSON *cuda = cJSON_GetObjectItemCaseSensitive(s, "cuda");
		const cJSON *frames = cJSON_GetObjectItemCaseSensitive(s, "frames");
		char t0[40] = "-", t1[40] = "-", ivs[24] = "agents'", ns[256] = "all", fs[24] = "-";

		if (cJSON_IsNumber(start))
			format_rfc3339_ms((int64_t)start->valuedouble, t0, sizeof(t0));
		if (cJSON_IsNumber(end))
			format_rfc3339_ms((int64_t)end->valuedouble, t1, sizeof(t1));
		if (cJSON_IsNumber(iv))
			snprintf(ivs, sizeof(ivs), "%.0fms", iv->valuedouble);
		if (cJSON_IsNumber(frames))
			snprintf(fs, sizeof(fs), "%.0f", frames->valuedouble);
		if (cJSON_IsArray(nodes)) {
			char *p = cJSON_PrintUnformatted(nodes);

			snprintf(ns, sizeof(ns), "%s", p ? p : "?");
			free(p);
		}
		printf("%-24s %-7s %-24s %-24s %-9s %7s %-4s %s\n",
		       cJSON_IsString(name) ? name->valuestring : "?",
		       cJSON_IsNumber(end) ? "stopped" : "active", t0, t1, ivs, fs,
		       cJSON_IsTrue(cuda) ? "yes" : "no", ns);
	}
}
