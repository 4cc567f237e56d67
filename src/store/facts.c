/* facts.c - the fact tables' rows (facts.h), and the packed ones' (packs.h). */
#include "store/facts.h"

#include <stddef.h>
#include <string.h>

#include "store/packs.h"

#define FACT_SOURCE_P(n)	   #n "_all"
#define FACT_SOURCE_N(n)	   #n
#define FACT_ROW(n, v, f, p, k, s) {#n, FACT_SOURCE_##p(n), v, f},

const struct store_fact store_facts[] = {STORE_FACTS(FACT_ROW)};
const int store_nfacts = sizeof(store_facts) / sizeof(store_facts[0]);

#define PACK_ROW_P(n, v, k, s)	   {#n, #k, #s, v},
#define PACK_ROW_N(n, v, k, s)	   /* never packed */
#define PACK_ROW(n, v, f, p, k, s) PACK_ROW_##p(n, v, k, s)

const struct pack_table store__pack_tables[] = {STORE_FACTS(PACK_ROW)};
const int store__npack_tables = sizeof(store__pack_tables) / sizeof(store__pack_tables[0]);

const struct store_fact *store_fact(const char *name)
{
	for (int i = 0; i < store_nfacts; i++)
		if (strcmp(store_facts[i].name, name) == 0)
			return &store_facts[i];
	return NULL;
}

/* Each fact table's columns (facts.h), for the migrations. */
#define FACT_COLUMN_ROW(c, type, since, bit) {#c, type, since},
#define FACT_COLUMNS_ARRAY(table, COLUMNS)                                                         \
	static const struct fact_column table##_columns[] = {COLUMNS(FACT_COLUMN_ROW)};
STORE_FACT_COLUMNS(FACT_COLUMNS_ARRAY)

#define FACT_COLUMNS_ROW(table, COLUMNS)                                                           \
	{#table, table##_columns, sizeof(table##_columns) / sizeof(table##_columns[0])},
const struct fact_columns store_fact_columns[] = {STORE_FACT_COLUMNS(FACT_COLUMNS_ROW)};
const int store_nfact_columns = sizeof(store_fact_columns) / sizeof(store_fact_columns[0]);
_Static_assert(sizeof(store_fact_columns) / sizeof(store_fact_columns[0]) ==
		   sizeof(store_facts) / sizeof(store_facts[0]),
	       "every fact table's columns are described (STORE_FACT_COLUMNS)");
