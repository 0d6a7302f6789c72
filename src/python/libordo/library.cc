// libordo.so: the static library whole, for the Python extensions that
// share one runtime (CMakeLists.txt). A shared library needs a source.
