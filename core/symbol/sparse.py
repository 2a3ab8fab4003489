"""``mx.sym.sparse``: the operators MXNet 1.9.1 also files under its sparse namespace.

Each name is the operator itself (MXNet registers ``_sparse_<name>`` aliases
of the same operator), so ``mx.sym.sparse.dot(lhs, rhs)`` composes ``dot``;
``retain`` is ``_sparse_retain``. Storage types come from the variables'
``stype`` and the storage inference of ``rebind.symbol.infer_storage``.
"""

from .. import registry
from ..errors import UnknownNameError
from .compose import op_function

# dir(mxnet.symbol.sparse) in MXNet 1.9.1, less its module attributes
SPARSE_FUNCTIONS = (
    "ElementWiseSum Embedding FullyConnected LinearRegressionOutput LogisticRegressionOutput "
    "MAERegressionOutput _contrib_round_ste _contrib_sign_ste abs adagrad_update adam_update "
    "add_n arccos arccosh arcsin arcsinh arctan arctanh broadcast_add broadcast_div "
    "broadcast_minus broadcast_mul broadcast_plus broadcast_sub cast_storage cbrt ceil clip "
    "concat cos cosh degrees dot elemwise_add elemwise_div elemwise_mul elemwise_sub exp expm1 "
    "fix floor ftrl_update gamma gammaln log log10 log1p log2 make_loss mean negative norm "
    "radians relu retain rint round rsqrt sgd_mom_update sgd_update sigmoid sign sin sinh slice "
    "sqrt square stop_gradient sum tan tanh trunc where zeros_like"
).split()

_OPERATOR = {"retain": "_sparse_retain", "adagrad_update": "_sparse_adagrad_update"}
_made = {}


def __getattr__(name):
    """``mx.sym.sparse.<name>``: the symbol function of that operator."""
    if name not in SPARSE_FUNCTIONS:
        raise AttributeError(f"module 'rebind.symbol.sparse' has no attribute {name!r}")
    function = _made.get(name)
    if function is None:
        op_name = _OPERATOR.get(name, name)
        try:
            registry.lookup("operators", op_name)
        except UnknownNameError:
            raise AttributeError(
                f"mx.sym.sparse.{name}: operator {op_name!r} is not in rebind's operator set"
            ) from None
        function = _made[name] = op_function(op_name, name)
    return function


def __dir__():
    return sorted(SPARSE_FUNCTIONS)
