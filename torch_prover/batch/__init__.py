"""verify-all: the forked worker pool (``pool``), its cache (``cache``), waivers."""
