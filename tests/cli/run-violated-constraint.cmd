run
examples/polybench/fdtd-2d.pk
-D
TMAX=40
-D
NX=0
-D
NY=80
