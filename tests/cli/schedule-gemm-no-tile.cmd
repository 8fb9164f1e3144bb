schedule
examples/polybench/gemm.pk
--machine
tests/cli/skylake-2c.toml
--no-tile
