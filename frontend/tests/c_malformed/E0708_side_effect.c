static void kernel(int n, double A[100], double B[100])
{
  int i;
  double t;
#pragma scop
  for (i = 0; i < n; i++)
    A[i] = (t = B[i]) * 2.0;
#pragma endscop
}
