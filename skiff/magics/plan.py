"""``%plan MODEL --devices N --device-memory 80GB``: the planner's table in a notebook."""

from __future__ import annotations

from IPython.core.magic import Magics, line_magic, magics_class

from skiff.grammar.plan import COMMAND, run, to_kwargs

from .base import grammar_doc, parse_line, usage_errors

__all__ = ["PlanMagics"]


# what %plan? says after the usage
PLAN_NOTES = """MODEL may be a model in the notebook (costed from its parameters and config).
%plan 70b --devices 64 --device-memory 80GB --nodes 8 -o p stores the plan in p."""


@magics_class
class PlanMagics(Magics):
    @line_magic
    @grammar_doc(COMMAND, PLAN_NOTES)
    def plan(self, line: str = ""):
        ns = parse_line(COMMAND, line)
        if ns is None:  # --help
            return None
        obj = self.shell.user_ns.get(ns.model) if self.shell is not None else None
        with usage_errors(command="plan", line=line):
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
