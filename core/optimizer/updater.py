"""``get_updater``: apply an optimizer to weights by index, keeping each weight's state.

The updater is what a kvstore or a module calls with ``(index, grad, weight)``.
It creates each index's optimizer state on first sight (with a float32 master
copy where the optimizer asks for one), moves loaded states to the weight's
device before using them, and saves or restores all states as bytes
(``get_states``/``set_states``): as the pickle MXNet writes (written
opcode by opcode) or, with the optimizer, in rebind's own format, which holds
only arrays and plain data. ``set_states`` reads both, MXNet's pickles through
an unpickler that admits nothing but arrays and containers.
"""

from ..ndarray import NDArray
from . import mxnet_pickle_writer
from . import states as updater_states

__all__ = ["Updater", "get_updater"]


class Updater:
    """Calls ``optimizer.update_multi_precision`` per index, creating states lazily.

    Attributes:
        optimizer: the optimizer applied.
        states: ``{index: state}`` created so far (or loaded).
        states_synced: ``{index: bool}``; False for a loaded state not yet moved
            to its weight's context.
    """

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        # kept for parity; whether weights are grouped per call is decided on
        # each call from the optimizer's aggregate_num, as set_states may swap it
        self.aggregate_updates = getattr(optimizer, "aggregate_num", 0) > 0

    def __call__(self, index, grad, weight):
        """Update ``weight`` (or each of a list of weights) from ``grad`` at ``index``."""
        if isinstance(index, (list, tuple)):
            indices, grads, weights = list(index), list(grad), list(weight)
        else:
            indices, grads, weights = [index], [grad], [weight]
        if not len(indices) == len(grads) == len(weights):
            raise ValueError(
                f"updater: {len(indices)} indices, {len(grads)} gradients and "
                f"{len(weights)} weights; give one of each per parameter"
            )
        indices = [i.decode() if type(i) is bytes else i for i in indices]
        if weights:
            _check_weight(weights[0], indices[0])
            set_context = getattr(self.optimizer, "_set_current_context", None)
            if set_context is not None:
                set_context(weights[0].context.device_id)
        states, synced = self.states, self.states_synced
        for idx, weight_i in zip(indices, weights, strict=True):
            if type(weight_i) is not NDArray or idx not in states or not synced.get(idx):
                self._prepare_state(idx, weight_i)  # checks the weight; makes or moves the state
        size = getattr(self.optimizer, "aggregate_num", 0) or 0
        if size <= 0:
            states = [self.states[i] for i in indices]
            self.optimizer.update_many(indices, weights, grads, states)
            return
        # an optimizer that takes several weights per call gets them as MXNet
        # gives them: grouped by dtype, in order, ``aggregate_num`` at a time
        by_dtype = {}
        for entry in zip(indices, weights, grads, strict=True):
            by_dtype.setdefault(entry[1].dtype, []).append(entry)
        for entries in by_dtype.values():
            for start in range(0, len(entries), size):
                idx, weight_group, grad_group = zip(*entries[start : start + size], strict=True)
                states = [self.states[i] for i in idx]
                self.optimizer.update_multi_precision(idx, weight_group, grad_group, states)

    def _prepare_state(self, index, weight):
        _check_weight(weight, index)
        if index not in self.states:
            self.states[index] = self.optimizer.create_state_multi_precision(index, weight)
            self.states_synced[index] = True
        elif not self.states_synced.get(index, False):
            self.states[index] = self.sync_state_context(self.states[index], weight.context)
            self.states_synced[index] = True

    def sync_state_context(self, state, context):
        """``state`` with every NDArray in it moved to ``context`` (nesting kept)."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            return type(state)(self.sync_state_context(part, context) for part in state)
        return state

    def get_states(self, dump_optimizer=False):
        """All states as bytes: MXNet's pickle, or rebind's format with the optimizer.

        Without ``dump_optimizer`` the bytes are the pickle MXNet 1.9.1 writes
        for the same states, so MXNet loads them. With it, the optimizer's
        settings and update counts are saved too (``set_states`` then replaces
        this updater's optimizer, as in MXNet) in rebind's own format: MXNet
        pickles its optimizer object, which only MXNet's classes can rebuild.
        """
        if not dump_optimizer:
            return mxnet_pickle_writer.dumps(self.states)
        return updater_states.dumps(self.states, self.optimizer)

    def set_states(self, states):
        """Restore states from ``get_states`` bytes or from an MXNet ``.states`` pickle.

        Loaded arrays sit on the CPU until the next update moves each to its
        weight's context. Anything else in the bytes raises ``FormatError``.
        """
        loaded, optimizer = updater_states.loads(states)
        self.states = loaded
        if optimizer is not None:
            self.optimizer = optimizer
        self.states_synced = dict.fromkeys(self.states, False)


def _check_weight(weight, index):
    if not isinstance(weight, NDArray):
        raise TypeError(f"updater: weight of index {index!r} must be an NDArray, got {weight!r}")


def get_updater(optimizer):
    """An ``Updater`` applying ``optimizer``, as kvstores and modules use it."""
    return Updater(optimizer)
