"""Reading an image's processed twin: the part :meth:`.reading.LineReading._read_denoised`
(denoised copies of a noisy image) and :func:`.glare.read_glare` (a glare photo with its
contrast boosted) share. Each detects and reads the twins whole (detection, direction,
recognition) as :class:`.pipeline.OcrPipeline` reads an image, groups the twins' lines by the
twin they belong to, and charges the second reading's time to the first image; how a twin's
lines are merged with the first reading's stays the caller's (the surest copy whole, or line
by line where a twin's line holds the first's)."""

from __future__ import annotations

# the stages whose time a twin's reading adds to its image's own
STAGES = ("det", "cls", "rec")


def lines_by_image(owners) -> dict[int, list[int]]:
    """The line indices ``k`` of each image position ``owners[k][0]`` names, in order."""
    lines: dict[int, list[int]] = {}
    for k, (pos, _) in enumerate(owners):
        lines.setdefault(pos, []).append(k)
    return lines


def read_twins(pipe, twins):
    """Detect and read ``twins`` (:class:`.item.Item` s) with ``pipe``; returns its
    ``_read``'s crops, owners, texts and flips, and the lines of each twin
    (:func:`lines_by_image`)."""
    pipe.detect(twins)
    crops, owners, texts, flipped = pipe._read(twins)
    return crops, owners, texts, flipped, lines_by_image(owners)


def charge_time(it, twin, stages=STAGES) -> None:
    """Add ``twin``'s time in ``stages`` to ``it``'s (the second reading is the image's)."""
    for stage, v in twin.timings.items():
        if stage in stages:
            it.timings[stage] = it.timings.get(stage, 0.0) + v
