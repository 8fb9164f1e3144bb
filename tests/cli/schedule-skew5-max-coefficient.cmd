schedule
tests/kernels/skew5.pk
--max-coefficient
5
--emit
schedule
--no-tile
--no-parallel
