/*
 * store_internal.h - the store's internals as store_export.c and
 * store_ingest.c have included them: the connection and its error
 * helpers (conn.h) and the schema's column lists (schema.h).
 *
 * Not part of the API.  The other store files include what they use
 * (conn.h, schema.h, writer.h, column.h) directly; this header only
 * gathers two of them and includes nothing that includes it.
 */
#ifndef JOBSCOPE_STORE_INTERNAL_H
#define JOBSCOPE_STORE_INTERNAL_H

#include "store/conn.h"
#include "store/schema.h"

#endif
