"""``%plan MODEL --devices N --device-memory 80GB``: the planner's table in a notebook."""

from __future__ import annotations

from IPython.core.magic import Magics, line_magic, magics_class

from skiff.grammar.plan import COMMAND, run, to_kwargs

from .base import parse_line, usage_errors

__all__ = ["PlanMagics"]


@magics_class
class PlanMagics(Magics):
    @line_magic
    def plan(self, line: str = ""):
        """Plan how to train a model on a cluster; shows the best layouts with memory and time.

        MODEL is a preset name or a model in the notebook (costed from its parameters and its
        config).

        ``%plan 70b --devices 64 --device-memory 80GB --nodes 8 -o p`` stores the plan in p.
        """
        ns = parse_line(COMMAND, line)
        if ns is None:  # --help
            return None
        obj = self.shell.user_ns.get(ns.model) if self.shell is not None else None
        with usage_errors():
            if obj is not None and hasattr(obj, "parameters"):  # a model in the notebook
                from skiff.kernels.train.plan import plan

                kwargs = to_kwargs({**vars(ns), "model": "gpt-mini"})
                result = plan(obj, **kwargs)
            else:
                result = run(vars(ns))
        if ns.output:
            self.shell.user_ns[ns.output] = result
        if ns.json:
            import json

            print(json.dumps(result.to_json(), default=str))
            return None
        return result
