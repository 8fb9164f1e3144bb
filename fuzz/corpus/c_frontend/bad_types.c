struct s { int a; };
typedef double real;
static void f(int n, unsigned A[8], real R[8], long L[8], double *p)
{
  int i;
#pragma scop
  for (i = 0; i < n; i++) {
    A[i] = 1; R[i] = L[i] << 1; L[i] = ~i;
    static int k = 0;
    int z[2] = {1, 2};
  }
#pragma endscop
}
