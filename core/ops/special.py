"""Special functions NumPy lacks (erf), written against ``xp`` for NumPy and CuPy.

No operators live here: the unary family (``unary.py``) uses these kernels.
SciPy is not a dependency, and ``math.erf`` is scalar-only, so erf is built from
two classical expansions evaluated in float64 with a fixed number of terms:

* ``|x| <= 2.5``: erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_k 2^k x^(2k+1) / (2k+1)!!,
  a series of positive terms (no cancellation); 36 terms reach about 1e-15.
* ``|x| > 2.5``: erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))),
  Laplace's continued fraction, evaluated from depth 20 inwards; erf = 1 - erfc
  is then exact to about 1e-14 absolute (erfc < 5e-4 there).

The gamma family and erfinv (evaluated in float64):

* gamma and log-gamma: Lanczos' approximation with Godfrey's 15 coefficients
  (g = 607/128) for x > 0, about 2e-15 relative; the reflection formula
  Gamma(x) Gamma(1 - x) = pi / sin(pi x) for x <= 0. At the poles gamma is
  +-inf at 0 and nan below, as C's ``tgamma``; log-gamma is +inf, as ``lgamma``.
* digamma: the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the
  asymptotic series; reflection for x <= 0.
* erfinv: Winitzki's closed-form estimate refined by three Halley steps on
  erf; for |y| > 0.5 the steps solve erfc(x) = 1 - |y|, so the tails keep
  their relative accuracy.
"""

import contextlib
import math

__all__ = ["erf", "gamma", "lgamma", "digamma", "erfinv"]

_SPLIT = 2.5
_SATURATED = 27.0  # erfc(27) < 1e-300: erf is 1.0 in float64 from here on
_SERIES_TERMS = 36
_FRACTION_DEPTH = 20
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf_series(xp, a):
    """erf(a) for 0 <= a <= _SPLIT."""
    a2 = a * a
    term = a.copy()
    total = a.copy()
    for k in range(1, _SERIES_TERMS):
        # in place: this loop is most of erf's cost
        term *= a2
        term *= 2.0 / (2 * k + 1)
        total += term
    xp.negative(a2, out=a2)
    total *= xp.exp(a2, out=a2)
    total *= _TWO_OVER_SQRT_PI
    return total


def _erfc_fraction(xp, a):
    """erfc(a) for a >= _SPLIT (any a > 0 converges, slowly near 0)."""
    tail = a.copy()
    for k in range(_FRACTION_DEPTH, 0, -1):
        xp.divide(0.5 * k, tail, out=tail)
        tail += a
    tail *= math.sqrt(math.pi)
    scale = a * a
    xp.negative(scale, out=scale)
    xp.exp(scale, out=scale)
    return xp.divide(scale, tail, out=tail)


def erf(xp, x):
    """The error function of ``x``, element-wise, computed in float64.

    Relative error below 1e-13 over the whole real line (tests compare with
    ``math.erf``); returns float64 whatever the input dtype.
    """
    x = xp.asarray(x, dtype="float64")
    a = xp.abs(x)
    near = _erf_series(xp, xp.minimum(a, _SPLIT))
    far = 1.0 - _erfc_fraction(xp, xp.clip(a, _SPLIT, _SATURATED))
    return xp.copysign(xp.where(a <= _SPLIT, near, far), x)


_LANCZOS_G = 607 / 128
_LANCZOS_COEFFICIENTS = (
    0.99999999999999709182,
    57.156235665862923517,
    -59.597960355475491248,
    14.136097974741747174,
    -0.49191381609762019978,
    0.33994649984811888699e-4,
    0.46523628927048575665e-4,
    -0.98374475304879564677e-4,
    0.15808870322491248884e-3,
    -0.21026444172410488319e-3,
    0.21743961811521264320e-3,
    -0.16431810653676389022e-3,
    0.84418223983852743293e-4,
    -0.26190838401581408670e-4,
    0.36899182659531622704e-5,
)
_GAMMA_OVERFLOW = 180.0  # Gamma(x) is inf in float64 well before this
_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)
_DIGAMMA_SHIFT = 10
# Bernoulli numbers B_2k / 2k for the asymptotic series of digamma, k = 1..7
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
_ERFC_SPLIT = 2.5  # where special.py switches erf to its erfc continued fraction
_HALLEY_STEPS = 3
_WINITZKI_A = 0.147
HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)


def _quiet(xp):
    """Overflow to inf and nan at the poles are the answers here, not accidents."""
    errstate = getattr(xp, "errstate", None)
    if errstate is None:  # CuPy does not warn
        return contextlib.nullcontext()
    return errstate(over="ignore", divide="ignore", invalid="ignore")


def _lanczos_sum(x):
    """Godfrey's series in x - 1, written with x so that a tiny x keeps its precision."""
    total = _LANCZOS_COEFFICIENTS[0] + _LANCZOS_COEFFICIENTS[1] / x
    for k, c in enumerate(_LANCZOS_COEFFICIENTS[2:], start=1):
        total += c / (x + k)
    return total


def _split_poles(xp, x):
    """(x with non-positive integers replaced by 0.5, mask of those poles)."""
    poles = (x <= 0) & (x == xp.floor(x))
    return xp.where(poles, 0.5, x), poles


def _sin_pi(xp, x):
    """sin(pi x) with the argument reduced exactly first (x - round(x) is exact)."""
    whole = xp.round(x)
    sign = 1.0 - 2.0 * xp.mod(whole, 2.0)
    return sign * xp.sin(math.pi * (x - whole))


def _gamma_positive(xp, x):
    x = xp.minimum(x, _GAMMA_OVERFLOW)
    t = x + (_LANCZOS_G - 0.5)
    # t^(x - 1/2) e^-t as two halves around e^-t: neither factor overflows before the product
    half = xp.power(t, (x - 0.5) / 2)
    return math.sqrt(2 * math.pi) * (half * xp.exp(-t)) * half * _lanczos_sum(x)


def _lgamma_positive(xp, x):
    t = x + (_LANCZOS_G - 0.5)
    return _HALF_LOG_TWO_PI + (x - 0.5) * xp.log(t) - t + xp.log(_lanczos_sum(x))


def gamma(xp, x):
    """The gamma function of ``x``, element-wise, in float64."""
    x = xp.asarray(x, dtype="float64")
    safe, poles = _split_poles(xp, x)
    positive = safe > 0
    direct = _gamma_positive(xp, xp.where(positive, safe, 1.0))
    negative = xp.where(positive, 0.5, safe)
    reflected = math.pi / (_sin_pi(xp, negative) * _gamma_positive(xp, 1.0 - negative))
    out = xp.where(positive, direct, reflected)
    pole_value = xp.where(x == 0, xp.copysign(math.inf, x), math.nan)
    return xp.where(poles, pole_value, out)


def lgamma(xp, x):
    """log |Gamma(x)|, element-wise, in float64 (+inf at the poles)."""
    x = xp.asarray(x, dtype="float64")
    safe, poles = _split_poles(xp, x)
    positive = safe > 0
    # the series' (x - 1/2) log t - t is inf - inf at x = inf
    direct = _lgamma_positive(xp, xp.where(positive, xp.minimum(safe, 1e307), 1.0))
    negative = xp.where(positive, 0.5, safe)
    sine = xp.abs(_sin_pi(xp, negative))
    reflected = _LOG_PI - xp.log(sine) - _lgamma_positive(xp, 1.0 - negative)
    out = xp.where(positive, xp.where(safe == math.inf, math.inf, direct), reflected)
    return xp.where(poles, math.inf, out)


def _digamma_positive(xp, x):
    shift = xp.zeros_like(x)
    for _ in range(_DIGAMMA_SHIFT):
        small = x < _DIGAMMA_SHIFT
        shift -= xp.where(small, 1 / x, 0.0)
        x = xp.where(small, x + 1, x)
    inverse_square = 1 / (x * x)
    series = xp.zeros_like(x)
    for coefficient in reversed(_DIGAMMA_SERIES):
        series = (series + coefficient) * inverse_square
    return xp.log(x) - 0.5 / x - series + shift


def digamma(xp, x):
    """psi(x) = d/dx log Gamma(x), element-wise, in float64 (inf at the poles)."""
    x = xp.asarray(x, dtype="float64")
    safe, poles = _split_poles(xp, x)
    positive = safe > 0
    direct = _digamma_positive(xp, xp.where(positive, safe, 1.0))
    negative = xp.where(positive, 0.5, safe)
    offset = negative - xp.round(negative)
    # psi(x) = psi(1 - x) - pi cot(pi x); cot is periodic, so reduce x first
    cotangent = math.pi / xp.tan(math.pi * xp.where(offset == 0, 0.5, offset))
    reflected = _digamma_positive(xp, 1.0 - negative) - cotangent
    return xp.where(poles, math.inf, xp.where(positive, direct, reflected))


def _erfc(xp, a, erf_a):
    """erfc(a) for a >= 0, given erf(a): the continued fraction where 1 - erf cancels."""
    fraction = _erfc_fraction(xp, xp.maximum(a, _ERFC_SPLIT))
    return xp.where(a < _ERFC_SPLIT, 1.0 - erf_a, fraction)


def _winitzki(xp, a, rest):
    """A first estimate of erfinv(a) (relative error about 2e-3); ``rest`` = 1 - a."""
    log_term = xp.log(rest * (1.0 + a))
    b = 2 / (math.pi * _WINITZKI_A) + 0.5 * log_term
    return xp.sqrt(xp.sqrt(b * b - log_term / _WINITZKI_A) - b)


def erfinv(xp, y):
    """The inverse error function of ``y``, element-wise, in float64.

    +-inf at +-1 and nan outside [-1, 1], as MXNet.
    """
    y = xp.asarray(y, dtype="float64")
    a = xp.abs(y)
    inside = a < 1
    a = xp.where(inside, a, 0.5)
    rest = 1.0 - a  # exact for a >= 0.5, where the tail form needs it
    tail = a > 0.5
    x = _winitzki(xp, a, rest)
    for _ in range(_HALLEY_STEPS):
        erf_x = erf(xp, x)
        # f(x) = erf(x) - a, written as (1 - a) - erfc(x) in the tail
        residual = xp.where(tail, rest - _erfc(xp, x, erf_x), erf_x - a)
        step = residual * HALF_SQRT_PI * xp.exp(x * x)
        # Halley: f''/f' = -2x
        x = x - step / (1.0 + x * step)
    edge = xp.where(xp.abs(y) == 1, math.inf, math.nan)
    return xp.copysign(xp.where(inside, x, edge), y)
