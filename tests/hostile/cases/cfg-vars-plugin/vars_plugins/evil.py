"""A vars plugin an untrusted ansible.cfg enables: importing it leaves the canary."""
import os

from ansible.plugins.vars import BaseVarsPlugin

open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "CANARY"), "w").close()


class VarsModule(BaseVarsPlugin):
    REQUIRES_ENABLED = True

    def get_vars(self, loader, path, entities, cache=True):
        return {}
