"""arraykit as a drop-in array API backend for other libraries.

Each library runs once on NumPy arrays and once on arraykit tensors; the results
must agree. These libraries are test dependencies only.
"""

from __future__ import annotations

import numpy as np
import pytest

import arraykit as ak

sklearn = pytest.importorskip("sklearn")
from sklearn import config_context  # noqa: E402

RNG = np.random.default_rng(0)


def _as_np(x):
    return np.asarray(x) if isinstance(x, ak.Tensor) else x


def _classification(n=120, d=4, classes=3):
    X = RNG.normal(size=(n, d)).astype(np.float64)
    y = np.arange(n) % classes
    X += y[:, None] * 1.5
    return X, y


# ------------------------------------------------------------------ array-api-compat


def test_array_api_compat_helpers():
    import array_api_compat as compat

    x = ak.asarray([1.0, 2.0, 3.0])
    assert compat.array_namespace(x) is ak
    assert compat.is_array_api_obj(x)
    assert compat.device(x) == x.device
    y = compat.to_device(x, x.device)
    np.testing.assert_array_equal(np.asarray(y), [1.0, 2.0, 3.0])
    assert compat.is_writeable_array(x)
    assert compat.size(ak.zeros((2, 3))) == 6


# ------------------------------------------------------------------ scikit-learn


@pytest.mark.parametrize(
    "make",
    [
        lambda: __import__("sklearn.decomposition", fromlist=["PCA"]).PCA(n_components=2, svd_solver="full"),
        lambda: __import__("sklearn.preprocessing", fromlist=["StandardScaler"]).StandardScaler(),
        lambda: __import__("sklearn.preprocessing", fromlist=["MinMaxScaler"]).MinMaxScaler(),
    ],
    ids=["PCA", "StandardScaler", "MinMaxScaler"],
)
def test_sklearn_transformers(make):
    X, _ = _classification()
    expected = make().fit_transform(X)
    with config_context(array_api_dispatch=True):
        got = make().fit_transform(ak.asarray(X))
    assert isinstance(got, ak.Tensor)
    if expected.shape[1] == 2:  # PCA: components are defined up to sign
        expected = np.abs(expected)
        got = np.abs(np.asarray(got))
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    ("make", "atol"),
    [
        (lambda: __import__("sklearn.discriminant_analysis", fromlist=["LinearDiscriminantAnalysis"]).LinearDiscriminantAnalysis(), 1e-8),
        (lambda: __import__("sklearn.naive_bayes", fromlist=["GaussianNB"]).GaussianNB(), 1e-10),
    ],
    ids=["LinearDiscriminantAnalysis", "GaussianNB"],
)
def test_sklearn_classifier_predicts_like_numpy(make, atol):
    X, y = _classification()
    expected = make().fit(X, y)
    with config_context(array_api_dispatch=True):
        model = make().fit(ak.asarray(X), ak.asarray(y))
        pred = model.predict(ak.asarray(X))
        proba = model.predict_proba(ak.asarray(X))
    np.testing.assert_array_equal(np.asarray(pred), expected.predict(X))
    np.testing.assert_allclose(np.asarray(proba), expected.predict_proba(X), rtol=1e-5, atol=atol)


def test_sklearn_ridge():
    from sklearn.linear_model import Ridge

    X, _ = _classification()
    target = X @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.1
    expected = Ridge(alpha=0.5, solver="svd").fit(X, target)
    with config_context(array_api_dispatch=True):
        model = Ridge(alpha=0.5, solver="svd").fit(ak.asarray(X), ak.asarray(target))
        pred = model.predict(ak.asarray(X))
    np.testing.assert_allclose(np.asarray(model.coef_), expected.coef_, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(pred), expected.predict(X), rtol=1e-6)


def test_sklearn_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    X, y = _classification()
    expected = LogisticRegression(max_iter=200).fit(X, y)
    with config_context(array_api_dispatch=True):
        model = LogisticRegression(max_iter=200).fit(ak.asarray(X), ak.asarray(y))
        pred = model.predict(ak.asarray(X))
    np.testing.assert_array_equal(np.asarray(pred), expected.predict(X))
    np.testing.assert_allclose(np.asarray(model.coef_), expected.coef_, rtol=1e-3, atol=1e-4)


def test_sklearn_metrics():
    from sklearn import metrics

    y_true = (np.arange(60) % 3).astype(np.int64)
    y_pred = ((np.arange(60) * 7) % 3).astype(np.int64)
    scores = RNG.uniform(size=60)
    binary = (np.arange(60) % 2).astype(np.int64)
    a = np.arange(60, dtype=np.float64)
    b = a + RNG.normal(size=60)
    checks = [
        (metrics.accuracy_score, (y_true, y_pred)),
        (metrics.confusion_matrix, (y_true, y_pred)),
        (lambda t, p: metrics.f1_score(t, p, average="macro"), (y_true, y_pred)),
        (lambda t, p: metrics.precision_score(t, p, average="micro"), (y_true, y_pred)),
        (metrics.mean_squared_error, (a, b)),
        (metrics.mean_absolute_error, (a, b)),
        (metrics.r2_score, (a, b)),
        (metrics.roc_auc_score, (binary, scores)),
    ]
    for fn, args in checks:
        expected = fn(*args)
        with config_context(array_api_dispatch=True):
            got = fn(*(ak.asarray(x) for x in args))
        np.testing.assert_allclose(np.asarray(_as_np(got), dtype=np.float64), expected, rtol=1e-6)


# ------------------------------------------------------------------ array-api-extra


def test_array_api_extra():
    xpx = pytest.importorskip("array_api_extra")
    base = np.arange(10.0)
    x = ak.asarray(base)
    y = xpx.at(x)[2:5].set(-1.0)
    np.testing.assert_array_equal(np.asarray(y), np.where((base >= 2) & (base < 5), -1.0, base))
    x = ak.asarray(base)
    y = xpx.at(x, ak.asarray(base % 2 == 0)).add(100.0, copy=True)
    np.testing.assert_array_equal(np.asarray(y), base + 100.0 * (base % 2 == 0))
    np.testing.assert_array_equal(np.asarray(x), base)
    np.testing.assert_array_equal(
        np.asarray(xpx.pad(ak.asarray(np.ones((2, 3))), 1)), np.pad(np.ones((2, 3)), 1)
    )
    m = RNG.normal(size=(3, 20))
    np.testing.assert_allclose(np.asarray(xpx.cov(ak.asarray(m))), np.cov(m), rtol=1e-10)
    np.testing.assert_array_equal(
        np.asarray(xpx.isin(ak.asarray([1, 2, 3, 4]), ak.asarray([2, 4]))), [False, True, False, True]
    )
    np.testing.assert_array_equal(
        np.asarray(xpx.one_hot(ak.asarray([0, 2, 1]), 3)), np.eye(3)[[0, 2, 1]]
    )


# ------------------------------------------------------------------ einops


def test_einops_array_api():
    ea = pytest.importorskip("einops.array_api")
    x = np.arange(24.0).reshape(2, 3, 4)
    t = ak.asarray(x)
    np.testing.assert_array_equal(
        np.asarray(ea.rearrange(t, "b h w -> b (h w)")), x.reshape(2, 12)
    )
    np.testing.assert_array_equal(
        np.asarray(ea.rearrange(t, "b h w -> w b h")), x.transpose(2, 0, 1)
    )
    np.testing.assert_allclose(np.asarray(ea.reduce(t, "b h w -> b", "sum")), x.sum(axis=(1, 2)))
    np.testing.assert_array_equal(
        np.asarray(ea.repeat(t, "b h w -> b h w c", c=2)), np.repeat(x[..., None], 2, axis=-1)
    )


# ------------------------------------------------------------------ SciPy


def test_scipy_with_array_api_enabled():
    """SCIPY_ARRAY_API=1 is set by conftest.py before SciPy is imported."""
    from scipy import fft, ndimage, signal, special, stats

    rng = np.random.default_rng(1)
    x = rng.uniform(0.1, 3.0, size=50)
    t = ak.asarray(x)
    img = rng.normal(size=(8, 8))

    def check(got, expected):
        assert isinstance(got, ak.Tensor), type(got)
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6, atol=1e-12)

    check(special.erf(t), special.erf(x))
    check(special.gammaln(t), special.gammaln(x))
    check(special.expit(t), special.expit(x))
    check(special.logsumexp(t), special.logsumexp(x))
    check(stats.zscore(t), stats.zscore(x))
    check(stats.skew(t), stats.skew(x))
    check(stats.moment(t, order=3), stats.moment(x, order=3))
    check(fft.fft(t), fft.fft(x))
    check(fft.rfft(t), fft.rfft(x))
    check(ndimage.gaussian_filter(ak.asarray(img), 1.0), ndimage.gaussian_filter(img, 1.0))
    check(ndimage.uniform_filter(ak.asarray(img), 3), ndimage.uniform_filter(img, 3))
    check(signal.convolve(t, t[:5]), signal.convolve(x, x[:5]))
    check(signal.detrend(t), signal.detrend(x))
