"""rebind-extras: an example third-party plugin package for rebind (see plugin.py)."""
