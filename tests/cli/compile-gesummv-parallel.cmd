compile
examples/polybench/gesummv.pk
--target
cpu
--parallel
--no-tile
