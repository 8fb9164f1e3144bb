schedule
tests/kernels/skew5.pk
--no-tile
--no-parallel
