#include <stdio.h>
static void kernel(int n, double A[100])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    A[i] = A[i] + printf("%d\n", i);
#pragma endscop
}
