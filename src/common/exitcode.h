/*
 * exitcode.h - jobscope's exit statuses (documented in docs/cli.md and
 * `jobscope help`), shared by the commands (cli/) and `run`'s engine (run/):
 *   0    success
 *   1    failure while working (e.g. no such run, cannot write the report)
 *   2    usage error or unusable store (bad option or value, store not
 *        creatable, not a jobscope store, corrupt, or from a newer jobscope);
 *        `jobscope run` reports these before it starts the command
 *   125  `jobscope run` failed after starting (e.g. fork failed)
 *   126  the command was found but could not be executed
 *   127  the command was not found
 *   otherwise `jobscope run` exits with the command's status, as a shell
 *   would: its exit code, or 128+N when a signal N killed it.
 */
#ifndef JOBSCOPE_EXITCODE_H
#define JOBSCOPE_EXITCODE_H

#define EXIT_FAIL	 1
#define EXIT_USAGE	 2
#define EXIT_RUN_FAILED	 125
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND	 127

#endif
