#pragma endscop
int x;
