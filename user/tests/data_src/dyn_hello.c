/* A dynamically linked program (musl's loader as its interpreter), for
 * exec_dynamic: prints its arguments and what the loader and the kernel
 * told it, and exits 42. */
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

int main(int argc, char **argv)
{
	printf("argc=%d", argc);
	for (int i = 1; i < argc; i++)
		printf(" %s", argv[i]);
	printf(" base=%s entry=%s\n", getauxval(AT_BASE) ? "set" : "zero",
	       getauxval(AT_ENTRY) == (unsigned long)0 ? "zero" : "set");
	fflush(stdout);
	return strcmp(argv[0], "dyn") == 0 ? 42 : 1;
}
