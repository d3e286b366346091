"""Config and workspace: where data lives, benchmark catalogs, plug-in registries, prices."""
