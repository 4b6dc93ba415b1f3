"""The Train form's plan is cleared when the model or the ranks change (round 44)."""

from skiff.widgets.panels import train_form


def test_plan_cleared_when_model_or_ranks_change():
    form = train_form()
    form.set(model="gpt-mini", np=2)
    form.plan()
    plan = next(c for c in form.children if "skiff-plan" in c._dom_classes)
    assert "Plan for gpt-mini" in plan.value
    form.set(model="mlp")
    assert "Plan for gpt-mini" not in plan.value
    form.plan()
    assert "Plan for MLP" in plan.value
    form.set(np=1)
    assert plan.value == ""
