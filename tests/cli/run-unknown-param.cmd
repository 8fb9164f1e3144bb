run
examples/polybench/gemm.pk
-D
NX=3
