"""The renderings of a burn document (`burn`, `burn --analyze`): ``render.py`` the terminal, JSON and Markdown,
``html.py`` the page with the trace's plots. Rules as report/."""
