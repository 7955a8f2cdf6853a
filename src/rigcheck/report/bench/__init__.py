"""The renderings of ``rigcheck.bench/1`` documents (every `bench` subcommand, and `bench … --from` a reference
tool's output): ``render.py`` the terminal, JSON and Markdown, ``html.py`` the page, ``reference.py`` what an
imported output adds. Rules as report/."""
