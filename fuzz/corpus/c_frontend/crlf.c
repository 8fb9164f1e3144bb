void f(int n, double A[8])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    A[i] = -A[i];
#pragma endscop
}
