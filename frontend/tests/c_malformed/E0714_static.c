static void kernel(int n, double A[100])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++) {
    static double t;
    t = A[i];
    A[i] = t * t;
  }
#pragma endscop
}
