/* mkstore.c - being written (issue 6): a synthetic store for golden tests and benchmarks. */
#include <stdio.h>

int main(void)
{
	fputs("js-mkstore: not written yet\n", stderr);
	return 1;
}
