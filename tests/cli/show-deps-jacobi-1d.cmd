show
examples/polybench/jacobi-1d.pk
--emit
deps
-D
TSTEPS=10
