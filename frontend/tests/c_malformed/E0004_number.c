// A number C does not know.
void fill(double A[100]) {
#pragma scop
  for (int i = 0; i < 100; i++)
    A[i] = 1e;
#pragma endscop
}
