"""Everything about the package is in pyproject.toml; this only adds one build step.

The wheel carries the repository's ``examples/`` as ``magent/examples`` so that
``magent examples copy`` can give an installed magent the README's tour. (From a
source checkout, editable or not, magent finds ``examples/`` beside ``src/``.)
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

EXAMPLES = Path(__file__).resolve().parent / "examples"


class BuildPyWithExamples(build_py):
    def run(self) -> None:
        super().run()
        if EXAMPLES.is_dir():
            shutil.copytree(EXAMPLES, Path(self.build_lib) / "magent" / "examples", dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithExamples})
