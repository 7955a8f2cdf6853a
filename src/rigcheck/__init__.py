"""rigcheck: is this GPU machine set up right for training? Inspect it, and prove it by measuring."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("rigcheck")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
