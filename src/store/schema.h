/*
 * schema.h - the store's schema: creating and migrating it, checking an
 * existing file against it.  The fact tables' columns are facts.h's.
 *
 * Not part of the API.  Used by open.c (create, check, migrate) and
 * pgschema.c (the schema it reads off SQLite's).  Errors: 0 or -errno, the
 * message printed (a refused file says why: not ours, corrupt, newer).
 * Not thread-safe: runs on one connection.
 */
#ifndef JOBSCOPE_STORE_SCHEMA_H
#define JOBSCOPE_STORE_SCHEMA_H

#include "store/conn.h"

/* meta's created_by */
#define STORE_CREATED_BY "jobscope " JOBSCOPE_VERSION

/*
 * Brings the schema from its user_version to STORE_SCHEMA_VERSION in one
 * transaction; from 0 (an empty file) creates it.
 */
int store__migrate(struct store *st);
/*
 * The checks on an existing store: ours, not newer, intact (quick_check up
 * to STORE_QUICK_CHECK_MAX_BYTES), migrated when older and writable, and
 * holding the tables we query.  Sets st->schema_version.
 */
int store__check_schema(struct store *st);

#endif
