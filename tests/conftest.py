"""Setup shared by every test under tests/ (not the notebooks: nbval runs those in kernels).

- matplotlib draws off-screen (the Agg backend), chosen before any test imports pyplot;
- every figure a test opens is closed after it, so figures never pile up across tests.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")
