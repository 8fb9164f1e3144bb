double A[100], B[100];
void g(int n)
{
  int i;
#pragma scop
  for (i = 1; i < n - 1; i++)
    B[i] = (A[i - 1] + A[i] + A[i + 1]) / 3;
#pragma endscop
  i = 0;
#pragma scop
  for (i = 1; i < n - 1; i++)
    A[i] = B[i];
#pragma endscop
}
