/* exit0: the smallest program, exec'd by spawn_rate. */
int main(void)
{
	return 0;
}
