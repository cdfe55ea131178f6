"""The real-loop benchmark driver must refuse an implementation name it does not know.

Regression: an unknown IMPL (say `lazy`) used to run eager silently, so a typo produced
eager's numbers under the wrong label.
"""

import pytest

from tests.support.bench_scripts import load_bench_script


def _load():
    return load_bench_script("_real_workloads")


def test_unknown_impl_is_rejected_with_the_valid_names():
    driver = _load()
    with pytest.raises(SystemExit, match="lazygen-torchscript"):
        driver.run("mlp_sgd", "lazy", steps=1)


def test_eager_impl_runs_and_reports_a_loss():
    driver = _load()
    result = driver.run("mlp_sgd", "eager", steps=2)
    assert result["uncached_compiles"] == 0
    assert result["final_loss"] == result["final_loss"]  # not NaN
