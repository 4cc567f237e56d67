/*
 * families.c - the table of jobscope_* metric families (see families.h).
 */
#include "prom/families.h"

#include "prom/expo.h"

const struct prom_family_def prom_families[PF__COUNT] = {
#define PROM_FAM_DEF(id, n, t, c, s, h) \
	[PF_##id] = {.name = n, .type = t, .column = c, .scale = s, .help = h},
    PROM_FAMILIES(PROM_FAM_DEF)
#undef PROM_FAM_DEF
};

void prom_family_head(struct strbuf *o, enum prom_fam f)
{
	prom_family(o, prom_families[f].name, prom_families[f].type, prom_families[f].help);
}
