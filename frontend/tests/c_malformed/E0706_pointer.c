/* A pointer parameter: neither its extent nor what else it points to is known. */
static void kernel(int n, double *A, double B[100])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    B[i] = A[i] * 2.0;
#pragma endscop
}
