"""Renderings: one module (or sub-folder) per document, each owning all four formats (terminal, JSON, Markdown,
HTML; ``render.py``: Format, Renderers, REPORT_MODULES). ``common.py`` holds what several reports share,
``html.py`` the page shell only (CSS, CSP, escaping, palettes), ``svg.py`` the chart library.

Rules: pure functions document -> text or rich renderables; no reading, no measuring, no exit codes. A report
writes no file and no terminal itself (the CLI emits what it returns; output files go through
model/files_out.py). May import bench, monitor, checks, plan and below."""
