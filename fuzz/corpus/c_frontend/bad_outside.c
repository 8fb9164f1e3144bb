#pragma scop
int x = 1;
#pragma endscop
void f(void)
{
#pragma scop
#pragma endscop
}
