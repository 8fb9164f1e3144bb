/* The same array passed twice. */
static void kernel(int n, double A[100], double B[100])
{
  int i;
#pragma scop
  for (i = 1; i < n; i++)
    A[i] = B[i - 1] * 2.0;
#pragma endscop
}

int main(void)
{
  static double X[100], Y[100];
  kernel(100, X, Y);
  kernel(100, X, X);
  return 0;
}
