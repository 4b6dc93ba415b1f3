"""``%plan MODEL --devices N --device-memory 80GB``: the planner's table in a notebook."""

from __future__ import annotations

from IPython.core.magic import Magics, line_magic, magics_class

from skiff.grammar.plan import COMMAND, run

from .base import parse_line, usage_errors

__all__ = ["PlanMagics"]


@magics_class
class PlanMagics(Magics):
    @line_magic
    def plan(self, line: str = ""):
        """Plan how to train a model on a cluster; shows the best layouts with memory and time.

        ``%plan 70b --devices 64 --device-memory 80GB --nodes 8 -o p`` stores the plan in p.
        """
        ns = parse_line(COMMAND, line)
        with usage_errors():
            result = run(vars(ns))
        if ns.output:
            self.shell.user_ns[ns.output] = result
        if ns.json:
            import json

            print(json.dumps(result.to_json(), default=str))
            return None
        return result
