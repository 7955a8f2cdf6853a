"""rigcheck: is this GPU machine set up right for training? Inspect it, and prove it by measuring."""

# Written out rather than read with importlib.metadata, which costs ~40 ms at every start-up;
# tests/contracts/test_cli_lazy.py keeps it equal to pyproject.toml's version.
__version__ = "0.1.0"

__all__ = ["__version__"]
