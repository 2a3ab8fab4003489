"""The Gluon model zoo of MXNet 1.9.1, exported by MXNet, run through rebind's Module."""
