"""One proof, stage by stage: probe -> export -> mapping -> numeric + node witness ->
witnesses -> verdict -> record; ``prove.py`` runs them in order. Imports nothing above
itself (no catalogue, batch, output, PR workflow or CLI)."""
