"""ONNX Runtime as the engine of inference-bound executors on the CPU.

A module bound with ``for_training=False`` on a CPU context runs its forward
pass through an ONNX Runtime session built from the same graph: rebind's own
ONNX exporter (``rebind.onnx``) writes the symbol with the current parameter
values as initializers, and ONNX Runtime fuses BatchNorm into convolutions,
picks blocked layouts and runs its own convolution kernels. On convolutional
networks that is 2-3x the NumPy path's speed (``benchmarks/cnn.py``).

Which engine runs is read at bind from ``REBIND_INFERENCE_ENGINE``:

* ``auto`` (the default): ONNX Runtime for graphs with a convolution, when
  ``onnxruntime`` and ``onnx`` are installed (``pip install rebind[cpu]``);
  the NumPy plan otherwise, or when the graph does not export, or when the
  plan runs every convolution as one oneDNN call with its BatchNorm and relu
  (``fused_conv_bn.py``), some of them grouped (depthwise), at a batch of at
  least ``ONEDNN_BATCH``: oneDNN's depthwise kernels need about half the CPU
  of ONNX Runtime's, and from that batch on they outrun the plan's per-call
  costs (MobileNet-1.0, images/s, NumPy plan / ONNX Runtime: 48 / 67-110 at
  batch 1, 54-62 / 87-96 at 8, 65-87 / 75-84 at 16, 89-102 / 68-69 at 32,
  78-121 / 73-86 at 64; MobileNet-v2, whose relu6 and residual sums stay NumPy
  passes, 18-26 / 45-101 at every batch, so it stays on ONNX Runtime);
* ``onnxruntime``: ONNX Runtime for every inference-bound executor it can
  take (a warning names why when it cannot);
* ``numpy``: always rebind's own plan.

The session holds a copy of the parameters. Before each run the engine
compares every parameter array's write count (``NDArray._version``, moved by
``set_params``, ``copy_params_from``, ``arr[:] = ...``, ``copyto``, in-place
arithmetic) and buffer with those it was built from, and rebuilds the session
when one moved. Writes it cannot see: into a parameter's memory through
another array that views it, or straight into ``NDArray.data``'s backend
array; write parameters through NDArray (or ``set_params``) instead.
"""

import logging
import os
import warnings

from ..threadpool import compute_threads, engine_threads

__all__ = ["ENGINE_VARIABLE", "InferenceEngine", "engine_setting"]

ENGINE_VARIABLE = "REBIND_INFERENCE_ENGINE"
_SETTINGS = ("auto", "numpy", "onnxruntime")
# the smallest batch at which the fused oneDNN plan of a depthwise network beats ONNX Runtime
ONEDNN_BATCH = 32
# operators on which ONNX Runtime's kernels beat the NumPy plan (measured: benchmarks/cnn.py)
# (a Convolution with the BatchNorm after it is one plan step: fused_conv_bn.py)
_ENGINE_OPS = frozenset({"Convolution", "Deconvolution", "_conv_BatchNorm"})

logger = logging.getLogger(__name__)


def engine_setting():
    """``REBIND_INFERENCE_ENGINE``, checked: one of auto, numpy, onnxruntime."""
    value = os.environ.get(ENGINE_VARIABLE, "auto").strip().lower() or "auto"
    if value not in _SETTINGS:
        raise ValueError(
            f"{ENGINE_VARIABLE}={value!r} is not an inference engine; "
            f"use one of {', '.join(_SETTINGS)}"
        )
    return value


def _onnxruntime():
    """The onnxruntime module, or None when it (or onnx, which the exporter needs) is missing."""
    try:
        import onnx  # noqa: F401
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime


class InferenceEngine:
    """An ONNX Runtime session running one executor's inference pass."""

    def __init__(self, executor, param_names, ort):
        self._executor = executor
        self._ort = ort
        names = set(param_names)
        bound = zip(executor._arg_names, executor.arg_arrays, strict=True)
        self._params = [(n, a) for n, a in bound if n in names]
        self._params += list(zip(executor._aux_names, executor.aux_arrays, strict=True))
        self._model = None  # the serialized ONNX model of the current parameters
        self._sessions = {}  # (threads, spinning) -> session over the current parameters
        self._stamp = None
        self._feeds = None  # (ONNX input name, bound NDArray) in the session's order

    @classmethod
    def select(cls, executor, param_names):
        """The engine for ``executor`` (bound with ``param_names`` as parameters), or None."""
        setting = engine_setting()
        if setting == "numpy" or not _eligible(executor):
            return None
        forced = setting == "onnxruntime"
        ort = _onnxruntime()
        if ort is None:
            if forced:
                _warn_once(
                    f"{ENGINE_VARIABLE}=onnxruntime, but onnxruntime or onnx is not installed "
                    "(pip install 'rebind[cpu]'); running the NumPy plan"
                )
            return None
        if not forced and not any(
            step.op is not None and step.op.name in _ENGINE_OPS for step in executor._plan.steps
        ):
            return None
        if not forced and _onednn_plan_wins(executor, param_names):
            return None
        return cls(executor, param_names, ort)

    # -- running ---------------------------------------------------------------------
    def run(self):
        """The heads of one inference pass, or None when the graph cannot run here."""
        stamp = [(a._version, id(a._data)) for _, a in self._params]
        if stamp != self._stamp:
            self._sessions.clear()
            self._stamp = stamp
            if not self._export():
                return None
        # ONNX Runtime fixes a session's threads and their waiting when it is made: one
        # session spins (fastest on a free machine), one sleeps (on a busy one, see _session)
        threads = engine_threads()
        key = (threads, compute_threads() >= threads)
        session = self._sessions.get(key)
        if session is None:
            if self._model is None and not self._export():
                return None
            session = self._session(*key)
            self._model = None  # the session holds the weights now: no third copy kept
            if session is None:
                return None
            self._sessions[key] = session
        feeds = {name: array._data for name, array in self._feeds}
        try:
            return session.run(None, feeds)
        except (RuntimeError, self._ort_error()) as exc:  # a kernel ONNX Runtime lacks
            return self._refuse(exc)

    @property
    def _session_ready(self):
        return bool(self._sessions)

    def _export(self):
        """The ONNX model of the current parameters; False (and a note) when it cannot be made."""
        from ..onnx.errors import OnnxExportError
        from ..onnx.export import build_model, graph_input_names

        executor = self._executor
        params = {name: array._data for name, array in self._params}
        arrays = dict(zip(executor._arg_names, executor.arg_arrays, strict=True))
        inputs = graph_input_names(executor._symbol, params)  # less labels only a loss reads
        try:
            model, plan = build_model(
                executor._symbol,
                params,
                [arrays[n].shape for n in inputs],
                [arrays[n].dtype for n in inputs],
                check=False,
            )
        except (OnnxExportError, ValueError, RuntimeError) as exc:
            return self._refuse(exc)
        self._model = model.SerializeToString()
        self._feeds = [(name, arrays[name]) for name in plan.inputs]
        return True

    def _session(self, threads, spin):
        """A session of ``threads`` intra-op threads over the model, or None (and a note).

        ``spin``: its threads spin while they wait. Spinning threads stall each other
        on a machine busy with other work (ResNet-18 at batch 1, two busy processes:
        6 images/s spinning, 7-10 sleeping); on a free one sleeping costs 3-15%.
        """
        options = self._ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        try:
            return self._ort.InferenceSession(self._model, options, ["CPUExecutionProvider"])
        except (ValueError, RuntimeError, self._ort_error()) as exc:
            return self._refuse(exc)

    def _refuse(self, exc):
        message = f"the ONNX Runtime inference engine cannot run this graph ({exc})"
        if engine_setting() == "onnxruntime":
            _warn_once(message + "; running the NumPy plan")
        else:
            logger.info("%s; running the NumPy plan", message)
        self._sessions.clear()
        return None

    def _ort_error(self):
        errors = getattr(self._ort.capi, "onnxruntime_pybind11_state", None)
        return getattr(errors, "Fail", RuntimeError) if errors is not None else RuntimeError


def _eligible(executor):
    """An executor the engine may take: no gradients, one CPU context on the NumPy backend."""
    if any(req != "null" for req in executor._grad_reqs) or executor._group2ctx:
        return False
    ctx = executor._ctx
    if ctx.device_type != "cpu" or getattr(ctx.backend, "name", None) != "numpy":
        return False
    return not executor._plan.has_moves


def _onednn_plan_wins(executor, param_names):
    """Whether the plan's oneDNN convolutions beat ONNX Runtime here (see ``auto``)."""
    from ..ops import conv_ort, dnnl_lib

    steps = [step for step in executor._plan.steps if step.op is not None]
    fused = [step for step in steps if step.op.name == "_conv_BatchNorm"]
    if not fused or any(step.op.name in ("Convolution", "Deconvolution") for step in steps):
        return False
    if any(step.params.activation is None for step in fused):
        return False
    if not any(step.params.conv[3].num_group > 1 for step in fused):
        return False
    names = set(param_names)
    inputs = [
        a
        for n, a in zip(executor._arg_names, executor.arg_arrays, strict=True)
        if n not in names and a.ndim
    ]
    if not inputs or max(a.shape[0] for a in inputs) < ONEDNN_BATCH:
        return False
    setting = conv_ort.kernels_setting()
    return setting in ("auto", "onednn") and dnnl_lib.library() is not None


_WARNED = set()


def _warn_once(message):
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)
