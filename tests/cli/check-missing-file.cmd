check
no/such/file.pk
