// An integer literal beyond 64 bits in a loop bound.
void fill(double A[100]) {
#pragma scop
  for (int i = 0; i < 99999999999999999999999; i++)
    A[i] = 1.0;
#pragma endscop
}
