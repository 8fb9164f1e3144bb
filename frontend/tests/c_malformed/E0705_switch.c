static void kernel(int n, double A[100])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    switch (n) {
    case 1: A[i] = 1.0;
    }
#pragma endscop
}
