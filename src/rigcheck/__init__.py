"""rigcheck: is this GPU machine set up right for training? Inspect it, and prove it by measuring.

The layers, top to bottom; a module imports its own layer and the ones below it, never one above
(tests/contracts/test_layers.py reads every import, lazy and TYPE_CHECKING ones included):

    cli -> report -> bench -> monitor -> checks -> plan -> readers -> probe -> inputs -> model -> facts -> leaves

The leaves (``errors.py``, ``cpulist.py``, ``units.py`` and this module) import nothing of rigcheck. Each package's
``__init__`` says what it holds and its rules; docs/design.md draws the picture."""

# Written out rather than read with importlib.metadata, which costs ~40 ms at every start-up;
# tests/contracts/test_cli_lazy.py keeps it equal to pyproject.toml's version.
__version__ = "0.1.0"

__all__ = ["__version__"]
