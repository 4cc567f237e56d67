/*
 * token.h - bearer tokens kept in files (the agent's for its head, the
 * head's for its agents, readers and admins).  Errors: 0 or -errno, with a
 * message naming the file (log.h).
 */
#ifndef JOBSCOPE_TOKEN_H
#define JOBSCOPE_TOKEN_H

#include <stddef.h>

/* The token in path into buf (trailing newline and blanks dropped); -EINVAL if empty. */
int token_read_file(const char *path, char *buf, size_t size);
/* The same, said nowhere (read again while running: a missing file is no news). */
int token_load(const char *path, char *buf, size_t size);

#endif
