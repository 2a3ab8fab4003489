"""rebind's built-in plugins (optimizers, initializers, metrics, kvstores, training observers).

Each module registers its family through the same ``rebind_add_*`` hooks a
third-party package uses; ``rebind.registry.BUILTIN_PLUGINS`` lists them.
"""
