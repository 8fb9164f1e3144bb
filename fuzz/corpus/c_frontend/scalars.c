double s;
void f(int n, double A[20], double alpha)
{
  int i;
#pragma scop
  s = 0.0;
  for (i = 0; i < n; i++) {
    double t = A[i] * alpha;
    s += t;
    A[i] = t = sqrt(t) + fabs(-t);
  }
#pragma endscop
}
