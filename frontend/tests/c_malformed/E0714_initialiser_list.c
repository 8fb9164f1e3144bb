static void kernel(int n, double A[100])
{
  int i;
#pragma scop
  double w[3] = {0.25, 0.5, 0.25};
  for (i = 1; i < n - 1; i++)
    A[i] = w[0] * A[i - 1] + w[1] * A[i] + w[2] * A[i + 1];
#pragma endscop
}
