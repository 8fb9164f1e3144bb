/* The error is inside a macro's expansion: it is reported at the macro's use. */
#define IDX(i, j) ((i) * (j))
static void kernel(int n, double A[10000])
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      A[IDX(i, j)] = 0.0;
#pragma endscop
}
