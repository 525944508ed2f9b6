"""Build glue pyproject.toml cannot say: the repository's top-level labs/ and assets/ are installed as the
data packages ``kafkalab._labs`` and ``kafkalab._assets`` (read through importlib.resources), next to every
package found under kafkalab/. Works for the editable install of ``make setup`` and for wheels alike."""

from setuptools import find_packages, setup

DATA_PACKAGES = {"kafkalab._labs": "labs", "kafkalab._assets": "assets"}

setup(packages=[*find_packages(include=["kafkalab", "kafkalab.*"]), *DATA_PACKAGES], package_dir=DATA_PACKAGES)
