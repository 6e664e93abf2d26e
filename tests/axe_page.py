"""axe-core (the accessibility engine browsers' devtools use) run on an HTML page in a real
Chromium, driven by Playwright: what tests/test_html_accessibility.py asserts on.

Where each piece comes from (none is vendored in the repository): Chromium -- Debian's
``chromium`` package (``/usr/bin/chromium``; Playwright cannot download a browser here, so
it is given the system's with ``executable_path``); Playwright -- ``pip install playwright``;
axe-core -- ``npm install axe-core`` into a directory outside the repository, found by
``$TORCH_PROVER_AXE_JS`` (the path of its ``axe.min.js``) or at
``${XDG_CACHE_HOME:-~/.cache}/torch-prover-ci/node_modules/axe-core/axe.min.js``, where ``.ci/run`` installs it.
``missing()`` says which is absent, so a test that cannot run says why.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
AXE_DEFAULT = (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "torch-prover-ci"
               / "node_modules" / "axe-core" / "axe.min.js")
IMPACTS = ("critical", "serious", "moderate", "minor")


def browser() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def axe_js() -> Path | None:
    p = Path(os.environ.get("TORCH_PROVER_AXE_JS") or AXE_DEFAULT)
    return p if p.is_file() else None


def missing() -> list[str]:
    """What this machine lacks to run axe-core in a browser (empty: nothing)."""
    out = []
    if browser() is None:
        out.append("a Chromium (Debian: apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        out.append("Playwright (pip install playwright)")
    if axe_js() is None:
        out.append(f"axe-core's axe.min.js (npm install axe-core; $TORCH_PROVER_AXE_JS or "
                   f"{AXE_DEFAULT})")
    return out


class Page:
    """One headless Chromium (``with Page() as p``): ``p.open(path)`` loads a file,
    ``p.axe()`` runs axe-core on what is loaded; ``p.page`` is Playwright's page."""

    def __enter__(self) -> "Page":
        from playwright.sync_api import sync_playwright
        self._pw = sync_playwright().start()
        self._browser = self._pw.chromium.launch(executable_path=browser(),
                                                 args=["--no-sandbox"])
        self.page = self._browser.new_page(viewport={"width": 1280, "height": 900})
        return self

    def __exit__(self, *exc) -> None:
        self._browser.close()
        self._pw.stop()

    def open(self, path: Path, fragment: str = "") -> None:
        self.page.goto(Path(path).resolve().as_uri() + fragment)

    def axe(self) -> list[dict]:
        """axe-core's violations on the page as it is now: ``[{id, impact, nodes, help}]``."""
        self.page.add_script_tag(content=axe_js().read_text(encoding="utf-8"))
        result = self.page.evaluate("axe.run(document, {resultTypes: ['violations']})")
        return [{"id": v["id"], "impact": v["impact"], "nodes": len(v["nodes"]),
                 "help": v["help"], "targets": [n["target"] for n in v["nodes"][:3]]}
                for v in result["violations"]]


def by_impact(violations: list[dict]) -> dict[str, int]:
    """Nodes in violation by impact (axe's four levels)."""
    out = dict.fromkeys(IMPACTS, 0)
    for v in violations:
        out[v["impact"] or "minor"] += v["nodes"]
    return out
