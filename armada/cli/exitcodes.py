"""armadactl's name and exit codes, in a module that imports nothing (the command line is
built from it before any command module is loaded)."""

PROG = "armadactl"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
