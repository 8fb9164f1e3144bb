schedule
tests/kernels/skew5.pk
