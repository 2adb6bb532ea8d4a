"""Which harness a matrix environment gets: the one the user runs, installed the way it is
installed here — the same release from the package index, the very wheel, or (only where
the harness is a checkout: editable, or its source on sys.path) that checkout.

Environments are kept in a per-user cache shared by every repository, one folder per
harness release (a checkout's environments put the checkout first on sys.path, so one
folder serves every checkout), or in the folder the project's settings name."""
from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import harness

DISTRIBUTION = "spark-join-harness"
SOURCE = Path(harness.__file__).resolve().parent.parent   # the folder the running `harness` package sits in


@dataclass(frozen=True)
class HarnessInstall:
    kind: str      # "checkout", "wheel" or "index"
    where: str     # the checkout's folder, the wheel's path, or the requirement
    version: str

    @property
    def is_checkout(self) -> bool:
        return self.kind == "checkout"

    def pip_arguments(self) -> list[str]:
        """What pip installs (the harness's dependencies come with the environment's own
        pins, harness.deploy.matrix.BASE_DEPS: Faker 40 needs Python 3.10)."""
        if self.kind == "checkout":
            return ["-e", self.where]
        return ["--no-deps", self.where]

    def envs_key(self) -> str:
        return "checkout" if self.is_checkout else f"harness-{self.version}"

    def words(self) -> str:
        return {"checkout": f"the checkout {self.where}", "wheel": f"the wheel {self.where}",
                "index": f"{self.where} from the package index"}[self.kind]


@functools.lru_cache(maxsize=1)
def current() -> HarnessInstall:
    """How the running harness is installed (asked once: it cannot change while it runs)."""
    version = harness.__version__
    if _is_source_tree(SOURCE):  # editable, or the source on sys.path (PYTHONPATH, a run from the checkout)
        return HarnessInstall("checkout", str(SOURCE), version)
    dist = _distribution()
    if dist is None:
        return HarnessInstall("index", f"{DISTRIBUTION}=={version}", version)
    path = _local_path((_direct_url(dist) or {}).get("url", ""))
    if path is not None and path.is_file():  # installed from a wheel file that is still there
        return HarnessInstall("wheel", str(path), version)
    return HarnessInstall("index", f"{DISTRIBUTION}=={version}", version)


def _is_source_tree(folder: Path) -> bool:
    """A checkout of this project: its pyproject.toml names the distribution."""
    try:
        text = (folder / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return False
    return f'name = "{DISTRIBUTION}"' in text


def _distribution():
    """The installed distribution the running `harness` package belongs to (None: none
    does). Every copy is looked at: a checkout's egg-info in the working folder, or an
    environment put on sys.path behind this one, can name the same distribution."""
    from importlib.metadata import distributions
    found = [d for d in distributions() if (d.metadata["Name"] or "").lower().replace("_", "-") == DISTRIBUTION]
    return next((d for d in found if _imported_from(d)), None)


def _imported_from(dist) -> bool:
    """Whether the running `harness` package is this distribution's (not a checkout that
    PYTHONPATH puts first)."""
    try:
        location = Path(str(dist.locate_file(""))).resolve()
    except Exception:
        return False
    return SOURCE == location and (location / "harness" / "__init__.py").exists() and \
        any(str(f).startswith("harness/") for f in (dist.files or []))


def _direct_url(dist) -> dict | None:
    try:
        text = dist.read_text("direct_url.json")
    except Exception:
        return None
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _local_path(url: str) -> Path | None:
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path)).resolve()


def default_envs_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spark-join-harness" / "envs"
