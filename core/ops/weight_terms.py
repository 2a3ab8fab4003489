"""A shared weight's gradient summed once over all its steps, not step by step.

An unrolled recurrent network applies its hidden-to-hidden projection (one
FullyConnected weight and bias) once per time step, each step depending on
the last, so the products cannot be batched in forward. In backward each
step's weight gradient would be ``grad_t^T . x_t``, a product over only a
batch of rows, added into the weight's running sum: ``T`` small products and
``T`` additions of a whole weight-sized array (for the LSTM LM's 2 x 200
cells on the CPU, two thirds of the recurrent projections' backward; on a
GPU, four launches a step).

``executor/optimize.py`` marks such steps (``OpContext.weight_grad_terms``: how many
share the weight). Their backward returns ``Terms`` for the weight and bias
instead of gradients: the step's output gradient and input. ``add_gradient``
(executor/codegen.py) joins the terms of one weight, copying them into two buffers
of all the steps' rows (so the steps' arrays are not kept); when all
``count`` have arrived, or when the argument's gradient is stored, they
become one product over every row, ``G^T . X`` (one column sum of ``G`` for
the bias). The data gradient is computed at each step as before.

The sums have the same terms in another order: values agree with the
step-by-step sums to float rounding. A single term gives the step's own
product, bit for bit.

On a GPU the terms are kept by reference and joined once, by one
concatenation, when their value is asked: copying each step's rows into the
buffers took two launches a step for a weight and one for a bias (about 200
of the 215 device-to-device copies of a batch of the LSTM LM, two layers of
35 steps, on an H200), each costing more host time than the device spends
on it. The device keeps the steps' arrays alive meanwhile (a few
hundred KiB for that network); nothing writes them after their step's
backward: they are its output gradient and its forward input.
"""

from rebind.backends.cupy_kernels import is_cupy_array

__all__ = ["Terms", "join", "value"]


class Terms:
    """Gradient terms of one weight (``sum G_t^T . X_t``) or bias (``G_t`` summed over rows).

    Made by a step's backward holding its one term by reference; the first
    join copies terms into buffers sized for ``count`` steps of as many rows.
    """

    __slots__ = (
        "xp", "count", "received", "rows", "capacity", "grads", "inputs", "buffered", "listed"
    )  # fmt: skip

    def __init__(self, xp, count, grad, data=None):
        """One step's term: its 2-D output gradient and, for a weight, its 2-D input."""
        self.xp, self.count, self.received, self.rows = xp, count, 1, grad.shape[0]
        self.capacity = count * self.rows  # rows of all ``count`` steps
        self.grads, self.inputs, self.buffered = grad, data, False
        self.listed = None  # on a GPU: (grads, inputs) of the terms joined, by reference

    def accepts(self, other):
        """Whether ``other`` (one step's term) joins these: same kind, shapes and room."""
        if other.buffered or other.listed is not None or other.count != self.count:
            return False
        pairs = ((self.grads, other.grads), (self.inputs, other.inputs))
        if not all(_alike(mine, theirs) for mine, theirs in pairs):
            return False
        return self.rows + other.rows <= self.capacity

    def take(self, other):
        """Join ``other``'s term: copied into the buffers (made on the first join), or listed."""
        if self.listed is not None or (not self.buffered and is_cupy_array(self.grads)):
            if self.listed is None:
                self.listed = ([self.grads], None if self.inputs is None else [self.inputs])
            self.listed[0].append(other.grads)
            if self.listed[1] is not None:
                self.listed[1].append(other.inputs)
            self.rows, self.received = self.rows + other.rows, self.received + 1
            return
        if not self.buffered:
            self.grads, self.inputs = (self._buffer(a) for a in (self.grads, self.inputs))
            self.buffered = True
        end = self.rows + other.rows
        self.grads[self.rows : end] = other.grads
        if self.inputs is not None:
            self.inputs[self.rows : end] = other.inputs
        self.rows, self.received = end, self.received + 1

    def _buffer(self, first):
        """Room for ``count`` terms of ``first``'s rows, ``first`` copied in (None: None)."""
        if first is None:
            return None
        buffer = self.xp.empty((self.count * self.rows, *first.shape[1:]), dtype=first.dtype)
        buffer[: self.rows] = first
        return buffer

    def value(self):
        """The sum of the terms received (a new array)."""
        if self.listed is not None:
            grads_list, inputs_list = self.listed
            grads = self.xp.concatenate(grads_list)
            inputs = None if inputs_list is None else self.xp.concatenate(inputs_list)
        else:
            grads = self.grads[: self.rows]
            inputs = None if self.inputs is None else self.inputs[: self.rows]
        if inputs is None:
            return grads.sum(axis=0)
        return self.xp.matmul(grads.T, inputs)


def value(grad):
    """``grad`` itself, or the sum of its terms."""
    return grad.value() if type(grad) is Terms else grad


def join(total, grad):
    """``total + grad`` when either is ``Terms`` (a Terms or an array); None otherwise.

    Terms of one weight are joined into the first one's buffers, and become
    their value once all ``count`` have arrived; anything else is summed as
    arrays.
    """
    total_terms, grad_terms = type(total) is Terms, type(grad) is Terms
    if not (total_terms or grad_terms):
        return None
    if total_terms and grad_terms and total.accepts(grad):
        total.take(grad)
        return total.value() if total.received == total.count else total
    return value(total) + value(grad)


def _alike(mine, theirs):
    """Whether two terms' arrays can share a buffer: both absent, or same columns and dtype."""
    if mine is None or theirs is None:
        return mine is theirs
    return mine.shape[1:] == theirs.shape[1:] and mine.dtype == theirs.dtype
