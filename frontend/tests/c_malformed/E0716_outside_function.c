#pragma scop
double A[100];
#pragma endscop
