"""Regenerate docs/bands.md from facts/ and tests/calibration (the floors beside the published healthy figures).

Run from the repository root after changing a band, a judge or a calibration case; tests/test_bands_doc.py
checks the committed page is current.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the calibration cases live in the tests package

from tests.calibration.bands_doc import render  # noqa: E402

target = ROOT / "docs" / "bands.md"
target.write_text(render(), encoding="utf-8")
print(f"wrote {target.relative_to(ROOT)}")
