target
ascend-like
