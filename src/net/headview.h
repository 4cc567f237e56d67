/*
 * headview.h - what a head answered, in words for the terminal (on
 * stdout): its /status (sessions active, agents), its /clients table and
 * its sessions (/profiling/sessions).  now: the clock "last seen" counts
 * from.  The documents are the head's JSON (docs/http-api.md), parsed.
 */
#ifndef JOBSCOPE_HEADVIEW_H
#define JOBSCOPE_HEADVIEW_H

#include <stdint.h>

#include <cjson/cJSON.h>

void headview_status(const cJSON *doc, int64_t now);
void headview_clients(const cJSON *clients, int64_t now);
void headview_sessions(const cJSON *sessions);

#endif
