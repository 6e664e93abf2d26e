"""What the user reads: ``evidence`` (the only writer), text / markdown / json (``report``),
html (``html_report``), and the catalogue's coverage."""
