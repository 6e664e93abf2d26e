#!/usr/bin/env python
"""Write the installed onnx's own generated docs: DIR/docs/Changelog.md and Operators.md.

    python scripts/onnx_docs.py DIR

ONNX generates both files from its schemas with ``onnx/defs/gen_doc.py``, which the onnx
package ships; run from a copy under ``DIR/onnx/defs/``, it writes ``DIR/docs/`` for
exactly the installed schemas (about 4 s). The PR gate's tests and its benchmark use the
result as a base that matches the installed onnx, then edit it into the base of a
simulated PR (docs/pr-gate.md).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def generate(root: Path) -> Path:
    """Write ``root/docs/{Changelog,Operators}.md`` (and gen_doc's -ml files); returns
    ``root/docs``."""
    import onnx
    script = Path(onnx.__file__).resolve().parent / "defs" / "gen_doc.py"
    here = Path(root) / "onnx" / "defs"
    here.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(script, here / "gen_doc.py")
    docs = Path(root) / "docs"
    docs.mkdir(exist_ok=True)   # gen_doc writes into it, and does not create it
    subprocess.run([sys.executable, "-W", "ignore", str(here / "gen_doc.py")], cwd=root,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return docs


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    print(generate(Path(sys.argv[1])))
