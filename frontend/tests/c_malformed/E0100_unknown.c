struct point { double x, y; };
static void kernel(int n, double A[100])
{
  int i;
  struct point p;
#pragma scop
  for (i = 0; i < n; i++)
    A[i] = q;
#pragma endscop
}
