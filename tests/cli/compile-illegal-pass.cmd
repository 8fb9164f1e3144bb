compile
examples/polybench/seidel-2d.pk
--pass
reverse-outermost
--no-tile
--no-parallel
