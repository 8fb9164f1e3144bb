void f(int n, double A[8])
{
#pragma scop
  A[0] = 1;
#pragma scop
  A[1] = 2;
}
