Bgrad_rJ
¯Œ?