static void kernel(int n, double A[100])
{
  int i;
#pragma scop
  for (i = 1; i < n; i *= 2)
    A[i] = 0.0;
#pragma endscop
}
