"""The PR workflow: run an unmodified proof script in a forked, isolated child
(``runner``, ``process``, ``server``, ``child``, ``capture``, ``collect``, ``export``,
``module``, ``wire``), turn what it did into a case (``case``), report it (``report``);
and render a case as such a script (``gen``, ``source``)."""
