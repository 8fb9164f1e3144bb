run
examples/gemm.pk
-D
NX=3
