run
examples/fdtd-2d.pk
-D
NX=0
