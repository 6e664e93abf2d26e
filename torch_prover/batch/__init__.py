"""verify-all: the forked worker pool and its cache (``pool``), waivers."""
