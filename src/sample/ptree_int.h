/*
 * ptree_int.h - what ptree.c and ptree_exits.c share inside the sampler;
 * not for other modules.
 */
#ifndef JOBSCOPE_SAMPLE_PTREE_INT_H
#define JOBSCOPE_SAMPLE_PTREE_INT_H

struct ptree;
struct ptree_proc;

/*
 * The exits received since the last scan (ptree_exits.c), at the end of a
 * scan: 0 or -ENOMEM.
 */
int ptree_settle_exits(struct ptree *pt);
/* A new entry at the end of procs (zeroed), or NULL: ENOMEM. */
struct ptree_proc *ptree_add_proc(struct ptree *pt);
/* p's command line, kept once in pt->cmdlines. */
void ptree_set_cmdline(struct ptree *pt, struct ptree_proc *p, const char *cmdline);

#endif
