"""``mx.mod`` / ``mx.module``: the module family and its lifecycle."""
