check
frontend/tests/malformed/E0001_bad_char.pk
