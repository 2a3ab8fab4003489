"""``[examples]`` installs what every example imports, or the example names its extra."""

import ast
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
# import name -> distribution
DISTRIBUTIONS = {"sklearn": "scikit-learn", "cv2": "opencv-python-headless", "mpi4py": "mpi4py"}
# what an example needs through rebind rather than by its own import statement
THROUGH_REBIND = {
    "train_imagerecord.py": {"opencv-python-headless"},  # ImageRecordIter decodes with OpenCV
    "plot_network.py": {"graphviz"},  # mx.viz.plot_network
    "distributed_mlp.py": {"mpi4py"},  # kvstore='dist_sync' over MPI
    "sparse_linear_classification.py": {"scipy"},  # the csr kernels are SciPy's
}
PROVIDED = {"numpy", "rebind"}  # rebind itself and its dependencies


def distribution_names(requirements):
    """``["scikit-learn>=1.3", ...]`` -> {"scikit-learn", ...}."""
    return {
        req.split(">")[0].split("<")[0].split("=")[0].split(";")[0].strip() for req in requirements
    }


def third_party_imports(path):
    """The top-level names of the modules a script imports, stdlib and rebind left out."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in PROVIDED}


def test_every_example_needs_only_the_examples_extra_or_names_its_own():
    examples = distribution_names(EXTRAS["examples"])
    for path in sorted((ROOT / "examples").glob("*.py")):
        needed = {DISTRIBUTIONS.get(name, name) for name in third_party_imports(path)}
        needed |= THROUGH_REBIND.get(path.name, set())
        for missing in needed - examples:
            extra = [name for name, reqs in EXTRAS.items() if missing in distribution_names(reqs)]
            head = "\n".join(path.read_text().splitlines()[:20])
            assert any(f"rebind[{name}]" in head for name in extra), (
                f"{path.name} needs {missing}, which [examples] does not install; name its "
                f"extra {extra} in the first lines"
            )


def test_the_imports_this_test_knows_are_the_ones_the_examples_make():
    found = set().union(*(third_party_imports(p) for p in (ROOT / "examples").glob("*.py")))
    assert found == {"sklearn", "pytest", "cv2"}
