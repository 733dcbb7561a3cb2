"""The commands of the ``structkit`` command line, one module per group over ``_util``;
``structkit.cli`` assembles them and runs the process."""
