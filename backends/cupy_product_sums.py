"""The recurrent products' sums of the LSTM and GRU step kernels, as CUDA source.

The step kernels that work out a layer's recurrent products themselves
(``cupy_layer_kernels``, ``cupy_gru_layer_kernels`` and their warp versions,
for the fused layers and the RNN operator) each sum, for a unit, one running
total a gate over the hidden units: forward the previous output times the
weight, backward the next step's gate gradients times the weight. Those loops
differ only in the number of gates, the gradient array's name and who walks
them (a unit's thread, or a warp's lanes): ``product_sums`` writes each.
Importing this module does not import CuPy.
"""

__all__ = ["product_sums"]


def _offset(gate, unit):
    """`` + gate * unit``, as a source term (nothing for gate 0)."""
    return "" if gate == 0 else f" + {unit}" if gate == 1 else f" + {gate} * {unit}"


def _across_the_warp(names):
    """Code summing each of ``names`` over a warp's lanes, every lane getting the sum
    (a butterfly of five exchanges)."""
    adds = "".join(
        f"        {name} += __shfl_xor_sync(0xffffffffu, {name}, mask);\n" for name in names
    )
    return f"    for (int mask = 16; mask > 0; mask >>= 1) {{\n{adds}    }}\n"


def product_sums(gates, backward, warp, next_gradients="d_gates_next"):
    """Code working out a unit's recurrent products, one running sum a gate.

    Forward, ``sum<g>``: ``h_prev . W^T`` at each of the unit's ``gates`` gates
    (``H`` terms). Backward, ``next<g>`` and their total ``from_next``: the next
    step's gate gradients (``next_gradients``, (N, gates * H)) times W at the unit,
    the gradient its output gets through the next step's projection (``M`` terms:
    ``H``, or 0 at the last step); a sum a gate, so that the additions do not all
    wait on one another.

    A unit's thread (``row``, ``j``) walks all the terms, reading W^T (forward) or
    W (backward) along a row: the threads of consecutive units read consecutive
    weights. A warp's lane (``unit_row``, ``unit_j``, ``lane``) walks the terms
    ``lane, lane + 32, ...``, reading the other matrix along its rows, and the
    lanes' sums meet by exchanges.
    """
    row, j = ("unit_row", "unit_j") if warp else ("row", "j")
    bound = "M" if backward else "H"
    start, step = ("lane", "k += 32") if warp else ("0", "++k")
    loop = f"long long k = {start}; k < {bound}; {step}"
    if backward:
        names = [f"next{g}" for g in range(gates)]
        setup = [f"const long long gk = {row} * {gates} * H + k;"]
        if warp:  # W^T (H, gates * H) along the unit's row
            setup.append(f"const long long w = {j} * {gates} * H + k;")
            weights = [f"weight_t[w{_offset(g, 'H')}]" for g in range(gates)]
        else:  # W (gates * H, H) down the unit's column
            setup.append(f"const long long w = k * H + {j};")
            weights = [f"weight[w{_offset(g, 'H * H')}]" for g in range(gates)]
        terms = [f"{next_gradients}[gk{_offset(g, 'H')}] * {w}" for g, w in enumerate(weights)]
    else:
        names = [f"sum{g}" for g in range(gates)]
        setup = [f"const T x = h_prev[{row} * H + k];"]
        if warp:  # W (gates * H, H) along the gates' rows
            setup.append(f"const long long w = {j} * H + k;")
            terms = [f"x * weight[w{_offset(g, 'H * H')}]" for g in range(gates)]
        else:  # W^T (H, gates * H) down the unit's columns
            setup.append(f"const long long w = k * {gates} * H + {j};")
            terms = [f"x * weight_t[w{_offset(g, 'H')}]" for g in range(gates)]
    code = ["\n", *(f"    T {name} = T(0);\n" for name in names), f"    for ({loop}) {{\n"]
    code += [f"        {line}\n" for line in setup]
    code += [f"        {name} += {term};\n" for name, term in zip(names, terms, strict=True)]
    code.append("    }\n")
    if warp:
        code.append(_across_the_warp(names))
    if backward:
        pairs = [f"({a} + {b})" for a, b in zip(names[0::2], names[1::2], strict=False)]
        total = " + ".join(pairs + names[len(pairs) * 2 :])
        code.append(f"    const T from_next = {total};\n")
    return "".join(code)
