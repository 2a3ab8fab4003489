"""Array backends shipped with rebind: NumPy for ``cpu``, CuPy for ``gpu``.

Each module here is also a plugin that registers its backend through the
``rebind_add_backends`` hook, exactly as a third-party backend would.
"""
