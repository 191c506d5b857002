"""The lab's ``loadguard`` commands: thin click adapters over ``loadguard.lab``.

The product's CLI loads them (the ``loadguard.commands`` entry points of pyproject.toml).
Importing one of them first imports that CLI, so its group is complete and each command
module is loaded once, by the group, whichever is imported first.
"""

import loadguard.cli  # noqa: F401  (the group that loads these commands; see above)
