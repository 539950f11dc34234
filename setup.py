"""Map the top-level folders onto the ``envsim`` namespace (see DESIGN.md, Layout)."""
from setuptools import find_packages, setup

FOLDERS = {
    "envsim": "envsim",
    "envsim.envs": "envs",
    "envsim.construction": "construction",
    "envsim.benchmark": "benchmark",
    "envsim.evaluation": "evaluation",
    "envsim.training": "training",
    "envsim.simulation": "simulation",
}


def _packages() -> list[str]:
    packages: list[str] = []
    for package, folder in FOLDERS.items():
        packages.append(package)
        packages += [f"{package}.{sub}" for sub in find_packages(folder)]
    return packages


setup(
    packages=_packages(),
    package_dir=FOLDERS,
    package_data={"envsim.benchmark": ["README.md", "*/*.jsonl", "*/*.json", "*/*.txt", "*/*.md",
                                     "*/*_states/*.json.gz"],  # content-addressed states (benchmark/state_store.py)
                  "envsim.training": ["recipes/*.json"]},
)
