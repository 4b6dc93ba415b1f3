"""Each kind's few lines for a terminal: the key figures of a result, rounded for people."""

from skiff.kinds import KINDS


def test_solve_summary():
    lines = KINDS["solve"].summary({
        "problem": "poisson", "shape": [64, 64], "method": "cg", "precond": "mg",
        "device": "cpu", "iterations": 5, "converged": True, "status": "converged",
        "relative_residual": 4.836554490610135e-10, "time_s": 0.5531234, "setup_time_s": 0.27,
        "error": 0.00020070086192836012, "residuals": [1.0, 0.1, 0.01]})
    assert lines == ["poisson 64x64: cg + mg on cpu",
                     "converged in 5 iterations, |r|/|b| = 4.84e-10",
                     "solve 0.553 s, setup 0.27 s",
                     "max error against the exact solution 2.01e-04"]


def test_solve_summary_says_when_it_did_not_converge():
    lines = KINDS["solve"].summary({"converged": False, "status": "maxiter: 10 iterations"})
    assert "not converged: maxiter: 10 iterations" in lines


def test_train_summary():
    lines = KINDS["train"].summary({
        "steps": 1200, "final_loss": 1.234567, "val_history": [{"val_loss": 1.456789}],
        "time_s": 62.5, "tokens_per_s": 12345.6, "peak_memory_bytes": 3.991e8,
        "checkpoint": "/runs/x/checkpoints/step-1200.npz", "history": [{"loss": 1.0}] * 99})
    assert lines[0] == "1,200 steps, final loss 1.23, held-out loss 1.46"
    assert lines[1] == "62.5 s, 12,346 tokens/s, peak memory 380.6 MiB"
    assert lines[2] == "checkpoint: /runs/x/checkpoints/step-1200.npz"


def test_train_summary_names_the_saved_model_and_adapter():
    """A checkpoint's model fine-tuned with LoRA: the terminal names both folders it wrote
    (they were only in --json and events.jsonl)."""
    lines = KINDS["train"].summary({"steps": 4, "final_loss": 2.0, "time_s": 1.0,
                                    "hf_model": "/runs/y/hf-model",
                                    "hf_adapter": "/runs/y/hf-adapter"})
    assert "saved (Hugging Face layout): /runs/y/hf-model" in lines
    assert "adapter (peft layout): /runs/y/hf-adapter" in lines
    assert not any("adapter" in line for line in KINDS["train"].summary({"steps": 4}))


def test_ocr_summary():
    lines = KINDS["ocr"].summary({"images": 12, "errors": 2, "lines": 345, "seconds": 3.4567,
                                  "images_per_s": 3.4716, "out": "/tmp/out.jsonl",
                                  "device": "cpu", "model": "ch", "results": []})
    assert lines == ["10 of 12 images read, 345 lines of text (2 could not be read)",
                     "3.46 s (3.47 images/s) on cpu with ch", "text: /tmp/out.jsonl"]


def test_default_summary_keeps_plain_figures():
    lines = KINDS["demo"].summary({"steps": 3, "value": 0.123456, "history": [1, 2]})
    assert lines == ["steps: 3", "value: 0.123"]


def test_train_summary_of_an_early_stopped_run_says_whose_weights_it_kept():
    lines = KINDS["train"].summary({
        "steps": 376, "final_loss": 0.00142, "val_history": [{"val_loss": 0.00184}],
        "time_s": 0.8, "samples_per_s": 13731, "checkpoint": "/runs/x/checkpoints/s.npz",
        "stopped": "early stopping: no better val_loss in 3 validations", "best_step": 352,
        "best_val_loss": 0.001761})
    assert "stopped early: no better val_loss in 3 validations" in lines
    assert "weights of step 352 kept (best held-out loss 0.00176)" in lines
    assert not any(line.startswith("to continue") for line in lines)


def test_ocr_rec_summary_names_the_model_its_accuracy_the_rows_left_out_and_forgetting():
    errors = [f"labels.txt line {k}: image 'x{k}.png' not found" for k in range(7)]
    lines = KINDS["train"].summary({
        "onnx": "/runs/r/model/rec.onnx", "dict": "/runs/r/model/rec_dict.txt", "rows": 48,
        "train_rows": 44, "val_rows": 4, "errors": errors, "added_chars": [], "steps": 8,
        "seconds": 13.61, "final_loss": 0.2776, "val_before": 0.8333, "val_after": 0.875,
        "general_before": 0.9924, "general_after": 0.9766, "model_set": None})
    assert lines[0] == "8 steps, final loss 0.278, 44 crops trained on, 4 held out"
    assert lines[1] == "held-out crops: 83.3% -> 87.5% of characters read; general text: " \
                       "99.2% -> 97.7%"
    assert lines[2].startswith("warning: the tuned model reads general text 1.6 points worse")
    assert "7 label row(s) left out:" in lines and "  labels.txt line 0: image 'x0.png' " \
                                                     "not found" in lines
    assert "  ... and 2 more (the result's 'errors')" in lines
    assert "model: /runs/r/model/rec.onnx" in lines
    assert "read with it: %ocr IMAGES --rec-model /runs/r/model/rec.onnx" in lines
    assert lines[-1] == "13.6 s"
    named = KINDS["train"].summary({"onnx": "/m/rec.onnx", "model_set": "meters", "steps": 1,
                                    "general_before": 0.99, "general_after": 0.99})
    assert "read with it: %ocr IMAGES --lang meters" in named
    assert not any(x.startswith("warning") for x in named)


def test_an_early_stopped_runs_kept_weights_carry_their_own_score():
    """The first line scores the last validation (weights thrown away); the model holds the
    best step's, so their accuracy is said beside them (before: only the last run's 90.0%)."""
    lines = KINDS["train"].summary({
        "steps": 21, "final_loss": 0.04, "time_s": 0.5,
        "val_history": [{"step": 18, "val_loss": 0.105, "val_accuracy": 1.0},
                        {"step": 21, "val_loss": 0.159, "val_accuracy": 0.9}],
        "stopped": "early stopping: no better val_loss in 3 validations", "best_step": 18,
        "best_val_loss": 0.105})
    assert "weights of step 18 kept (best held-out loss 0.105, accuracy 100.0%)" in lines

