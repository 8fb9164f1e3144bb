compile
examples/seidel-2d.pk
--pass
reverse-outermost
