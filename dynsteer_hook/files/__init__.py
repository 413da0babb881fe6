"""The package's files on disk: inputs read whole-or-not-at-all into one sentence per problem
(``inputs``), blueprint files (``blueprints``) and the store of compiled ones (``store``), event
files read and written (``events``), and output files that survive faults (``outputs``)."""
