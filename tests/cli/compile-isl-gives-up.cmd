compile
tests/kernels/isl-gives-up.pk
--scheduler
isl
-o
/dev/null
