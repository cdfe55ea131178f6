"""Sub-commands of the `lazygen` CLI; each module exposes HELP, add_arguments and run."""
